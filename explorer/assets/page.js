// The explorer page's glue: it draws what the embedded data holds (docs/explorer.md, "The data in the
// page"). The layout is Graphviz's SVG, pan and zoom are d3's, the charts are Chart.js's; this file only
// connects them: it colours the edges for the chosen step, fills the node panel, folds clusters, feeds
// the charts and builds the chain of the answer (the tour). It computes no statistic of its own: every
// number shown comes from the data (the chain only picks steps, blocks and runs, and reads each verdict's
// losses back from its fact).
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
  // Runs A and B are compared; the graph shows one of them (state.shown), at the step state.step. The
  // step, the folds and the zoom stay when the shown run changes.
  const runNamed = function (name) { return DATA.runs.findIndex(function (r) { return r.name === name; }); };
  function defaultPair() {
    // Post-LN and Pre-LN without warmup, the comparison the page exists for; else the first two runs.
    const post = DATA.runs.findIndex(function (r) { return /^post, warmup 0\b/.test(r.name) && r.graph; });
    const pre = DATA.runs.findIndex(function (r) { return /^pre, warmup 0\b/.test(r.name) && r.graph; });
    if (post >= 0 && pre >= 0) return [post, pre];
    return [0, DATA.runs.length > 1 ? 1 : -1];
  }
  const pair = defaultPair();
  const state = {
    a: pair[0], b: pair[1], shown: 'a',
    step: 0,          // the scrubber's step (a snapshot step of the shown run)
    selected: -1,     // tape index of the node in the panel (in the shown run's graph)
    folded: {},       // scope -> true
    scaleMode: 'both',
    pathsMeasure: 'share'  // the panel's path-length bars: 'share' or 'norm' (|g_k|)
  };
  const view = { svg: null, top: null, viewport: null, zoom: null, nodes: {}, edges: [], clusters: {}, textLines: {}, scale: null };
  const charts = [];  // {id, chart}
  let histCharts = [];

  function shownIndex() { return state.shown === 'b' && state.b >= 0 ? state.b : state.a; }
  function runShown() { return DATA.runs[shownIndex()]; }
  function graphShown() { return runShown() ? runShown().graph : null; }
  // The index of the snapshot of g at `step`, or of the last one before it (the first if none is).
  function snapIndex(g, step) {
    let k = 0;
    g.snapshots.forEach(function (s, i) { if (s.step <= step) k = i; });
    return k;
  }
  function snapshot() { const g = graphShown(); return g && g.snapshots.length ? g.snapshots[snapIndex(g, state.step)] : null; }
  function nodeName(g, i) {
    const n = g.nodes[i];
    return '#' + i + ' ' + n.op + (n.label ? ' ' + n.label : '');
  }
  function seriesOf(run, chartId, name) {
    return run.series.find(function (x) { return x.chart === chartId && x.name === name; }) || null;
  }
  function seriesValueAt(run, chartId, name, step) {
    const s = seriesOf(run, chartId, name);
    if (!s) return null;
    const k = s.steps.indexOf(step);
    return k >= 0 ? s.values[k] : null;
  }
  // The blocks of a run's |dL/dW| chart: "blocks.0", ..., the top one last.
  function blockNames(run) {
    return run.series.filter(function (s) { return s.chart === 'grad_norm' && /^blocks\.\d+$/.test(s.name); })
      .map(function (s) { return s.name; })
      .sort(function (x, y) { return +x.split('.')[1] - +y.split('.')[1]; });
  }

  // ---- run pickers, the graph's A/B toggle, facts ----
  function fillRunPickers() {
    const a = $('run-a'), b = $('run-b');
    a.innerHTML = ''; b.innerHTML = '';
    DATA.runs.forEach(function (r, i) {
      a.add(new Option(r.name, i));
      b.add(new Option(r.name, i));
    });
    b.add(new Option('(none)', -1));
    a.value = state.a; b.value = state.b;
    a.onchange = function () { setRuns(+a.value, state.b, state.shown); };
    b.onchange = function () { setRuns(state.a, +b.value, state.shown); };
    $('show-a').onclick = function () { setRuns(state.a, state.b, 'a'); };
    $('show-b').onclick = function () { setRuns(state.a, state.b, 'b'); };
  }
  // Sets runs A and B and which one the graph shows; keeps the step, folds, zoom and (if it exists in
  // the new graph, by its module and label) the selected node.
  function setRuns(a, b, shown) {
    const before = graphShown(), selected = state.selected;
    const key = before && selected >= 0 ? [before.nodes[selected].scope, before.nodes[selected].label, before.nodes[selected].op] : null;
    const graphChanged = (shown === 'b' && b >= 0 ? b : a) !== shownIndex();
    const pairChanged = a !== state.a || b !== state.b;
    state.a = a; state.b = b; state.shown = shown === 'b' && b >= 0 ? 'b' : 'a';
    if (pairChanged) colourCache = null;
    $('run-a').value = a; $('run-b').value = b;
    if (graphChanged) {
      const g = graphShown();
      state.selected = -1;
      if (g && key) {
        const same = g.nodes.findIndex(function (n) { return n.scope === key[0] && n.label === key[1] && n.op === key[2]; });
        state.selected = same;
      }
      drawGraph(true);
    } else {
      showStep();
    }
    if (pairChanged) { drawCharts(); drawFacts(); showStep(); }
    markToggle();
  }
  function markToggle() {
    $('show-a').classList.toggle('on', state.shown === 'a');
    $('show-b').classList.toggle('on', state.shown === 'b');
    $('show-b').disabled = state.b < 0;
    const r = runShown();
    $('graph-title').textContent = r ? (state.shown === 'a' ? 'A: ' : 'B: ') + r.name : '';
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
  // The SVG's user units are screen pixels (its viewBox is the box's size), so the zoom's scale is pixels
  // per Graphviz unit: Graphviz's node text is 10 units, edge labels 9. READABLE puts edge labels at 12 px.
  const READABLE = 12 / 9;
  function drawGraph(keepView) {
    const g = graphShown(), box = $('graph'), note = $('graph-note');
    const kept = keepView && view.zoom ? { t: view.zoom.translate(), s: view.zoom.scale() } : null;
    const folds = Object.keys(state.folded);
    Array.prototype.slice.call(box.querySelectorAll('svg')).forEach(function (s) { box.removeChild(s); });
    view.nodes = {}; view.edges = []; view.clusters = {}; view.textLines = {}; view.zoom = null; view.svg = null;
    state.folded = {};
    if (!g) {
      note.hidden = false;
      note.textContent = 'No graph for run "' + runShown().name + '": ' + (runShown().graph_note || 'none was recorded.') +
        ' The charts below cover every run.';
      $('graph-wrap').style.display = 'none';
      $('legend').innerHTML = '';
      setupScrubber();
      return;
    }
    note.hidden = true;
    $('graph-wrap').style.display = '';
    const holder = document.createElement('div');
    holder.innerHTML = DATA.svgs[g.svg];
    const svg = holder.querySelector('svg');
    box.insertBefore(svg, $('graph-title'));
    const vb = svg.viewBox.baseVal;
    view.size = { w: vb.width, h: vb.height };
    svg.removeAttribute('width'); svg.removeAttribute('height');
    view.svg = svg;
    view.top = svg.querySelector('g.graph');
    sizeViewBox();
    // Pan and zoom (d3): a viewport group around Graphviz's top group.
    const viewport = document.createElementNS('http://www.w3.org/2000/svg', 'g');
    viewport.setAttribute('class', 'viewport');
    svg.insertBefore(viewport, view.top);
    viewport.appendChild(view.top);
    view.viewport = viewport;
    view.zoom = d3.behavior.zoom().scaleExtent([0.05, 20]).on('zoom', function () {
      viewport.setAttribute('transform', 'translate(' + d3.event.translate + ')scale(' + d3.event.scale + ')');
      clearTimeout(view.redrawCards);
      view.redrawCards = setTimeout(function () { Object.keys(state.folded).forEach(drawCard); }, 120);
    });
    d3.select(svg).call(view.zoom).on('dblclick.zoom', null);

    g.nodes.forEach(function (n) {
      const el = svg.querySelector('[id="n' + n.i + '"]');
      if (!el) return;
      view.nodes[n.i] = el;
      view.textLines[n.i] = Array.prototype.slice.call(el.querySelectorAll('text'));
      el.addEventListener('click', function (ev) { ev.stopPropagation(); select(n.i); centreOn(n.i); });
    });
    g.edges.forEach(function (e, k) {
      const el = svg.querySelector('[id="' + e.id + '"]');
      view.edges[k] = el ? {
        el: el, paths: el.querySelectorAll('path'), heads: el.querySelectorAll('polygon'), text: el.querySelector('text')
      } : null;
    });
    g.clusters.forEach(function (c) {
      const el = svg.querySelector('[id="cluster:' + c.scope + '"]');
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
    if (state.selected >= g.nodes.length) state.selected = -1;
    setupScrubber();
    folds.forEach(function (scope) { if (view.clusters[scope]) fold(scope); });
    if (kept) setZoom(kept.t, kept.s); else defaultView();
    Object.keys(state.folded).forEach(drawCard);
    if (state.selected >= 0) select(state.selected); else drawPanel();
    markToggle();
  }
  function sizeViewBox() {
    if (!view.svg) return;
    const w = view.svg.clientWidth || 800, h = view.svg.clientHeight || 500;
    view.svg.setAttribute('viewBox', '0 0 ' + w + ' ' + h);
    view.svg.setAttribute('preserveAspectRatio', 'xMinYMin meet');
  }
  window.addEventListener('resize', sizeViewBox);
  // the graph's box changes size with the table of blocks beside it, not only with the window
  if (window.ResizeObserver) new ResizeObserver(sizeViewBox).observe($('graph'));
  function setZoom(t, s) {
    if (!view.zoom) return;
    view.zoom.translate(t).scale(s);
    view.viewport.setAttribute('transform', 'translate(' + t + ')scale(' + s + ')');
  }
  // A box of Graphviz's top group (getBBox of an element in it) in the coordinates the zoom acts on.
  function outer(bb) {
    const m = view.top.transform.baseVal.consolidate();
    return { x: bb.x + (m ? m.matrix.e : 0), y: bb.y + (m ? m.matrix.f : 0), width: bb.width, height: bb.height };
  }
  function viewSize() { const vb = view.svg.viewBox.baseVal; return { w: vb.width, h: vb.height }; }
  function fit() {
    if (!view.zoom) return;
    const v = viewSize(), s = Math.min(v.w / view.size.w, v.h / view.size.h);
    setZoom([(v.w - s * view.size.w) / 2, (v.h - s * view.size.h) / 2], s);
    Object.keys(state.folded).forEach(drawCard);
  }
  // Shows box b (outer coordinates) at a readable zoom: its top left corner near the view's top left,
  // or centred when it fits.
  function showBox(b, atLeast) {
    const v = viewSize(), s = Math.max(view.zoom.scale(), atLeast || READABLE);
    const tx = b.width * s < v.w ? v.w / 2 - s * (b.x + b.width / 2) : 12 - s * b.x;
    const ty = b.height * s < v.h ? v.h / 2 - s * (b.y + b.height / 2) : 28 - s * b.y;
    setZoom([tx, ty], s);
    Object.keys(state.folded).forEach(drawCard);
  }
  // Centres the view on node i at a readable zoom.
  function centreOn(i) {
    const el = view.nodes[i];
    if (!el || !view.svg || el.style.display === 'none') return;
    const b = outer(el.getBBox()), v = viewSize(), s = Math.max(view.zoom.scale(), READABLE);
    setZoom([v.w / 2 - s * (b.x + b.width / 2), v.h / 2 - s * (b.y + b.height / 2)], s);
    Object.keys(state.folded).forEach(drawCard);
  }
  // The default view: every block folded, at a readable zoom, on the stream's entry into block 0 (the
  // top of the graph), so that the first cards' text can be read.
  function defaultView() {
    const g = graphShown();
    if (!g) return;
    g.clusters.forEach(function (c) { if (c.parent === '' && c.forks.length) fold(c.scope); });
    const first = g.clusters.find(function (c) { return c.parent === '' && c.forks.length; });
    if (first && view.clusters[first.scope]) {
      const b = outer(view.clusters[first.scope].getBBox()), v = viewSize(), s = READABLE;
      // the card's left edge near the left of the view; the stream node above it (its first fork) at the top
      const at = first.forks.length && view.nodes[g.forks[first.forks[0]].at];
      const top = at ? outer(at.getBBox()).y : b.y - v.h / 3 / s;
      setZoom([b.width * s < v.w ? v.w / 2 - s * (b.x + b.width / 2) : 16 - s * b.x, 30 - s * top], s);
    } else {
      setZoom([0, 0], READABLE);
    }
    Object.keys(state.folded).forEach(drawCard);
  }

  function setupScrubber() {
    const g = graphShown(), range = $('step');
    const n = g ? g.snapshots.length : 0;
    range.max = Math.max(0, n - 1);
    const k = g && n ? snapIndex(g, state.step) : 0;
    if (g && n) state.step = g.snapshots[k].step;
    range.value = k;
    range.disabled = n <= 1;
    range.oninput = function () { const gg = graphShown(); state.step = gg.snapshots[+range.value].step; showStep(); };
    $('scale-mode').onchange = function () { state.scaleMode = $('scale-mode').value; showStep(); };
    showStep();
  }
  function setStep(step) {
    const g = graphShown();
    if (!g || !g.snapshots.length) { state.step = step; return; }
    const k = snapIndex(g, step);
    state.step = g.snapshots[k].step;
    $('step').value = k;
    showStep();
  }

  // The colour scale of the edges: one scale over every step of runs A and B (the default), of the shown
  // run, or of this step's own edges.
  let colourCache = null;
  function currentScale() {
    const g = graphShown(), s = snapshot();
    if (state.scaleMode === 'step') return makeScale(s.edge_norm);
    const runs = state.scaleMode === 'run' ? [shownIndex()] : [state.a, state.b].filter(function (i) { return i >= 0; });
    const key = state.scaleMode + ':' + runs.join(',');
    if (!colourCache || colourCache.key !== key) {
      let all = [];
      runs.forEach(function (i) {
        const gg = DATA.runs[i].graph;
        if (gg) gg.snapshots.forEach(function (x) { all = all.concat(x.edge_norm); });
      });
      if (!all.length) g.snapshots.forEach(function (x) { all = all.concat(x.edge_norm); });
      colourCache = { key: key, scale: makeScale(all) };
    }
    return colourCache.scale;
  }

  // Recolours and relabels the graph, the folded cards, the panel and the charts' step marker.
  function showStep() {
    const g = graphShown(), s = snapshot();
    $('step-label').textContent = s ? s.step : '-';
    $('step-info').textContent = s ? 'loss ' + fmt(s.loss) + ' at this step (snapshot ' + (snapIndex(g, state.step) + 1) + ' of ' +
      g.snapshots.length + ')' : '';
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
          const prefix = e.path === 'skip' ? 'skip ' : e.path === 'branch-in' ? 'branch ' : '';  // as to_dot labels them
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
      drawLadder();
      Object.keys(state.folded).forEach(function (scope) { drawCard(scope); });
    }
    if (state.selected >= 0) drawPanel();
    charts.forEach(function (c) { c.chart.update('none'); });
  }

  // The blocks of runs A and B side by side at this step, in a table beside the graph: each
  // block's first residual fork (the stream entering it), skip | branch, tinted on the graph's colour
  // scale, so that a block gone dark in one run and not in the other is seen at once. A click shows
  // that run's graph with the block open.
  function drawLadder() {
    const box = $('ladder');
    const runs = [['a', state.a], ['b', state.b]].filter(function (r) { return r[1] >= 0 && DATA.runs[r[1]].graph; });
    // always in the layout beside the graph (a fixed width), so that the graph's box keeps its size
    if (!runs.length || !view.scale) { box.innerHTML = ''; return; }
    const scopes = [];
    runs.forEach(function (r) {
      DATA.runs[r[1]].graph.clusters.forEach(function (c) { if (c.parent === '' && c.forks.length && scopes.indexOf(c.scope) < 0) scopes.push(c.scope); });
    });
    let html = '<table><tr><th>step ' + state.step + '</th>' + runs.map(function (r) {
      return '<th title="' + escapeHtml(DATA.runs[r[1]].name) + '"><span class="swatch ' + r[0] + '"></span>' + r[0].toUpperCase() + '</th>';
    }).join('') + '</tr><tr><td colspan="' + (runs.length + 1) + '" class="muted">|g| into each block: skip | branch</td></tr>';
    scopes.forEach(function (scope) {
      html += '<tr><th>' + escapeHtml(scope) + '</th>' + runs.map(function (r) {
        const g = DATA.runs[r[1]].graph, c = g.clusters.find(function (x) { return x.scope === scope; });
        if (!c) return '<td></td>';
        const snap = g.snapshots[snapIndex(g, state.step)], f = snap.forks[c.forks[0]];
        const top = Math.max(f[0] === null ? 0 : f[0], f[1] === null ? 0 : f[1]);
        const colour = view.scale.colour(top > 0 ? top : null);
        return '<td data-run="' + r[0] + '" data-scope="' + escapeHtml(scope) + '" style="background:' + d3.interpolateRgb('#ffffff', colour)(0.45) +
          ';border-left:4px solid ' + colour + '">' + fmt3(f[0]) + ' | ' + fmt3(f[1]) + '</td>';
      }).join('') + '</tr>';
    });
    box.innerHTML = html + '</table>';
    box.querySelectorAll('td[data-scope]').forEach(function (td) {
      td.onclick = function () {
        const scope = td.getAttribute('data-scope');
        setRuns(state.a, state.b, td.getAttribute('data-run'));
        if (state.folded[scope]) unfold(scope); else if (view.clusters[scope]) showBox(outer(view.clusters[scope].getBBox()));
      };
    });
  }

  // The colour bar with a number at every power of ten it spans.
  function drawLegend(scale) {
    const stops = [0, 0.25, 0.5, 0.75, 1].map(function (t) { return scale.colour(scale.value(t)) + ' ' + (t * 100) + '%'; });
    let ticks = '';
    if (scale.any && scale.hi > scale.low) {
      for (let d = Math.ceil(scale.low); d <= Math.floor(scale.hi); ++d) {
        const x = (d - scale.low) / (scale.hi - scale.low) * 100;
        ticks += '<span style="left:' + x.toFixed(1) + '%">' + fmt(Math.pow(10, d), 1) + '</span>';
      }
    }
    const what = state.scaleMode === 'both' ? 'runs A and B, every step' : state.scaleMode === 'run' ? 'this run, every step' : 'this step';
    $('legend').innerHTML =
      '<span>|g| along an edge (' + what + '): ' + (scale.any && scale.lo < scale.low ? '&le;' : '') + fmt3(scale.any ? scale.value(0) : null) +
      ' <span class="scale"><span class="bar" style="background:linear-gradient(to right,' + stops.join(',') + ')"></span>' +
      '<span class="ticks">' + ticks + '</span></span> ' + fmt3(scale.any ? scale.value(1) : null) + '; grey: none</span>' +
      '<span><b>bold</b>: skip path; dashed: branch</span>' +
      '<span><span class="tag" style="background:#fff2b3">yellow</span> residual stream, "skip a | branch b": its gradient\'s two parts</span>';
  }

  // ---- folding a cluster ----
  function inside(scope, s) { return s === scope || s.indexOf(scope + '.') === 0; }
  function toggleFold(scope) {
    if (state.folded[scope]) unfold(scope); else fold(scope);
  }
  function fold(scope) {
    if (!view.clusters[scope]) return;
    Object.keys(state.folded).forEach(function (s) { if (inside(scope, s) && s !== scope) unfold(s, true); });
    state.folded[scope] = true;
    setFoldedVisibility();
    drawCard(scope);
  }
  // Unfolds and, unless quiet, shows the unfolded module at a readable zoom.
  function unfold(scope, quiet) {
    delete state.folded[scope];
    const card = cardOf(scope);
    if (card) card.parentNode.removeChild(card);
    setFoldedVisibility();
    if (!quiet && view.clusters[scope]) showBox(outer(view.clusters[scope].getBBox()));
  }
  function cardOf(scope) {
    return view.top ? Array.prototype.find.call(view.top.querySelectorAll('g.fold-card'), function (c) {
      return c.getAttribute('data-scope') === scope;
    }) : null;
  }
  // Hides every node, edge and nested cluster inside a folded cluster; edges that cross its border stay
  // and end under its card.
  function setFoldedVisibility() {
    const g = graphShown(), folded = Object.keys(state.folded);
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
    const g = graphShown(), s = snapshot(), c = g.clusters.find(function (x) { return x.scope === scope; });
    const lines = [scope + ' (folded; click to open)'];
    c.forks.forEach(function (f) {
      const fork = g.forks[f], at = g.nodes[fork.at];
      lines.push('at ' + (at.label || '#' + at.i) + ' → ' + fork.branch + ':');
      lines.push('   skip ' + fmt(s.forks[f][0]) + ' | branch ' + fmt(s.forks[f][1]));
    });
    if (!c.forks.length) lines.push('no residual connection inside');
    const gw = seriesValueAt(runShown(), 'grad_norm', scope, s.step);
    if (gw !== null) lines.push('|dL/dW| of its parameters ' + fmt(gw));
    return lines;
  }
  function drawCard(scope) {
    let card = cardOf(scope);
    const el = view.clusters[scope];
    if (!el || !state.folded[scope]) return;
    if (!card) {
      card = document.createElementNS('http://www.w3.org/2000/svg', 'g');
      card.setAttribute('class', 'fold-card');
      card.setAttribute('data-scope', scope);
      card.addEventListener('click', function (ev) { ev.stopPropagation(); unfold(scope); });
      view.top.appendChild(card);  // last: drawn over the edges that end inside
    }
    const bb = el.getBBox(), lines = cardLines(scope);
    // 14 px on screen at the zoom of the moment, if the lines fit the cluster's box
    const perPixel = view.zoom && view.zoom.scale() > 0 ? 1 / view.zoom.scale() : 1;
    const size = Math.min(14 * perPixel, bb.width / 24, bb.height / (lines.length * 1.5 + 1));
    card.innerHTML = '';
    const rect = document.createElementNS('http://www.w3.org/2000/svg', 'rect');
    [['x', bb.x], ['y', bb.y], ['width', bb.width], ['height', bb.height], ['rx', 10]].forEach(function (a) { rect.setAttribute(a[0], a[1]); });
    // Tinted by the edge colour of the largest gradient part at its forks: a block gone dark is blue.
    const g = graphShown(), s = snapshot(), c = g.clusters.find(function (x) { return x.scope === scope; });
    let top = null;
    c.forks.forEach(function (f) { [s.forks[f][0], s.forks[f][1]].forEach(function (v) { if (v !== null && (top === null || v > top)) top = v; }); });
    if (top !== null && view.scale) {
      const colour = view.scale.colour(top);
      rect.style.fill = d3.interpolateRgb('#ffffff', colour)(0.35);
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
    const g = graphShown(), s = snapshot(), i = state.selected, panel = $('panel');
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
    html += pathsSection(g, i);
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
    if ($('paths-chart')) histCharts.push(pathsChart(g, i));
  }

  // ---- a node's gradient by path length, runs A and B ----
  // g = g_0 + ... + g_K, g_k the sum over the paths from the node to the loss through exactly k residual
  // branches; stored per node at every snapshot (analysis/path_nodes.hpp). The node of the other run's
  // graph is the one with the same module, label and op (the n-th such node for the n-th).
  function sameNode(g, i, other) {
    const n = g.nodes[i], same = function (x) { return x.scope === n.scope && x.label === n.label && x.op === n.op; };
    const rank = g.nodes.slice(0, i).filter(same).length;
    const matches = other.nodes.filter(same);
    return rank < matches.length ? matches[rank].i : -1;
  }
  // For each of runs A and B: its profile of the node shown (node i of graph g) at the scrubber's step,
  // or why there is none.
  function pathProfiles(g, i) {
    return [['a', state.a], ['b', state.b]].filter(function (r, k) { return r[1] >= 0 && (k === 0 || r[1] !== state.a); }).map(function (r) {
      const run = DATA.runs[r[1]], og = run.graph, out = { side: r[0], run: r[1], name: run.name, paths: null, why: '' };
      if (!og || !og.snapshots.length) { out.why = 'no graph in this run'; return out; }
      const j = og === g ? i : sameNode(g, i, og);
      if (j < 0) { out.why = 'its graph has no node of this module, label and op'; return out; }
      const snap = og.snapshots[snapIndex(og, state.step)];
      out.node = j; out.step = snap.step; out.K = snap.path_max;
      if (!snap.paths) out.why = snap.paths_note || 'the split was not recorded';
      else if (!snap.paths[j]) out.why = 'no gradient reaches this node (it needs none, or is on no path from the loss)';
      else {
        const p = snap.paths[j], pad = function (v) { const a = v.slice(); while (a.length <= snap.path_max) a.push(0); return a; };
        out.paths = { total: p[0], norm: pad(p[1]), share: pad(p[2]) };
        if (!(p[0] > 0)) { out.paths = null; out.why = 'its gradient here is zero: no shares'; }
      }
      return out;
    });
  }
  function pathsSection(g, i) {
    const profiles = pathProfiles(g, i), drawn = profiles.filter(function (p) { return p.paths; });
    const K = Math.max.apply(null, profiles.map(function (p) { return p.K || 0; }));
    let html = '<h4>its gradient by path length, A and B</h4><div data-k="paths">';
    profiles.forEach(function (p) {
      html += '<div class="paths-run" data-side="' + p.side + '" data-run="' + p.run + '" data-drawn="' + (p.paths ? 1 : 0) + '">' +
        '<span class="swatch ' + p.side + '"></span>' + p.side.toUpperCase() + ': ' + escapeHtml(p.name) +
        (p.paths ? ', step ' + p.step + ', |g| ' + fmt(p.paths.total) + ', share of k = 0: <b data-k="share0">' + fmt(p.paths.share[0]) + '</b>'
          : ': <i>' + escapeHtml(p.why) + '</i>') + '</div>';
    });
    if (drawn.length) {
      html += '<p class="muted paths-caption">k: the number of residual branches a path from the loss to this node goes through (0: the skip path alone; ' +
        K + ' branches in all). share = &lt;g_k, g&gt; / |g|², the share of |g|² carried by the paths through exactly k branches; ' +
        'a run\'s shares sum to 1 (one is negative where paths of that length cancel others).</p>' +
        '<div class="paths-measure"><label><input type="radio" name="paths-measure" value="share"' + (state.pathsMeasure !== 'norm' ? ' checked' : '') +
        '> share</label> <label><input type="radio" name="paths-measure" value="norm"' + (state.pathsMeasure === 'norm' ? ' checked' : '') +
        '> |g_k| (log)</label></div><div class="paths-box"><canvas id="paths-chart"></canvas></div>';
    }
    return html + '</div>';
  }
  // Both runs' bars over k on one y axis (Chart.js).
  function pathsChart(g, i) {
    const profiles = pathProfiles(g, i).filter(function (p) { return p.paths; }), norm = state.pathsMeasure === 'norm';
    const K = Math.max.apply(null, profiles.map(function (p) { return p.K; }));
    const labels = [];
    for (let k = 0; k <= K; ++k) labels.push(String(k));
    const chart = new Chart($('paths-chart'), {
      type: 'bar',
      data: { labels: labels, datasets: profiles.map(function (p) {
        return { label: p.side.toUpperCase() + ': ' + p.name, side: p.side, run: p.run, node: p.node, step: p.step,
          data: (norm ? p.paths.norm : p.paths.share).map(function (v) { return norm && !(v > 0) ? null : v; }),
          backgroundColor: p.side === 'a' ? '#d62728' : '#1f77b4' };
      }) },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false,
        plugins: { legend: { display: false },
          tooltip: { callbacks: { label: function (c) {
            const p = profiles[c.datasetIndex].paths;
            return c.dataset.label + ': share ' + fmt(p.share[c.dataIndex]) + ', |g_k| ' + fmt(p.norm[c.dataIndex]);
          } } } },
        scales: { x: { title: { display: true, text: 'k, branches on the path' }, ticks: { font: { size: 9 } } },
          y: norm ? { type: 'logarithmic', title: { display: true, text: '|g_k|' }, ticks: { font: { size: 9 },
            callback: function (v) { return Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9 ? fmt(v) : ''; } } }
            : { title: { display: true, text: 'share of |g|²' }, ticks: { font: { size: 9 } } } }
      }
    });
    document.querySelectorAll('input[name="paths-measure"]').forEach(function (r) {
      r.onchange = function () { state.pathsMeasure = r.value; drawPanel(); };
    });
    pathView.chart = chart;
    return chart;
  }
  const pathView = { chart: null };
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
  // Run A in warm colours, run B in cool ones (B also dashed); within a run, one shade per series.
  const WARM = ['#d62728', '#ff7f0e', '#8c564b', '#e377c2', '#bcbd22', '#ad494a', '#e7ba52', '#7b4173', '#843c39', '#d6616b'];
  const COOL = ['#1f77b4', '#17becf', '#2ca02c', '#9467bd', '#393b79', '#637939', '#3182bd', '#6baed6', '#31a354', '#756bb1'];
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
  // The key charts, first below the graph, in the chain's order: the first steps' output move (link 1),
  // the top block's collapse (links 2 and 3), the loss (link 4), and the gradient of the lowest block
  // against the top's (the vanishing gradient, not the cause). Each picks named series of a stored chart.
  //   pick(run): the series names of `from` to draw for that run.
  function keyCharts() {
    const ends = function (run) { const b = blockNames(run); return b.length ? [b[0], b[b.length - 1]].filter(function (n, k, a) { return a.indexOf(n) === k; }) : []; };
    const top = function (run) { const b = blockNames(run); return b.length ? [b[b.length - 1]] : []; };
    const spread = DATA.runs.some(function (r) { return r.charts.some(function (c) { return c.id === 'top_spread'; }); });
    const all = function (chart) {
      return function (run) { return run.series.filter(function (s) { return s.chart === chart; }).map(function (s) { return s.name; }); };
    };
    return [
      { id: 'key_move', from: 'output_move', title: 'link 1: the first updates move the output, steps 0-50', y_label: 'RMS of Δlogits', log_y: true,
        description: 'how far each update moved the logits of a fixed held-out probe batch', pick: all('output_move'), xmax: 50 },
      spread ? { id: 'key_collapse', from: 'top_spread', title: 'links 2-3: the top block\'s distance from one vector', y_label: '1 - cosine', log_y: true,
        description: '1 - the mean cosine between a sequence\'s positions in the top block\'s output (0: one vector)', pick: all('top_spread') }
        : { id: 'key_collapse', from: 'out_cosine', title: 'links 2-3: the top block\'s position cosine', y_label: 'cosine', log_y: false,
          description: 'the mean cosine between a sequence\'s positions in the top block\'s output (1: one vector)', pick: top },
      { id: 'loss', from: 'loss', title: 'link 4: training loss', y_label: 'loss (nats)', log_y: false,
        description: 'the mean cross-entropy of each step\'s training batch, before its update', pick: all('loss') },
      { id: 'key_grad', from: 'grad_norm', title: 'not the cause: block 0 against the top block, |dL/dW|', y_label: '|dL/dW|', log_y: true,
        description: 'the gradient norm of the lowest and the highest block\'s parameters; giving it back (ln-undo-gain) does not rescue Post-LN', pick: ends }
    ];
  }
  function chartDatasets(def) {
    const runs = [[state.a, 'A', [], WARM]].concat(state.b >= 0 && state.b !== state.a ? [[state.b, 'B', [6, 4], COOL]] : []);
    const sets = [];
    runs.forEach(function (r) {
      const run = DATA.runs[r[0]];
      const names = def.pick ? def.pick(run) : run.series.filter(function (s) { return s.chart === (def.from || def.id); }).map(function (s) { return s.name; });
      names.forEach(function (name, k) {
        const s = seriesOf(run, def.from || def.id, name);
        if (!s) return;
        const colour = r[3][k % r[3].length];
        sets.push({
          label: r[1] + ': ' + s.name, run: r[0], series: s.name,
          data: s.steps.map(function (x, j) { const y = s.values[j]; return { x: x, y: def.log_y && !(y > 0) ? null : y }; })
            .filter(function (p) { return def.xmax === undefined || p.x <= def.xmax; }),
          borderColor: colour, backgroundColor: colour, borderDash: r[2], borderWidth: 1.8, pointRadius: 0, spanGaps: false
        });
      });
    });
    return sets;
  }
  // The y axis of a chart whose points all have one value (a constant learning rate): around that
  // value, not Chart.js's [v - 1, v + 1].
  function yRange(sets, log) {
    let lo = Infinity, hi = -Infinity;
    sets.forEach(function (d) { d.data.forEach(function (p) { if (p.y !== null && isFinite(p.y)) { lo = Math.min(lo, p.y); hi = Math.max(hi, p.y); } }); });
    if (!(lo <= hi) || lo !== hi) return {};
    if (log) return { min: lo / 3, max: hi * 3 };
    return lo === 0 ? { min: -1, max: 1 } : { min: Math.min(0, 2 * lo), max: Math.max(0, 2 * hi) };
  }
  function makeChart(box, def) {
    const card = document.createElement('div');
    card.className = 'chart-card';
    card.setAttribute('data-chart', def.id);
    card.innerHTML = '<h3>' + escapeHtml(def.title) + '</h3><p class="muted">' + escapeHtml(def.description) +
      '</p><div class="canvas-box"><canvas></canvas></div>';
    box.appendChild(card);
    const sets = chartDatasets(def), range = yRange(sets, def.log_y);
    const y = {
      type: def.log_y ? 'logarithmic' : 'linear', title: { display: true, text: def.y_label },
      // a log axis labels its powers of ten only
      ticks: { callback: function (v) { return !def.log_y || Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9 ? fmt(v) : ''; } }
    };
    if (range.min !== undefined) { y.min = range.min; y.max = range.max; }
    const chart = new Chart(card.querySelector('canvas'), {
      type: 'line',
      data: { datasets: sets },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false, parsing: false, normalized: true,
        interaction: { mode: 'nearest', axis: 'x', intersect: false },
        scales: { x: { type: 'linear', title: { display: true, text: 'step' }, max: def.xmax }, y: y },
        plugins: {
          legend: { position: 'bottom', labels: { boxWidth: 14, boxHeight: 2, font: { size: 11 } } },
          tooltip: { callbacks: { label: function (c) { return c.dataset.label + ': ' + fmt(c.parsed.y); } } }
        }
      },
      plugins: [stepMarker]
    });
    charts.push({ id: def.id, chart: chart });
  }
  function drawCharts() {
    charts.forEach(function (c) { c.chart.destroy(); });
    charts.length = 0;
    $('charts').innerHTML = '';
    $('charts-more').innerHTML = '';
    keyCharts().forEach(function (def) { makeChart($('charts'), def); });
    if (!$('charts-more').hidden) drawMoreCharts();
  }
  // Every stored chart of runs A and B, behind the "show every chart" button.
  function drawMoreCharts() {
    const defs = [];
    [state.a, state.b].forEach(function (i) {
      if (i < 0) return;
      DATA.runs[i].charts.forEach(function (c) { if (!defs.find(function (d) { return d.id === c.id; })) defs.push(c); });
    });
    defs.forEach(function (def) { makeChart($('charts-more'), { id: 'all_' + def.id, from: def.id, title: def.title, description: def.description,
      y_label: def.y_label, log_y: def.log_y, pick: null, chartId: def.id }); });
  }
  $('more-charts').onclick = function () {
    const more = $('charts-more');
    more.hidden = !more.hidden;
    $('more-charts').textContent = more.hidden ? 'show every chart' : 'hide the other charts';
    if (more.hidden) {
      for (let k = charts.length - 1; k >= 0; --k) if (charts[k].id.indexOf('all_') === 0) { charts[k].chart.destroy(); charts.splice(k, 1); }
      more.innerHTML = '';
    } else {
      drawMoreCharts();
    }
  };

  // ---- the chain: the project's answer, link by link, in this page's own numbers ----
  // Built once, for the default pair (Post-LN and Pre-LN without warmup when the page has them). Each
  // link is a tour step: its name, its evidence tags, a table of the numbers it rests on (each read from
  // a stored series or fact, marked data-run/data-chart/data-name/data-at or data-fact for the test),
  // and a click that sets runs A and B, the graph's run, the step, the block shown unfolded (the others
  // folded) and the selected node. Its element carries them (data-run: the run whose graph is shown,
  // data-step, data-node, data-open, data-evidence).
  const tour = [];
  let tourAt = -1;
  // A run's verdict against its frozen-blocks baseline, from its facts: the text, the two losses, the margin.
  function verdictOf(run) {
    const fact = function (key) { const f = run.facts.find(function (x) { return x[0] === key; }); return f ? f[1] : ''; };
    // a page another program wrote (dynamics, warmup) has its own verdict, with no frozen-blocks baseline
    const own = fact('verdict');
    const text = /frozen blocks/.test(own) ? own : 'no frozen-blocks baseline on this page (its program\'s verdict: ' + (own || 'none') + ')';
    const m = text.match(/\(([^ ]+) vs ([^ ]+) frozen, margin ([^ )]+)\)/);
    return { text: text, beats: /^beats frozen blocks/.test(text), loss: m ? parseFloat(m[1]) : NaN,
      frozen: m ? parseFloat(m[2]) : NaN, margin: m ? parseFloat(m[3]) : NaN, kl: parseFloat(fact('head KL(u || p)')) };
  }
  function buildTour() {
    const list = $('tour');
    list.innerHTML = '';
    tour.length = 0;
    const A = pair[0], B = pair[1], ra = DATA.runs[A], ga = ra.graph;
    if (!ga || !ga.snapshots.length) { list.innerHTML = '<li class="muted">(no graph in run A: no chain to show)</li>'; return; }
    const rb = B >= 0 ? DATA.runs[B] : null;
    const blocks = blockNames(ra), bottom = blocks[0], topBlock = blocks[blocks.length - 1];
    const steps = ga.snapshots.map(function (s) { return s.step; }), last = steps[steps.length - 1];
    // the collapse's early step: the first snapshot at or after step 5 (causes' --collapse-step), else the last
    const early = steps.find(function (s) { return s >= 5; }) !== undefined ? steps.find(function (s) { return s >= 5; }) : last;
    const allBlocks = ga.clusters.filter(function (c) { return c.parent === '' && c.forks.length; }).map(function (c) { return c.scope; });
    const forkOf = function (g, scope) {
      const c = g.clusters.find(function (x) { return x.scope === scope; });
      return c && c.forks.length ? g.forks[c.forks[0]].at : -1;
    };
    const name = function (i) { return '<i>' + escapeHtml(DATA.runs[i].name) + '</i>'; };
    const tag = function (t) { return '<span class="evidence">' + escapeHtml(t) + '</span>'; };
    // A number from a stored series (its value at a step) of run i, as a table cell the test can read back.
    const cell = function (i, chart, series, step) {
      return '<td class="num" data-run="' + i + '" data-chart="' + chart + '" data-name="' + escapeHtml(series) + '" data-at="' + step + '">' +
        fmt(seriesValueAt(DATA.runs[i], chart, series, step)) + '</td>';
    };
    // 1 - the top block's position cosine (computed in double by the run), else the cosine itself
    const hasSpread = !!seriesOf(ra, 'top_spread', topBlock);
    const spreadLabel = (hasSpread ? '1 - cosine' : 'cosine') + ' of ' + escapeHtml(topBlock) + '\'s positions, step ' + last;
    const spread = function (i, step) { return cell(i, hasSpread ? 'top_spread' : 'out_cosine', topBlock, step); };
    const factCell = function (i, text) { return '<td class="verdict" data-run="' + i + '" data-fact="verdict">' + escapeHtml(text) + '</td>'; };
    const runs = [A].concat(rb ? [B] : []);
    const head = '<tr><th></th>' + runs.map(function (i, k) { return '<th>' + (k ? 'B: ' : 'A: ') + escapeHtml(DATA.runs[i].name) + '</th>'; }).join('') + '</tr>';
    const table = function (rows) {
      return '<table class="numbers">' + head + rows.map(function (r) { return '<tr><th>' + r[0] + '</th>' + runs.map(r[1]).join('') + '</tr>'; }).join('') + '</table>';
    };
    const verdictRow = ['held-out loss against frozen blocks', function (i) { return factCell(i, verdictOf(DATA.runs[i]).text); }];
    const add = function (title, evidence, body, action) {
      action.fold = allBlocks.filter(function (s) { return s !== action.open; });
      tour.push({ title: title, evidence: evidence, body: body, action: action });
    };
    const move = seriesOf(ra, 'output_move', 'logits') ? ['output move of that update (RMS change of the probe logits)',
      function (i) { return cell(i, 'output_move', 'logits', steps[0]); }] : null;
    add('Link 1: the first steps', ['measurement'],
      '<p>Adam\'s first update (after step ' + steps[0] + '\'s pass) has about the same relative size in both placements, and it moves ' +
      'Post-LN\'s output more. ' + escapeHtml(bottom) + ' is shown open.</p>' +
      table([['|ΔW|/|W| of ' + escapeHtml(bottom) + ', first update', function (i) { return cell(i, 'update_ratio', bottom, steps[0]); }]]
        .concat(move ? [move] : [])),
      { a: A, b: B, shown: 'a', step: steps[0], open: bottom, node: forkOf(ga, bottom) });
    add('Link 2: every run collapses early', ['measurement'],
      '<p>Within a few updates the top block gives every position of a sequence nearly the same vector, in both runs ' +
      '(mean cosine between positions, 1: one vector). The collapse is not the difference; leaving it is.</p>' +
      table([['cosine of ' + escapeHtml(topBlock) + '\'s positions, step ' + steps[0], function (i) { return cell(i, 'out_cosine', topBlock, steps[0]); }],
        ['the same at step ' + early, function (i) { return cell(i, 'out_cosine', topBlock, early); }]]),
      { a: A, b: B, shown: 'a', step: early, open: topBlock, node: forkOf(ga, topBlock) });
    add('Link 3: Post-LN\'s collapse holds itself', ['measurement', 'definition', 'intervention: not sufficient', 'intervention: sufficiency'],
      '<p>Post-LN\'s top stays one vector to the end, where Pre-LN\'s spreads ' + tag('measurement') + '. A layer fed one vector at ' +
      'every position gets a rank-one weight gradient and moves every position alike ' + tag('definition') + '. In <code>causes</code>, ' +
      'a second warmup from step 100 rescues no seed ' + tag('intervention: not sufficient') + '; only the healthy run\'s whole blocks, ' +
      'moved into the stuck run, rescue it ' + tag('intervention: sufficiency') + '.</p>' +
      table([[spreadLabel, function (i) { return spread(i, last); }]]),
      { a: A, b: B, shown: 'a', step: last, open: topBlock, node: forkOf(ga, topBlock) });
    add('Link 4: one vector everywhere predicts the unigram', ['definition', 'measurement'],
      '<p>A top that is one vector at every position predicts one distribution everywhere, at best the unigram one ' + tag('definition') +
      '. So Post-LN ends no better than its own blocks frozen at initialization, where only the embeddings and the head learn ' +
      tag('measurement') + '.</p>' +
      table([['head KL(u || p) from the unigram u, last step', function (i) {
        return '<td class="num" data-run="' + i + '" data-fact="head KL(u || p)">' + fmt(verdictOf(DATA.runs[i]).kl, 3) + '</td>';
      }], verdictRow]),
      { a: A, b: B, shown: 'a', step: last, open: topBlock, node: forkOf(ga, topBlock) });
    // The usual explanation's identity path: how much of the gradient at block 0's input (the embedding
    // output "emb", the stream's input) comes along the skip path alone, k = 0, in A and in B.
    const embOf = function (g) { return g ? g.nodes.findIndex(function (n) { return n.label === 'emb' && n.scope === ''; }) : -1; };
    const pathCell = function (i, step, what) {  // share of k = 0, or |g| (the split's total), of run i's emb at `step`
      const g = DATA.runs[i].graph, j = embOf(g), snap = g ? g.snapshots.find(function (x) { return x.step === step; }) : null;
      const p = snap && snap.paths && j >= 0 ? snap.paths[j] : null;
      return '<td class="num" data-run="' + i + '" data-paths="' + what + '" data-node="' + j + '" data-at="' + step + '">' +
        fmt(p ? (what === 'share0' ? p[2][0] : p[0]) : null) + '</td>';
    };
    const hasPaths = function (i) {
      const g = DATA.runs[i].graph, j = embOf(g);
      return j >= 0 && g.snapshots.length && g.snapshots[0].paths && g.snapshots[0].paths[j];
    };
    if (rb && embOf(ga) >= 0 && hasPaths(A) && hasPaths(B) && rb.graph.snapshots.some(function (x) { return x.step === steps[0]; }) &&
        rb.graph.snapshots.some(function (x) { return x.step === last; })) {
      add('The usual explanation: the identity path', ['measurement'],
        '<p>Pre-LN\'s skip path hands block 0\'s input (<i>emb</i>, the stream\'s input) the top\'s gradient unchanged, by definition; ' +
        'Post-LN\'s goes through every LN. But does the gradient come along it? Split emb\'s g by the number k of branches its paths ' +
        'go through: the share of k = 0, &lt;g_0, g&gt; / |g|², is what the skip path alone carries. Every k: the panel; the split: ' +
        '<code>docs/gradient-paths.md</code>.</p>' +
        table([['share of k = 0 at emb, step ' + steps[0], function (i) { return pathCell(i, steps[0], 'share0'); }],
          ['|g| at emb, step ' + steps[0], function (i) { return pathCell(i, steps[0], 'total'); }],
          ['share of k = 0 at emb, step ' + last, function (i) { return pathCell(i, last, 'share0'); }]]),
        { a: A, b: B, shown: 'a', step: steps[0], open: bottom, node: embOf(ga) });
    }
    // Not the cause: the gradient that vanishes through Post-LN's LNs, given back by ln-undo-gain.
    const undo = DATA.runs.findIndex(function (r) { return /ln-undo-gain/.test(r.name) && r.name.split(',')[0] === ra.name.split(',')[0] && r.graph; });
    if (undo >= 0) {
      const ru = DATA.runs[undo], vu = verdictOf(ru);
      add('Not the cause: the vanishing gradient', ['intervention: not sufficient'],
        '<p>In Post-LN the gradient shrinks on its way down through the LNs, so its lowest block gets less than its top. ' + name(undo) + ' gives it back (every LN\'s backward ' +
        'without its 1/σ); judged against the same frozen-blocks baseline, it ' + escapeHtml(vu.text) + '. In <code>causes</code>, over 5 seeds of the lesson\'s model, giving the gradient back rescues none against ' +
        'frozen blocks, and neither does clamping the branches (branch dominance).</p>' +
        '<table class="numbers"><tr><th></th><th>A: ' + escapeHtml(ra.name) + '</th><th>B: ' + escapeHtml(ru.name) + '</th></tr>' +
        '<tr><th>|dL/dW| of ' + escapeHtml(bottom) + ', step ' + last + '</th>' + cell(A, 'grad_norm', bottom, last) + cell(undo, 'grad_norm', bottom, last) + '</tr>' +
        '<tr><th>|dL/dW| of ' + escapeHtml(topBlock) + ', step ' + last + '</th>' + cell(A, 'grad_norm', topBlock, last) + cell(undo, 'grad_norm', topBlock, last) + '</tr>' +
        '<tr><th>held-out loss against frozen blocks</th>' + factCell(A, verdictOf(ra).text) + factCell(undo, vu.text) + '</tr></table>',
        { a: A, b: undo, shown: 'b', step: last, open: bottom, node: forkOf(ru.graph, bottom) });
    }
    // What does rescue it, when the page has it: a warmup of A's placement.
    const warm = DATA.runs.findIndex(function (r) { return /^post, warmup [1-9]\d*$/.test(r.name) && r.name.split(',')[0] === ra.name.split(',')[0] && r.graph; });
    if (warm >= 0) {
      const rw = DATA.runs[warm], vw = verdictOf(rw);
      add('What rescues it: a warmup', ['intervention: sufficiency'],
        '<p>' + name(warm) + ' ramps every update up over its first steps; it ' + escapeHtml(vw.text) + '. In <code>causes</code> a warmup of the blocks alone is enough.</p>' +
        '<table class="numbers"><tr><th></th><th>A: ' + escapeHtml(ra.name) + '</th><th>B: ' + escapeHtml(rw.name) + '</th></tr>' +
        '<tr><th>' + spreadLabel + '</th>' + spread(A, last) + spread(warm, last) + '</tr>' +
        '<tr><th>held-out loss against frozen blocks</th>' + factCell(A, verdictOf(ra).text) + factCell(warm, vw.text) + '</tr></table>',
        { a: A, b: warm, shown: 'b', step: last, open: topBlock, node: forkOf(rw.graph, topBlock) });
    }
    const buttons = $('chain-buttons');
    buttons.innerHTML = '';
    tour.forEach(function (t, k) {
      const li = document.createElement('li');
      li.innerHTML = '<div class="link-head"><b>' + escapeHtml(t.title) + '</b> ' + t.evidence.map(tag).join(' ') + '</div>' +
        '<div class="link-body">' + t.body + '</div>';
      const run = t.action.shown === 'b' ? t.action.b : t.action.a;
      li.setAttribute('data-run', run);
      li.setAttribute('data-step', t.action.step);
      li.setAttribute('data-node', t.action.node);
      li.setAttribute('data-open', t.action.open);
      li.setAttribute('data-evidence', t.evidence.join('; '));
      li.onclick = function () { doTour(k); };
      list.appendChild(li);
      const button = document.createElement('button');
      button.type = 'button';
      button.textContent = String(k + 1);
      button.title = t.title;
      button.onclick = function () { doTour(k); };
      buttons.appendChild(button);
    });
    $('chain-prev').onclick = function () { if (tourAt > 0) doTour(tourAt - 1); };
    $('chain-next').onclick = function () { if (tourAt < tour.length - 1) doTour(tourAt + 1); };
  }
  function doTour(k) {
    const t = tour[k].action;
    tourAt = k;
    Array.prototype.forEach.call($('tour').children, function (li, j) { li.classList.toggle('active', j === k); });
    // the active link in view in the list (the question and the control above it stay put)
    const list = $('tour'), li = list.children[k];
    if (li.offsetTop < list.scrollTop || li.offsetTop + li.offsetHeight > list.scrollTop + list.clientHeight) list.scrollTop = li.offsetTop;
    Array.prototype.forEach.call($('chain-buttons').children, function (b, j) { b.classList.toggle('on', j === k); });
    $('chain-prev').disabled = k === 0;
    $('chain-next').disabled = k === tour.length - 1;
    setRuns(t.a, t.b, t.shown);
    setStep(t.step);
    Object.keys(state.folded).forEach(function (s) { unfold(s, true); });
    t.fold.forEach(function (s) { fold(s); });
    if (t.node >= 0) select(t.node);
    if (view.clusters[t.open]) {
      // the open block at the readable zoom: its top at the top of the view, its middle (where its
      // sublayers sit beside the stream) in the middle
      const b = outer(view.clusters[t.open].getBBox()), v = viewSize(), z = READABLE;
      setZoom([v.w / 2 - z * (b.x + b.width / 2), 28 - z * b.y], z);
      Object.keys(state.folded).forEach(drawCard);
    } else {
      defaultView();
    }
  }

  // ---- the toolbar ----
  $('fold-all').onclick = function () {
    const g = graphShown();
    if (!g) return;
    g.clusters.forEach(function (c) { if (c.parent === '' && c.forks.length) fold(c.scope); });
  };
  $('unfold-all').onclick = function () { Object.keys(state.folded).forEach(function (s) { unfold(s, true); }); };
  $('fit').onclick = fit;

  // ---- the address: page.html#run=1&b=3&show=b&step=300&scale=run&node=4&fold=blocks.0,blocks.1&zoom=2 ----
  // opens the page in that state (run, b: index or name; show: a or b; step: a snapshot step; fold: the
  // folded modules, "none" for none). #selfcheck runs the self-check.
  function applyAddress() {
    const p = {};
    location.hash.replace(/^#/, '').split('&').forEach(function (kv) {
      const i = kv.indexOf('=');
      if (i > 0) p[decodeURIComponent(kv.slice(0, i))] = decodeURIComponent(kv.slice(i + 1));
    });
    if (p.tour !== undefined && tour[+p.tour - 1]) { doTour(+p.tour - 1); return; }
    const runIndex = function (v) {
      const byName = runNamed(v);
      return byName >= 0 ? byName : (/^\d+$/.test(v) && +v < DATA.runs.length ? +v : -2);
    };
    let a = state.a, b = state.b;
    if (p.run !== undefined && runIndex(p.run) >= 0) a = runIndex(p.run);
    if (p.b !== undefined) b = p.b === '-1' ? -1 : runIndex(p.b) >= 0 ? runIndex(p.b) : b;
    setRuns(a, b, p.show === 'b' ? 'b' : 'a');
    if (p.scale === 'run' || p.scale === 'step' || p.scale === 'both') { $('scale-mode').value = p.scale; $('scale-mode').onchange(); }
    const g = graphShown();
    if (g && p.step !== undefined) setStep(+p.step);
    if (g && p.fold) {
      Object.keys(state.folded).forEach(function (s) { unfold(s, true); });
      if (p.fold !== 'none') p.fold.split(',').forEach(function (scope) { fold(scope); });
    }
    if (g && p.node !== undefined && g.nodes[+p.node]) {
      select(+p.node);
      if (p.zoom) { view.zoom.scale(+p.zoom); centreOn(+p.node); }
    }
  }

  // ---- start ----
  const started = performance.now();
  if (!DATA.runs.length) {
    $('graph-note').hidden = false;
    $('graph-note').textContent = 'This page holds no runs.';
  } else {
    fillRunPickers();
    drawGraph(false);
    drawCharts();
    drawFacts();
    buildTour();
    const g = graphShown();
    if (tour.length) doTour(0);  // the page opens on the chain's first link
    else if (g && g.forks.length) select(g.forks[0].at);
    if (location.hash.length > 1 && location.hash !== '#selfcheck') applyAddress();
  }
  document.body.setAttribute('data-init-ms', (performance.now() - started).toFixed(1));
  document.body.setAttribute('data-ready-ms', performance.now().toFixed(1));

  // The self-check (page.html#selfcheck): what the browser test runs.
  window.gradscopeExplorer = {
    DATA: DATA, state: state, view: view, charts: charts, tour: tour, verdictOf: verdictOf, doTour: doTour, fmt: fmt, fmt3: fmt3, stats: stats, READABLE: READABLE,
    select: select, fold: fold, unfold: unfold, showStep: showStep, setStep: setStep, currentScale: currentScale, cardLines: cardLines,
    snapshot: snapshot, graphShown: graphShown, shownIndex: shownIndex, pathView: pathView, pathProfiles: pathProfiles, sameNode: sameNode
  };
  if (location.hash === '#selfcheck' && window.gradscopeSelfcheck) window.gradscopeSelfcheck(window.gradscopeExplorer);
})();
