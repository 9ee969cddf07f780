// The explorer page's glue: it draws what the embedded data holds (docs/explorer.md, "The data in the
// page"). The layout is Graphviz's SVG, pan and zoom are d3's, the charts are Chart.js's; this file only
// connects them: it colours the edges for the chosen step, fills the node panel, folds clusters, and
// feeds the charts. It computes no statistic of its own: every number shown comes from the data.
(function () {
  'use strict';

  // ---- errors go into the DOM, where the browser test reads them ----
  const errorBox = document.getElementById('js-errors');
  function reportError(text) {
    errorBox.hidden = false;
    errorBox.textContent += 'JSERROR ' + text + '\n';
  }
  window.onerror = function (message, source, line, column) {
    reportError(message + ' at ' + line + ':' + column);
  };
  window.addEventListener('unhandledrejection', function (e) { reportError('unhandled rejection: ' + e.reason); });

  const DATA = JSON.parse(document.getElementById('gradscope-data').textContent);
  const $ = function (id) { return document.getElementById(id); };

  // ---- numbers as the page prints them ----
  // %.Ng: N significant digits, no trailing zeros ("0.1235", "1.2e-05", "3"); "-" for a missing number.
  function fmt(x, digits) {
    if (x === null || x === undefined || !isFinite(x)) return '-';
    const a = Math.abs(x);
    let s = a !== 0 && (a < 1e-3 || a >= 1e6) ? Number(x).toExponential((digits || 4) - 1) : Number(x).toPrecision(digits || 4);
    if (s.indexOf('e') >= 0) {
      let parts = s.split('e');
      let m = parts[0].indexOf('.') >= 0 ? parts[0].replace(/0+$/, '').replace(/\.$/, '') : parts[0];
      return m + 'e' + parts[1];
    }
    if (s.indexOf('.') >= 0) s = s.replace(/0+$/, '').replace(/\.$/, '');
    return s;
  }
  const fmt3 = function (x) { return fmt(x, 3); };  // edge labels, as in to_dot's pictures
  function escapeHtml(s) {
    return String(s).replace(/[&<>"]/g, function (c) { return { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' }[c]; });
  }
  // A statistics array: [size, nonfinite, norm, mean, sd, min, max, counts...]
  function stats(a) {
    return a ? { n: a[0], nonfinite: a[1], norm: a[2], mean: a[3], sd: a[4], min: a[5], max: a[6], counts: a.slice(7) } : null;
  }

  // ---- the colour of a gradient norm: the scale of to_dot's pictures ----
  // log10 |g| mapped onto hue 0.66 (blue, smallest) .. 1.0 (red, largest) through violet, spanning at most
  // 4 decades below the largest norm (smaller ones are all blue).
  const DECADES = 4;
  function hsvToRgb(h, s, v) {
    const i = Math.floor(h * 6), f = h * 6 - i, p = v * (1 - s), q = v * (1 - f * s), t = v * (1 - (1 - f) * s);
    const rgb = [[v, t, p], [q, v, p], [p, v, t], [p, q, v], [t, p, v], [v, p, q]][((i % 6) + 6) % 6];
    return d3.rgb(Math.round(rgb[0] * 255), Math.round(rgb[1] * 255), Math.round(rgb[2] * 255)).toString();
  }
  function makeScale(norms) {
    let lo = Infinity, hi = -Infinity;
    norms.forEach(function (n) {
      if (n !== null && n > 0) { const l = Math.log10(n); lo = Math.min(lo, l); hi = Math.max(hi, l); }
    });
    const any = hi > -Infinity;
    const low = any ? Math.max(lo, hi - DECADES) : 0;
    return {
      any: any, lo: lo, hi: hi, low: low,
      colour: function (n) {
        if (n === null || n === undefined) return '#bbbbbb';
        const t = n <= 0 || hi <= low ? (n <= 0 ? 0 : 1) : Math.max(0, (Math.log10(n) - low) / (hi - low));
        return hsvToRgb((0.66 + 0.34 * t) % 1, 0.9, 0.85);
      },
      value: function (t) { return Math.pow(10, low + t * (hi - low)); }
    };
  }

  // ---- state ----
  const state = {
    a: 0, b: DATA.runs.length > 1 ? 1 : -1,
    snap: 0,          // index into run A's snapshots
    selected: -1,     // tape index of the node in the panel
    folded: {},       // scope -> true
    scaleMode: 'step'
  };
  const view = { svg: null, top: null, viewport: null, zoom: null, nodes: {}, edges: [], clusters: {}, textLines: {} };
  const charts = [];  // {id, chart}
  let histCharts = [];

  function runA() { return DATA.runs[state.a]; }
  function graphA() { return runA() ? runA().graph : null; }
  function snapshot() { const g = graphA(); return g && g.snapshots.length ? g.snapshots[state.snap] : null; }
  function nodeName(g, i) {
    const n = g.nodes[i];
    return '#' + i + ' ' + n.op + (n.label ? ' ' + n.label : '');
  }
  function seriesValueAt(run, chartId, name, step) {
    const s = run.series.find(function (x) { return x.chart === chartId && x.name === name; });
    if (!s) return null;
    const k = s.steps.indexOf(step);
    return k >= 0 ? s.values[k] : null;
  }

  // ---- run pickers and facts ----
  function fillRunPickers() {
    const a = $('run-a'), b = $('run-b');
    a.innerHTML = ''; b.innerHTML = '';
    DATA.runs.forEach(function (r, i) {
      a.add(new Option(r.name, i));
      b.add(new Option(r.name, i));
    });
    b.add(new Option('(none)', -1));
    a.value = state.a; b.value = state.b;
    a.onchange = function () { state.a = +a.value; state.snap = 0; drawGraph(); drawCharts(); drawFacts(); };
    b.onchange = function () { state.b = +b.value; drawCharts(); drawFacts(); };
  }
  function drawFacts() {
    const runs = [state.a, state.b].filter(function (i, k) { return i >= 0 && (k === 0 || i !== state.a); });
    const keys = [];
    runs.forEach(function (i) { DATA.runs[i].facts.forEach(function (f) { if (keys.indexOf(f[0]) < 0) keys.push(f[0]); }); });
    let html = '<table><tr><th></th>' + runs.map(function (i, k) {
      return '<th>' + (k === 0 ? 'A: ' : 'B: ') + escapeHtml(DATA.runs[i].name) + '</th>';
    }).join('') + '</tr>';
    keys.forEach(function (key) {
      html += '<tr><th>' + escapeHtml(key) + '</th>' + runs.map(function (i) {
        const f = DATA.runs[i].facts.find(function (x) { return x[0] === key; });
        return '<td>' + (f ? escapeHtml(f[1]) : '') + '</td>';
      }).join('') + '</tr>';
    });
    $('facts').innerHTML = html + '</table>';
  }

  // ---- the graph ----
  function drawGraph() {
    const g = graphA(), box = $('graph'), note = $('graph-note');
    box.innerHTML = '';
    view.nodes = {}; view.edges = []; view.clusters = {}; view.textLines = {};
    state.folded = {};
    if (!g) {
      note.hidden = false;
      note.textContent = 'No graph for run "' + runA().name + '": ' + (runA().graph_note || 'none was recorded.') +
        ' The charts below cover every run.';
      $('graph-wrap').style.display = 'none';
      $('legend').innerHTML = '';
      setupScrubber();
      return;
    }
    note.hidden = true;
    $('graph-wrap').style.display = '';
    box.innerHTML = DATA.svgs[g.svg];
    const svg = box.querySelector('svg');
    svg.removeAttribute('width'); svg.removeAttribute('height');
    svg.setAttribute('preserveAspectRatio', 'xMidYMid meet');
    view.svg = svg;
    view.top = svg.querySelector('g.graph');
    // Pan and zoom (d3): a viewport group around Graphviz's top group.
    const viewport = document.createElementNS('http://www.w3.org/2000/svg', 'g');
    viewport.setAttribute('class', 'viewport');
    svg.insertBefore(viewport, view.top);
    viewport.appendChild(view.top);
    view.viewport = viewport;
    view.zoom = d3.behavior.zoom().scaleExtent([0.2, 40]).on('zoom', function () {
      viewport.setAttribute('transform', 'translate(' + d3.event.translate + ')scale(' + d3.event.scale + ')');
    });
    d3.select(svg).call(view.zoom).on('dblclick.zoom', null);

    g.nodes.forEach(function (n) {
      const el = svg.getElementById ? svg.getElementById('n' + n.i) : document.getElementById('n' + n.i);
      if (!el) return;
      view.nodes[n.i] = el;
      view.textLines[n.i] = Array.prototype.slice.call(el.querySelectorAll('text'));
      el.addEventListener('click', function (ev) { ev.stopPropagation(); select(n.i); });
    });
    g.edges.forEach(function (e, k) {
      const el = document.getElementById(e.id);
      view.edges[k] = el ? {
        el: el, paths: el.querySelectorAll('path'), heads: el.querySelectorAll('polygon'), text: el.querySelector('text')
      } : null;
    });
    g.clusters.forEach(function (c) {
      const el = document.getElementById('cluster:' + c.scope);
      if (!el) return;
      view.clusters[c.scope] = el;
      const label = el.querySelector('text');
      if (label) {
        label.addEventListener('click', function (ev) { ev.stopPropagation(); toggleFold(c.scope); });
        const title = document.createElementNS('http://www.w3.org/2000/svg', 'title');
        title.textContent = 'click to fold ' + c.scope;
        label.appendChild(title);
      }
    });
    setupScrubber();
    if (state.selected >= g.nodes.length) state.selected = -1;
    fit();
  }

  function fit() {
    if (!view.zoom) return;
    view.zoom.translate([0, 0]).scale(1);
    view.viewport.setAttribute('transform', '');
  }
  // Centres the view on node i at a readable zoom.
  function centreOn(i) {
    const el = view.nodes[i];
    if (!el || !view.svg) return;
    const vb = view.svg.viewBox.baseVal, bb = el.getBBox();
    const m = view.top.transform.baseVal.consolidate();
    const cx = bb.x + bb.width / 2 + (m ? m.matrix.e : 0), cy = bb.y + bb.height / 2 + (m ? m.matrix.f : 0);
    const s = Math.max(view.zoom.scale(), Math.min(6, vb.width / 900));
    const t = [vb.x + vb.width / 2 - cx * s, vb.y + vb.height / 2 - cy * s];
    view.zoom.translate(t).scale(s);
    view.viewport.setAttribute('transform', 'translate(' + t + ')scale(' + s + ')');
  }

  function setupScrubber() {
    const g = graphA(), range = $('step');
    const n = g ? g.snapshots.length : 0;
    range.max = Math.max(0, n - 1);
    range.value = state.snap;
    range.disabled = n <= 1;
    range.oninput = function () { state.snap = +range.value; showStep(); };
    $('scale-mode').onchange = function () { state.scaleMode = $('scale-mode').value; showStep(); };
    showStep();
  }

  function currentScale() {
    const g = graphA(), s = snapshot();
    if (state.scaleMode === 'run') {
      let all = [];
      g.snapshots.forEach(function (x) { all = all.concat(x.edge_norm); });
      return makeScale(all);
    }
    return makeScale(s.edge_norm);
  }

  // Recolours and relabels the graph, the folded cards, the panel and the charts' step marker.
  function showStep() {
    const g = graphA(), s = snapshot();
    $('step-label').textContent = s ? s.step : '-';
    $('step-info').textContent = s ? 'snapshot ' + (state.snap + 1) + ' of ' + g.snapshots.length +
      ' · loss ' + fmt(s.loss) + ' at this step' : '';
    if (s) {
      const scale = currentScale();
      view.scale = scale;
      g.edges.forEach(function (e, k) {
        const v = view.edges[k];
        if (!v) return;
        const n = s.edge_norm[k], c = scale.colour(n);
        v.paths.forEach(function (p) { p.setAttribute('stroke', c); });
        v.heads.forEach(function (p) { p.setAttribute('stroke', c); p.setAttribute('fill', c); });
        if (v.text) {
          v.text.setAttribute('fill', c);
          const prefix = e.path === 'skip' || e.path === 'branch' ? e.path + ' ' : '';
          v.text.textContent = n === null ? '' : prefix + fmt3(n);
        }
      });
      g.nodes.forEach(function (n) {
        const lines = view.textLines[n.i];
        if (!lines) return;
        const grad = stats(s.grad[n.i]);
        lines.forEach(function (t) {
          const text = t.textContent;
          if (text.indexOf('|g| ') === 0 && grad) t.textContent = '|g| ' + fmt3(grad.norm);
          if (text.indexOf('skip ') === 0 && n.fork >= 0) {
            const f = s.forks[n.fork];
            t.textContent = 'skip ' + fmt3(f[0]) + ' | branch ' + fmt3(f[1]);
          }
        });
      });
      drawLegend(scale);
      Object.keys(state.folded).forEach(function (scope) { drawCard(scope); });
    }
    if (state.selected >= 0) drawPanel();
    charts.forEach(function (c) { c.chart.update('none'); });
  }

  function drawLegend(scale) {
    const stops = [0, 0.25, 0.5, 0.75, 1].map(function (t) { return scale.colour(scale.value(t)) + ' ' + (t * 100) + '%'; });
    const lowText = scale.any ? (scale.lo < scale.low ? '<= ' : '') + fmt3(scale.value(0)) : '-';
    $('legend').innerHTML =
      '<span>|g| along an edge: <span class="bar" style="background:linear-gradient(to right,' + stops.join(',') + ')"></span> ' +
      lowText + ' … ' + (scale.any ? fmt3(scale.value(1)) : '-') +
      (state.scaleMode === 'run' ? ' (all steps of the run)' : ' (this step)') + '; grey: no gradient</span>' +
      '<span><b>bold</b>: the skip (identity) path into a residual add</span>' +
      '<span>dashed: the branch, from the stream into the sublayer and back into the add</span>' +
      '<span><span class="tag" style="background:#fff2b3">yellow</span> the residual stream; "skip a | branch b": the two parts of its gradient</span>' +
      '<span>an edge\'s number: the norm of the gradient that the op sent back into that input</span>';
  }

  // ---- folding a cluster ----
  function inside(scope, s) { return s === scope || s.indexOf(scope + '.') === 0; }
  function toggleFold(scope) {
    if (state.folded[scope]) unfold(scope); else fold(scope);
  }
  function fold(scope) {
    const g = graphA();
    if (!view.clusters[scope]) return;
    Object.keys(state.folded).forEach(function (s) { if (inside(scope, s) && s !== scope) unfold(s); });
    state.folded[scope] = true;
    setFoldedVisibility();
    drawCard(scope);
  }
  function unfold(scope) {
    delete state.folded[scope];
    const card = cardOf(scope);
    if (card) card.parentNode.removeChild(card);
    setFoldedVisibility();
  }
  function cardOf(scope) {
    return view.top ? Array.prototype.find.call(view.top.querySelectorAll('g.fold-card'), function (c) {
      return c.getAttribute('data-scope') === scope;
    }) : null;
  }
  // Hides every node, edge and nested cluster inside a folded cluster; edges that cross its border stay
  // and end under its card.
  function setFoldedVisibility() {
    const g = graphA(), folded = Object.keys(state.folded);
    const hidden = function (scope) { return folded.some(function (f) { return inside(f, scope); }); };
    g.nodes.forEach(function (n) { if (view.nodes[n.i]) view.nodes[n.i].style.display = hidden(n.scope) ? 'none' : ''; });
    g.edges.forEach(function (e, k) {
      if (!view.edges[k]) return;
      const a = g.nodes[e.from].scope, b = g.nodes[e.to].scope;
      const inner = folded.some(function (f) { return inside(f, a) && inside(f, b); });
      view.edges[k].el.style.display = inner ? 'none' : '';
    });
    Object.keys(view.clusters).forEach(function (scope) {
      const inner = folded.some(function (f) { return scope !== f && inside(f, scope); });
      view.clusters[scope].style.display = inner ? 'none' : '';
    });
  }
  // The card of a folded cluster: its residual forks' skip and branch gradient norms at this step.
  function cardLines(scope) {
    const g = graphA(), s = snapshot(), c = g.clusters.find(function (x) { return x.scope === scope; });
    const lines = [scope + ' (folded; click to unfold)'];
    c.forks.forEach(function (f) {
      const fork = g.forks[f], at = g.nodes[fork.at];
      lines.push('at ' + (at.label || '#' + at.i) + ' → ' + fork.branch + ':');
      lines.push('   skip ' + fmt(s.forks[f][0]) + ' | branch ' + fmt(s.forks[f][1]));
    });
    if (!c.forks.length) lines.push('no residual connection inside');
    const gw = seriesValueAt(runA(), 'grad_norm', scope, s.step);
    if (gw !== null) lines.push('|dL/dW| of its parameters ' + fmt(gw));
    return lines;
  }
  function drawCard(scope) {
    let card = cardOf(scope);
    const el = view.clusters[scope];
    if (!el) return;
    if (!card) {
      card = document.createElementNS('http://www.w3.org/2000/svg', 'g');
      card.setAttribute('class', 'fold-card');
      card.setAttribute('data-scope', scope);
      card.addEventListener('click', function (ev) { ev.stopPropagation(); unfold(scope); });
      view.top.appendChild(card);  // last: drawn over the edges that end inside
    }
    const bb = el.getBBox(), lines = cardLines(scope);
    // 13 px on screen at the zoom of the moment, if the lines fit the cluster's box
    const ctm = view.top.getScreenCTM(), perPixel = ctm && ctm.a > 0 ? 1 / ctm.a : 1;
    const size = Math.min(13 * perPixel, bb.width / 22, bb.height / (lines.length * 1.5 + 1));
    card.innerHTML = '';
    const rect = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
    [['x', bb.x], ['y', bb.y], ['width', bb.width], ['height', bb.height], ['rx', 10]].forEach(function (a) { rect.setAttribute(a[0], a[1]); });
    // Tinted by the edge colour of the largest gradient part at its forks: a block gone dark is blue.
    const g = graphA(), s = snapshot(), c = g.clusters.find(function (x) { return x.scope === scope; });
    let top = null;
    c.forks.forEach(function (f) { [s.forks[f][0], s.forks[f][1]].forEach(function (v) { if (v !== null && (top === null || v > top)) top = v; }); });
    if (top !== null && view.scale) {
      const colour = view.scale.colour(top);
      rect.style.fill = d3.interpolateRgb('#ffffff', colour)(0.28);
      rect.style.stroke = colour;
      rect.style.strokeWidth = '3px';
      rect.style.vectorEffect = 'non-scaling-stroke';
    }
    card.appendChild(rect);
    lines.forEach(function (line, k) {
      const t = document.createElementNS('http://www.w3.org/2000/svg', 'text');
      t.setAttribute('x', bb.x + size);
      t.setAttribute('y', bb.y + size * (1.8 + 1.5 * k));
      t.setAttribute('font-size', size);
      t.setAttribute('font-family', 'Helvetica, Arial, sans-serif');
      if (k === 0) t.setAttribute('font-weight', 'bold');
      t.setAttribute('xml:space', 'preserve');
      t.textContent = line;
      card.appendChild(t);
    });
  }

  // ---- the node panel ----
  function select(i) {
    state.selected = i;
    Object.keys(view.nodes).forEach(function (k) { view.nodes[k].classList.remove('selected'); });
    if (view.nodes[i]) view.nodes[i].classList.add('selected');
    drawPanel();
  }
  function statsRows(st) {
    if (!st) return '<p class="muted">none: no gradient reached this entry (it needs none, or is not on a path from the loss)</p>';
    const row = function (k, name, v) { return '<tr><th>' + name + '</th><td class="num" data-k="' + k + '">' + v + '</td></tr>'; };
    return '<table>' + row('n', 'elements', st.n) + row('norm', 'norm sqrt(sum x²)', fmt(st.norm)) +
      row('mean', 'mean', fmt(st.mean)) + row('sd', 'sd', fmt(st.sd)) + row('min', 'min', fmt(st.min)) +
      row('max', 'max', fmt(st.max)) + (st.nonfinite ? row('nonfinite', 'NaN or Inf', st.nonfinite) : '') + '</table>';
  }
  function link(g, i) { return '<a data-node="' + i + '">' + escapeHtml(nodeName(g, i)) + '</a>'; }
  function drawPanel() {
    const g = graphA(), s = snapshot(), i = state.selected, panel = $('panel');
    histCharts.forEach(function (c) { c.destroy(); });
    histCharts = [];
    if (!g || i < 0 || !s) return;
    const n = g.nodes[i], value = stats(s.value[i]), grad = stats(s.grad[i]);
    let html = '<h3 data-k="title">' + escapeHtml(nodeName(g, i)) + '</h3><table>' +
      '<tr><th>tape index</th><td data-k="index">#' + n.i + '</td></tr>' +
      '<tr><th>op</th><td data-k="op">' + escapeHtml(n.op) + '</td></tr>' +
      '<tr><th>label</th><td>' + escapeHtml(n.label || '-') + '</td></tr>' +
      '<tr><th>module</th><td>' + escapeHtml(n.scope || '(top level)') + '</td></tr>' +
      '<tr><th>call site</th><td>' + escapeHtml(n.site) + '</td></tr>' +
      '<tr><th>shape</th><td data-k="shape">(' + n.shape.join(', ') + (n.shape.length === 1 ? ',' : '') + ')</td></tr>' +
      '<tr><th>at step</th><td>' + s.step + '</td></tr></table>';
    html += '<h4>value</h4><div data-k="value">' + statsRows(value) + '</div><div class="hist"><canvas id="hist-value"></canvas></div>';
    html += '<h4>gradient dL/d(value)</h4><div data-k="grad">' + statsRows(grad) + '</div>' +
      (grad ? '<div class="hist"><canvas id="hist-grad"></canvas></div>' : '');
    if (n.fork >= 0) {
      const f = s.forks[n.fork];
      html += '<h4>a residual fork: its gradient in two parts</h4><table>' +
        '<tr><th>skip part (identity path)</th><td class="num" data-k="fork-skip">' + fmt(f[0]) + '</td><td>' + f[2] + ' term(s)</td></tr>' +
        '<tr><th>branch part (through ' + escapeHtml(g.forks[n.fork].branch) + ')</th><td class="num" data-k="fork-branch">' + fmt(f[1]) +
        '</td><td>' + f[3] + ' term(s)</td></tr></table>';
    }
    // Contributions: what each consumer sent back into this entry along its edge.
    const out = [];
    g.edges.forEach(function (e, k) { if (e.from === i && s.edge_norm[k] !== null) out.push(k); });
    html += '<h4>contributions summed into its gradient</h4>';
    if (!out.length) {
      html += '<p class="muted">' + (grad ? 'none: this is the root of backward (its gradient is the seed)' : 'none') + '</p>';
    } else {
      html += '<table data-k="contributions"><tr><th>sent by</th><th>path</th><th class="num">|c|</th><th class="num" title="<c, g> / |g|², the part of |g|² along c; the shares sum to 1">share</th></tr>';
      out.forEach(function (k) {
        const e = g.edges[k];
        html += '<tr data-edge="' + k + '"><td>' + link(g, e.to) + (g.nodes[e.to].inputs.length > 1 ? ' (input ' + e.k + ')' : '') +
          '</td><td><span class="tag ' + e.path + '">' + e.path + '</span></td><td class="num" data-k="c-norm">' + fmt(s.edge_norm[k]) +
          '</td><td class="num">' + fmt(s.edge_share[k], 3) + '</td></tr>';
      });
      html += '</table><p class="muted">c: the gradient the op sent back; their sum is this entry\'s gradient. share = &lt;c, g&gt; / |g|².</p>';
    }
    html += '<h4>inputs</h4>' + (n.inputs.length ? '<table>' + n.inputs.map(function (j, k) {
      const e = g.edges.findIndex(function (x) { return x.to === i && x.k === k; });
      return '<tr><td>' + link(g, j) + '</td><td><span class="tag ' + g.edges[e].path + '">' + g.edges[e].path + '</span></td>' +
        '<td class="num" title="the gradient this op sent back into that input">' + fmt(s.edge_norm[e]) + '</td></tr>';
    }).join('') + '</table>' : '<p class="muted">none: a leaf</p>');
    html += '<h4>consumers (ops that read it)</h4>' + (n.consumers.length ? n.consumers.map(function (j) { return link(g, j); }).join('<br>') : '<p class="muted">none</p>');
    panel.innerHTML = html;
    panel.querySelectorAll('a[data-node]').forEach(function (a) {
      a.addEventListener('click', function () { const j = +a.getAttribute('data-node'); select(j); centreOn(j); });
    });
    if (value && value.counts.length) histCharts.push(histogram('hist-value', value, 'value'));
    if (grad && grad.counts.length) histCharts.push(histogram('hist-grad', grad, 'gradient'));
  }
  function histogram(canvas, st, what) {
    const bins = st.counts.length, w = (st.max - st.min) / bins;
    const labels = st.counts.map(function (_, k) { return fmt3(st.min + (k + 0.5) * w); });
    return new Chart($(canvas), {
      type: 'bar',
      data: { labels: labels, datasets: [{ label: what, data: st.counts, backgroundColor: what === 'value' ? '#90a4ae' : '#ef8a62', barPercentage: 1, categoryPercentage: 1 }] },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        plugins: { legend: { display: false }, title: { display: true, text: what + ': ' + bins + ' equal bins over [min, max]', font: { size: 11 } } },
        scales: { x: { ticks: { maxTicksLimit: 5, font: { size: 9 } } }, y: { ticks: { font: { size: 9 } } } }
      }
    });
  }

  // ---- charts over steps ----
  const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b', '#e377c2', '#7f7f7f', '#bcbd22',
    '#393b79', '#ad494a', '#637939', '#7b4173', '#e7ba52', '#3182bd'];
  // The scrubber's step as a vertical line (a Chart.js plugin: glue, not charting).
  const stepMarker = {
    id: 'stepMarker',
    afterDatasetsDraw: function (chart) {
      const s = snapshot();
      if (!s) return;
      const x = chart.scales.x.getPixelForValue(s.step), area = chart.chartArea, ctx = chart.ctx;
      if (x < area.left || x > area.right) return;
      ctx.save(); ctx.strokeStyle = 'rgba(0,0,0,0.35)'; ctx.lineWidth = 1.5;
      ctx.beginPath(); ctx.moveTo(x, area.top); ctx.lineTo(x, area.bottom); ctx.stroke(); ctx.restore();
    }
  };
  function chartDatasets(def) {
    const runs = [[state.a, 'A', []]].concat(state.b >= 0 && state.b !== state.a ? [[state.b, 'B', [6, 4]]] : []);
    const names = [];
    runs.forEach(function (r) {
      DATA.runs[r[0]].series.forEach(function (s) { if (s.chart === def.id && names.indexOf(s.name) < 0) names.push(s.name); });
    });
    const sets = [];
    runs.forEach(function (r) {
      DATA.runs[r[0]].series.forEach(function (s) {
        if (s.chart !== def.id) return;
        const colour = PALETTE[names.indexOf(s.name) % PALETTE.length];
        sets.push({
          label: r[1] + ': ' + s.name, run: r[0], series: s.name,
          data: s.steps.map(function (x, k) { const y = s.values[k]; return { x: x, y: def.log_y && !(y > 0) ? null : y }; }),
          borderColor: colour, backgroundColor: colour, borderDash: r[2], borderWidth: 1.6, pointRadius: 0, spanGaps: false
        });
      });
    });
    return sets;
  }
  function drawCharts() {
    charts.forEach(function (c) { c.chart.destroy(); });
    charts.length = 0;
    const box = $('charts');
    box.innerHTML = '';
    const defs = [];
    [state.a, state.b].forEach(function (i) {
      if (i < 0) return;
      DATA.runs[i].charts.forEach(function (c) { if (!defs.find(function (d) { return d.id === c.id; })) defs.push(c); });
    });
    defs.forEach(function (def) {
      const card = document.createElement('div');
      card.className = 'chart-card';
      card.setAttribute('data-chart', def.id);
      card.innerHTML = '<h3>' + escapeHtml(def.title) + '</h3><p class="muted">' + escapeHtml(def.description) +
        '</p><div class="canvas-box"><canvas></canvas></div>';
      box.appendChild(card);
      const chart = new Chart(card.querySelector('canvas'), {
        type: 'line',
        data: { datasets: chartDatasets(def) },
        options: {
          animation: false, responsive: true, maintainAspectRatio: false, parsing: false, normalized: true,
          interaction: { mode: 'nearest', axis: 'x', intersect: false },
          scales: {
            x: { type: 'linear', title: { display: true, text: 'step' } },
            y: {
              type: def.log_y ? 'logarithmic' : 'linear', title: { display: true, text: def.y_label },
              // a log axis labels its powers of ten only
              ticks: { callback: function (v) { return !def.log_y || Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9 ? fmt(v) : ''; } }
            }
          },
          plugins: {
            legend: { position: 'bottom', labels: { boxWidth: 12, boxHeight: 2, font: { size: 10.5 } } },
            tooltip: { callbacks: { label: function (c) { return c.dataset.label + ': ' + fmt(c.parsed.y); } } }
          }
        },
        plugins: [stepMarker]
      });
      charts.push({ id: def.id, chart: chart });
    });
  }

  // ---- the toolbar ----
  $('fold-all').onclick = function () {
    const g = graphA();
    if (!g) return;
    g.clusters.forEach(function (c) { if (c.parent === '' && c.forks.length) fold(c.scope); });
  };
  $('unfold-all').onclick = function () { Object.keys(state.folded).forEach(unfold); };
  $('fit').onclick = fit;

  // ---- the address: page.html#run=1&b=3&step=300&scale=run&node=4&fold=blocks.0,blocks.1&zoom=2 ----
  // opens the page in that state (run: index or name; step: a snapshot step). #selfcheck runs the self-check.
  function applyAddress() {
    const p = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
      const i = kv.indexOf('=');
      if (i > 0) p[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
    });
    const runIndex = function (v) {
      const byName = DATA.runs.findIndex(function (r) { return r.name === v; });
      return byName >= 0 ? byName : (/^\d+$/.test(v) && +v < DATA.runs.length ? +v : -2);
    };
    if (p.run !== undefined && runIndex(p.run) >= 0) { $('run-a').value = runIndex(p.run); $('run-a').onchange(); }
    if (p.b !== undefined && runIndex(p.b) >= -1) { $('run-b').value = p.b === '-1' ? -1 : runIndex(p.b); $('run-b').onchange(); }
    if (p.scale === 'run' || p.scale === 'step') { $('scale-mode').value = p.scale; $('scale-mode').onchange(); }
    const g = graphA();
    if (g && p.step !== undefined) {
      const k = g.snapshots.findIndex(function (s) { return s.step === +p.step; });
      if (k >= 0) { $('step').value = k; state.snap = k; showStep(); }
    }
    if (g && p.fold) p.fold.split(',').forEach(function (scope) { fold(scope); });
    if (g && p.node !== undefined && g.nodes[+p.node]) { select(+p.node); if (p.zoom) { view.zoom.scale(+p.zoom); centreOn(+p.node); } }
  }

  // ---- start ----
  const started = performance.now();
  if (!DATA.runs.length) {
    $('graph-note').hidden = false;
    $('graph-note').textContent = 'This page holds no runs.';
  } else {
    fillRunPickers();
    drawGraph();
    drawCharts();
    drawFacts();
    const g = graphA();
    if (g && g.forks.length) select(g.forks[0].at);
    if (location.hash.length > 1 && location.hash !== '#selfcheck') applyAddress();
  }
  document.body.setAttribute('data-init-ms', (performance.now() - started).toFixed(1));
  document.body.setAttribute('data-ready-ms', performance.now().toFixed(1));

  // The self-check (page.html#selfcheck): what the browser test runs.
  window.gradscopeExplorer = {
    DATA: DATA, state: state, view: view, charts: charts, fmt: fmt, fmt3: fmt3, stats: stats,
    select: select, fold: fold, unfold: unfold, showStep: showStep, currentScale: currentScale, cardLines: cardLines
  };
  if (location.hash === '#selfcheck' && window.gradscopeSelfcheck) window.gradscopeSelfcheck(window.gradscopeExplorer);
})();
