// The page's self-check, run when its address ends in #selfcheck (tests/explorer_browser_check.cpp opens
// it in headless Chromium). It acts as a user would, through the DOM (clicks, the scrubber's input
// event, the run pickers' change event), and compares what the page then shows with the embedded data.
// Each check writes "PASS name" or "FAIL name: why" into <pre id="selfcheck">, then a last line
// "SELFCHECK DONE <passed> passed <failed> failed".
window.gradscopeSelfcheck = function (E) {
  'use strict';
  const lines = [];
  let passed = 0, failed = 0;
  function check(name, ok, why) {
    if (ok) { passed++; lines.push('PASS ' + name); } else { failed++; lines.push('FAIL ' + name + ': ' + why); }
  }
  function attempt(name, fn) {
    try { fn(); } catch (e) { check(name, false, 'threw ' + e + (e && e.stack ? ' ' + e.stack.split('\n')[1] : '')); }
  }
  const D = E.DATA, $ = function (id) { return document.getElementById(id); };
  const click = function (el) { el.dispatchEvent(new MouseEvent('click', { bubbles: true, cancelable: true })); };
  const graphRun = D.runs.findIndex(function (r) { return r.graph && r.graph.snapshots.length > 1; });
  const snapOf = function (g) { return g.snapshots.findIndex(function (x) { return x.step === E.state.step; }); };

  // 0. The default view, at the window the test opens (1280x800): runs A and B are Post-LN and Pre-LN
  // without warmup, both in the charts; every label on screen is at least 11 px.
  attempt('default view', function () {
    const post = D.runs.findIndex(function (r) { return r.name === 'post, warmup 0'; });
    const pre = D.runs.findIndex(function (r) { return r.name === 'pre, warmup 0'; });
    check('default: run A is post, warmup 0 and run B pre, warmup 0', post >= 0 && pre >= 0 && E.state.a === post && E.state.b === pre &&
      +$('run-a').value === post && +$('run-b').value === pre, 'A ' + E.state.a + ', B ' + E.state.b);
    const loss = E.charts.find(function (c) { return c.id === 'loss'; });
    const runsDrawn = loss ? loss.chart.data.datasets.map(function (d) { return d.run; }) : [];
    check('default: the loss chart draws both runs', runsDrawn.indexOf(post) >= 0 && runsDrawn.indexOf(pre) >= 0, 'runs ' + runsDrawn);
    check('default: the graph can show either run', !$('show-a').disabled && !$('show-b').disabled && $('show-a').classList.contains('on'),
      'toggle state');
    const box = $('graph').getBoundingClientRect();
    let visible = 0, smallest = Infinity, smallText = '';
    document.querySelectorAll('#graph svg text').forEach(function (t) {
      if (!t.textContent.trim()) return;
      const r = t.getBoundingClientRect();
      if (r.width === 0 || r.right < box.left || r.left > box.right || r.bottom < box.top || r.top > box.bottom) return;
      const size = parseFloat(t.getAttribute('font-size') || getComputedStyle(t).fontSize) * t.getScreenCTM().a;
      visible++;
      if (size < smallest) { smallest = size; smallText = t.textContent; }
    });
    check('default: labels are on screen', visible >= 5, visible + ' texts in view');
    check('default: every label on screen is at least 11 px', smallest >= 11, 'smallest ' + smallest.toFixed(1) + ' px: "' + smallText + '"');
    // the page opens on the chain's first link: its block open, every other block folded into a card
    const first = document.querySelector('#tour li[data-open]'), blocks = D.runs[post].graph.clusters.filter(function (c) {
      return c.parent === '' && c.forks.length;
    });
    check('default: the first link is shown, its block open and the others folded into cards', !!first && first.classList.contains('active') &&
      !E.state.folded[first.getAttribute('data-open')] && document.querySelectorAll('g.fold-card').length === blocks.length - 1,
      document.querySelectorAll('g.fold-card').length + ' cards of ' + blocks.length + ' blocks');
    // the colour scale spans both runs and every step: the legend's ends are its extremes
    let hi = -Infinity;
    [post, pre].forEach(function (i) { D.runs[i].graph.snapshots.forEach(function (x) { x.edge_norm.forEach(function (n) { if (n > 0) hi = Math.max(hi, n); }); }); });
    check('default: one colour scale over both runs and every step', Math.abs(E.currentScale().value(1) - hi) <= 1e-9 * hi,
      'scale top ' + E.currentScale().value(1) + ', largest norm ' + hi);
    check('default: the legend has numbers', document.querySelectorAll('#legend .ticks span').length >= 2, 'no ticks');
  });

  check('data: the page holds runs', D.runs.length > 0, 'no runs');
  check('data: a run has a graph with two or more snapshots', graphRun >= 0, 'none');
  if (graphRun >= 0 && E.state.a !== graphRun) { $('run-a').value = graphRun; $('run-a').dispatchEvent(new Event('change')); }
  const g = graphRun >= 0 ? D.runs[graphRun].graph : null;

  // 1. Select a node: a residual fork (it has a gradient, contributions and a skip/branch split).
  attempt('select a node', function () {
    const i = g.forks.length ? g.forks[0].at : g.nodes.findIndex(function (n) { return n.inputs.length > 0; });
    const el = E.view.nodes[i];
    check('select: the node is drawn', !!el, 'no SVG element n' + i);
    click(el.querySelector('text') || el);
    const panel = $('panel'), s = g.snapshots[snapOf(g)];
    const text = function (k) { const x = panel.querySelector('[data-k="' + k + '"]'); return x ? x.textContent : null; };
    check('select: the panel shows the tape index', text('index') === '#' + i, 'panel says ' + text('index'));
    check('select: the panel shows the op', text('op') === g.nodes[i].op, 'panel says ' + text('op') + ', data ' + g.nodes[i].op);
    const grad = E.stats(s.grad[i]);
    const shownGrad = panel.querySelector('[data-k="grad"] [data-k="norm"]');
    check('select: |grad| in the panel is the data\'s', shownGrad && shownGrad.textContent === E.fmt(grad.norm),
      'panel ' + (shownGrad && shownGrad.textContent) + ', data ' + E.fmt(grad.norm));
    const shownMean = panel.querySelector('[data-k="value"] [data-k="mean"]');
    check('select: the value\'s mean in the panel is the data\'s', shownMean && shownMean.textContent === E.fmt(E.stats(s.value[i]).mean),
      'panel ' + (shownMean && shownMean.textContent));
    const expected = [];
    g.edges.forEach(function (e, k) { if (e.from === i && s.edge_norm[k] !== null) expected.push(k); });
    const rows = panel.querySelectorAll('[data-k="contributions"] tr[data-edge]');
    check('select: one contribution row per edge that carried a gradient back', rows.length === expected.length && rows.length > 0,
      rows.length + ' rows, ' + expected.length + ' edges');
    let same = true, share = 0;
    rows.forEach(function (r, k) {
      const edge = +r.getAttribute('data-edge');
      same = same && edge === expected[k] && r.querySelector('[data-k="c-norm"]').textContent === E.fmt(s.edge_norm[edge]);
      share += s.edge_share[edge];
    });
    check('select: each contribution\'s |c| is the data\'s', same, 'a row differs');
    check('select: the contributions\' shares sum to 1', Math.abs(share - 1) < 1e-3, 'sum ' + share);
    if (g.nodes[i].fork >= 0) {
      const f = s.forks[g.nodes[i].fork];
      check('select: the fork\'s skip and branch parts are the data\'s',
        text('fork-skip') === E.fmt(f[0]) && text('fork-branch') === E.fmt(f[1]),
        'panel ' + text('fork-skip') + ' | ' + text('fork-branch') + ', data ' + E.fmt(f[0]) + ' | ' + E.fmt(f[1]));
    }
    check('select: the node is marked selected', el.classList.contains('selected'), 'no class');
  });

  // 2. Scrub to another step: an edge whose colour the data says changes is recoloured and relabelled.
  attempt('scrub', function () {
    const last = g.snapshots.length - 1, range = $('step');
    // The expected colours, from the scale of each step's own norms (the default "step" mode).
    const before = E.currentScale(), s0 = g.snapshots[snapOf(g)], s1 = g.snapshots[last];
    let k = -1;
    range.value = last;
    range.dispatchEvent(new Event('input'));
    const after = E.currentScale();
    g.edges.forEach(function (e, j) {
      if (k < 0 && E.view.edges[j] && s0.edge_norm[j] !== null && s1.edge_norm[j] !== null &&
          before.colour(s0.edge_norm[j]) !== after.colour(s1.edge_norm[j])) k = j;
    });
    check('scrub: the scrubber moved to the last snapshot', snapOf(g) === last && $('step-label').textContent === String(s1.step),
      'label ' + $('step-label').textContent);
    check('scrub: some edge changes colour between the steps', k >= 0, 'none differs');
    const path = E.view.edges[k].paths[0], want = after.colour(s1.edge_norm[k]);
    check('scrub: the edge has the colour of its norm at the new step', path.getAttribute('stroke') === want,
      'stroke ' + path.getAttribute('stroke') + ', expected ' + want + ' for |g| ' + s1.edge_norm[k]);
    const label = E.view.edges[k].text;
    check('scrub: the edge\'s label is its norm at the new step', !label || label.textContent.split(' ').pop() === E.fmt3(s1.edge_norm[k]),
      'label ' + (label && label.textContent) + ', data ' + E.fmt3(s1.edge_norm[k]));
    range.value = 0;
    range.dispatchEvent(new Event('input'));
    check('scrub: back at the first step, the first colour returns', path.getAttribute('stroke') === before.colour(s0.edge_norm[k]),
      'stroke ' + path.getAttribute('stroke'));
  });

  // 3. Fold a block: click its cluster's name; its card shows its forks' skip and branch norms.
  attempt('fold', function () {
    click($('unfold-all'));
    const c = g.clusters.find(function (x) { return x.parent === '' && x.forks.length; });
    check('fold: a block with residual connections exists', !!c, 'none');
    const label = E.view.clusters[c.scope].querySelector('text');
    click(label);
    const card = Array.prototype.find.call(document.querySelectorAll('g.fold-card'), function (x) { return x.getAttribute('data-scope') === c.scope; });
    check('fold: a card replaces ' + c.scope, !!card, 'no card');
    const s = g.snapshots[snapOf(g)], text = card.textContent;
    let all = true;
    c.forks.forEach(function (f) {
      all = all && text.indexOf('skip ' + E.fmt(s.forks[f][0]) + ' | branch ' + E.fmt(s.forks[f][1])) >= 0;
    });
    check('fold: the card shows each fork\'s skip and branch norms from the data', all, 'card says: ' + text);
    const member = g.nodes.find(function (n) { return n.scope === c.scope || n.scope.indexOf(c.scope + '.') === 0; });
    check('fold: the block\'s nodes are hidden', E.view.nodes[member.i].style.display === 'none', 'node ' + member.i + ' shown');
    click(card);
    check('fold: clicking the card unfolds it', !document.querySelector('g.fold-card') && E.view.nodes[member.i].style.display === '',
      'still folded');
  });

  // 4. Switch runs: pick another run B; the loss chart's dashed line holds that run's series.
  attempt('switch runs', function () {
    if (D.runs.length < 2) { check('switch: a second run to compare', false, 'the page has one run'); return; }
    const b = $('run-b'), target = D.runs.length - 1 === E.state.a ? 0 : D.runs.length - 1;
    b.value = target;
    b.dispatchEvent(new Event('change'));
    const entry = E.charts.find(function (c) { return c.id === 'loss'; });
    check('switch: a loss chart exists', !!entry, 'none');
    const set = entry.chart.data.datasets.find(function (d) { return d.run === target && d.label.indexOf('B: ') === 0; });
    const series = D.runs[target].series.find(function (s) { return s.chart === 'loss'; });
    let same = !!set && set.data.length === series.values.length;
    if (same) series.values.forEach(function (v, k) { same = same && set.data[k].y === v && set.data[k].x === series.steps[k]; });
    check('switch: run B\'s loss line is its data', same, set ? set.data.length + ' points, data ' + series.values.length : 'no dataset');
    check('switch: the dashed line is drawn dashed', set && set.borderDash.length === 2, 'not dashed');
    const a = $('run-a'), other = D.runs.findIndex(function (r, i) { return i !== E.state.a && r.graph; });
    if (other >= 0) {
      a.value = other;
      a.dispatchEvent(new Event('change'));
      const og = D.runs[other].graph;
      check('switch: run A\'s graph is redrawn', E.state.a === other && document.querySelectorAll('#graph g.node').length === og.nodes.length,
        document.querySelectorAll('#graph g.node').length + ' nodes drawn, data ' + og.nodes.length);
    }
  });

  // 4b. The block ladder: run A's and B's first fork of each block at this step, from the data.
  attempt('ladder', function () {
    const cells = document.querySelectorAll('#ladder td[data-scope]');
    check('ladder: a cell per block and run', cells.length >= 2, cells.length + ' cells');
    let same = true;
    cells.forEach(function (td) {
      const run = D.runs[td.getAttribute('data-run') === 'a' ? E.state.a : E.state.b], g = run.graph;
      const c = g.clusters.find(function (x) { return x.scope === td.getAttribute('data-scope'); });
      const snap = g.snapshots.filter(function (x) { return x.step <= E.state.step; }).pop();
      const ff = snap.forks[c.forks[0]];
      same = same && td.textContent === E.fmt3(ff[0]) + ' | ' + E.fmt3(ff[1]);
    });
    check('ladder: each cell shows its fork\'s skip | branch from the data', same, 'a cell differs');
  });

  // Picks Post-LN without warmup as run A and Pre-LN without warmup as run B, and shows run A.
  function postAndPre() {
    const post = D.runs.findIndex(function (r) { return r.name === 'post, warmup 0'; });
    const pre = D.runs.findIndex(function (r) { return r.name === 'pre, warmup 0'; });
    $('run-a').value = post; $('run-a').dispatchEvent(new Event('change'));
    $('run-b').value = pre; $('run-b').dispatchEvent(new Event('change'));
    click($('show-a'));
    return { post: post, pre: pre };
  }

  // 5. The graph's A/B toggle keeps the step, the folds and the zoom.
  attempt('toggle keeps the view', function () {
    const a = $('run-a'), runs = postAndPre(), post = runs.post, pre = runs.pre;
    const g = D.runs[post].graph, k = g.snapshots.length - 2;
    $('step').value = k; $('step').dispatchEvent(new Event('input'));
    const step = E.state.step, scale = E.view.zoom.scale(), t = E.view.zoom.translate().slice();
    const c = g.clusters.find(function (x) { return x.parent === '' && x.forks.length; });
    E.fold(c.scope);
    click($('show-b'));
    check('toggle: the graph now shows run B', E.shownIndex() === pre &&
      document.querySelectorAll('#graph g.node').length === D.runs[pre].graph.nodes.length, 'shows ' + E.shownIndex());
    check('toggle: the step stays', E.state.step === step && $('step-label').textContent === String(step), 'step ' + E.state.step + ', was ' + step);
    check('toggle: the fold stays', !!E.state.folded[c.scope] && !!document.querySelector('g.fold-card[data-scope="' + c.scope + '"]'), 'not folded');
    check('toggle: the zoom stays', E.view.zoom.scale() === scale && E.view.zoom.translate()[0] === t[0] && E.view.zoom.translate()[1] === t[1],
      'scale ' + E.view.zoom.scale() + ', was ' + scale);
    a.value = D.runs.length - 1 === post ? 0 : D.runs.length - 1; a.dispatchEvent(new Event('change'));
    check('toggle: picking another run A keeps the step', E.state.step === step, 'step ' + E.state.step);
    a.value = post; a.dispatchEvent(new Event('change'));
  });

  // 5b. A node's gradient by path length: the panel draws runs A's and B's profiles as bars on one axis,
  // each the data's shares of the same node (by module, label and op) at the step.
  attempt('path profile', function () {
    const a = $('run-a'), runs = postAndPre(), post = runs.post, pre = runs.pre;
    const gp = D.runs[post].graph, gq = D.runs[pre].graph;
    const i = gp.nodes.findIndex(function (n) { return n.label === 'emb'; });
    click(E.view.nodes[i].querySelector('text') || E.view.nodes[i]);
    const drawn = document.querySelectorAll('#panel [data-k="paths"] .paths-run[data-drawn="1"]');
    check('paths: the panel draws the profile of both runs', drawn.length === 2 && !!E.pathView.chart &&
      E.pathView.chart.data.datasets.length === 2, drawn.length + ' runs drawn');
    const chart = E.pathView.chart, j = E.sameNode(gp, i, gq);
    check('paths: B\'s node is the same node', j >= 0 && gq.nodes[j].label === 'emb', 'node ' + j);
    let same = true, why = '';
    [[post, gp, i], [pre, gq, j]].forEach(function (r, k) {
      const snap = r[1].snapshots[snapOf(r[1])], p = snap.paths[r[2]], set = chart.data.datasets[k];
      const want = p[2].slice();
      while (want.length <= snap.path_max) want.push(0);
      if (set.run !== r[0] || set.data.length !== want.length || set.data.some(function (v, x) { return v !== want[x]; })) { same = false; why = 'run ' + r[0] + ' bars ' + set.data; }
      const text = drawn[k].querySelector('[data-k="share0"]').textContent;
      if (text !== E.fmt(p[2][0])) { same = false; why = 'share of k = 0 shown ' + text + ', data ' + E.fmt(p[2][0]); }
      const sum = p[2].reduce(function (x, y) { return x + y; }, 0);
      if (Math.abs(sum - 1) > 1e-3) { same = false; why = 'shares sum to ' + sum; }
    });
    check('paths: each run\'s bars are its stored shares, and they sum to 1', same, why);
    const axes = Object.keys(chart.scales).sort().join(',');
    check('paths: both runs on one y axis', axes === 'x,y' && chart.data.datasets.every(function (d) { return !d.yAxisID || d.yAxisID === 'y'; }),
      'axes ' + axes);
    check('paths: a caption says what k and the share are', /residual branches/.test($('panel').textContent) && /sum to 1/.test($('panel').textContent),
      'no caption');
  });

  // 6. The chain (the tour): each link sets the run, step and node it names, opens its block with the
  // others folded, names its evidence, and shows numbers that are the data's.
  attempt('tour', function () {
    const items = document.querySelectorAll('#tour li[data-step]');
    const kinds = ['measurement', 'definition', 'intervention: sufficiency', 'intervention: not sufficient'];
    check('chain: it has its links', items.length >= 4, items.length + ' links');
    items.forEach(function (li, k) {
      click(li);
      const run = +li.getAttribute('data-run'), step = +li.getAttribute('data-step'), node = +li.getAttribute('data-node');
      const title = document.querySelector('#panel [data-k="title"]');
      check('chain ' + (k + 1) + ': shows run ' + run + ' at step ' + step + ', node ' + node,
        E.shownIndex() === run && E.state.step === step && $('step-label').textContent === String(step) &&
        (node < 0 || (E.state.selected === node && title && title.textContent.indexOf('#' + node + ' ') === 0)),
        'run ' + E.shownIndex() + ', step ' + E.state.step + ', node ' + E.state.selected);
      check('chain ' + (k + 1) + ': it is the active link', li.classList.contains('active') &&
        $('chain-buttons').children[k].classList.contains('on'), 'not marked active');
      const open = li.getAttribute('data-open'), g = D.runs[run].graph;
      const tops = g.clusters.filter(function (c) { return c.parent === '' && c.forks.length; }).map(function (c) { return c.scope; });
      check('chain ' + (k + 1) + ': ' + open + ' is open and every other block folded', tops.indexOf(open) >= 0 && !E.state.folded[open] &&
        tops.every(function (s) { return s === open || E.state.folded[s]; }), 'folded: ' + Object.keys(E.state.folded).join(','));
      const evidence = li.getAttribute('data-evidence').split('; ');
      const chips = Array.prototype.map.call(li.querySelectorAll('.link-head .evidence'), function (x) { return x.textContent; });
      check('chain ' + (k + 1) + ': its evidence tags are named and shown', evidence.length > 0 &&
        evidence.every(function (t) { return kinds.indexOf(t) >= 0; }) && chips.join('; ') === evidence.join('; '),
        'data-evidence "' + li.getAttribute('data-evidence') + '", shown "' + chips.join('; ') + '"');
      let cells = 0, same = true, why = '';
      li.querySelectorAll('td[data-chart]').forEach(function (td) {
        const r = D.runs[+td.getAttribute('data-run')];
        const s = r.series.find(function (x) { return x.chart === td.getAttribute('data-chart') && x.name === td.getAttribute('data-name'); });
        const at = s ? s.steps.indexOf(+td.getAttribute('data-at')) : -1;
        const v = at >= 0 ? s.values[at] : null;
        cells++;
        if (v === null || td.textContent !== E.fmt(v)) { same = false; why = td.getAttribute('data-chart') + ' ' + td.textContent + ' vs ' + E.fmt(v); }
      });
      li.querySelectorAll('td[data-fact="verdict"]').forEach(function (td) {
        const r = D.runs[+td.getAttribute('data-run')], f = r.facts.find(function (x) { return x[0] === 'verdict'; });
        cells++;
        if (!f || td.textContent !== f[1]) { same = false; why = 'verdict ' + td.textContent; }
      });
      li.querySelectorAll('td[data-paths]').forEach(function (td) {
        const r = D.runs[+td.getAttribute('data-run')], at = +td.getAttribute('data-at');
        const snap = r.graph.snapshots.find(function (x) { return x.step === at; });
        const p = snap && snap.paths ? snap.paths[+td.getAttribute('data-node')] : null;
        const v = p ? (td.getAttribute('data-paths') === 'share0' ? p[2][0] : p[0]) : null;
        cells++;
        if (v === null || td.textContent !== E.fmt(v)) { same = false; why = 'paths ' + td.textContent + ' vs ' + E.fmt(v); }
      });
      check('chain ' + (k + 1) + ': its numbers are the data\'s', cells > 0 && same, cells + ' numbers; ' + why);
    });
    check('tour: the project\'s answer is on the page', /warmup/.test($('answer').textContent), 'no answer text');
  });

  // 6b. Every run's verdict is against its frozen-blocks baseline and agrees with the two losses it quotes.
  attempt('verdicts', function () {
    D.runs.forEach(function (r) {
      const v = E.verdictOf(r);
      check('verdict of ' + r.name + ': against frozen blocks, and as its numbers say', /frozen blocks/.test(v.text) && isFinite(v.frozen) &&
        v.beats === (v.loss < v.frozen - v.margin), '"' + v.text + '"');
    });
  });

  // 7. A constant series (the learning rate without warmup) gets an axis around its value.
  attempt('constant axis', function () {
    click($('more-charts'));
    const lr = E.charts.find(function (c) { return c.id === 'all_lr'; });
    check('charts: every chart is behind the toggle', !!lr, 'no lr chart');
    const set = lr.chart.data.datasets.find(function (d) { return d.run === E.state.a; });
    const v = set.data[set.data.length - 1].y, y = lr.chart.scales.y;
    check('charts: a constant learning rate\'s axis holds it and no negative rate', y.min >= 0 && y.min < v && v < y.max && y.max <= 3 * v,
      'axis ' + y.min + '..' + y.max + ' for ' + v);
  });

  const out = document.getElementById('selfcheck');
  out.hidden = false;
  out.textContent = lines.join('\n') + '\nSELFCHECK DONE ' + passed + ' passed ' + failed + ' failed\n';
};
