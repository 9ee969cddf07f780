// The explorer page as a person uses it: Debian's Chromium, driven from outside the page by
// playwright-core, with real mouse clicks and keys (no event dispatched from inside the page).
// The page's own #selfcheck (selfcheck.js) checks the page against its data; this script checks what a
// user sees and does at 1280x800: the first screen opens on the answer (the question, link 1's numbers
// for both runs and the control that steps through the chain, all without scrolling), the table of
// blocks beside the graph and not over it, no JavaScript error, the default pair of runs in the menus,
// readable labels, the step kept across run switches, each link of the chain doing what it says, and
// the ln-undo-gain run judged against the frozen-blocks baseline as its own numbers say, and the identity
// path's share and a node's path-length profile for both runs.
//
//   node tests/browser/explorer_clicks.mjs PAGE.html
//
// Prints "ok ..." or "FAIL ..." per check; exit 0 all ok, 1 any FAIL, 77 (ctest: skipped) only when
// playwright-core or Chromium is missing (scripts/install-deps installs both). A Chromium that is
// installed and cannot start fails the test.
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const SKIP = 77;
const CHROMIUM = '/usr/bin/chromium';
const pagePath = process.argv[2];
if (!pagePath || !existsSync(pagePath)) {
  console.log('FAIL usage: node explorer_clicks.mjs PAGE.html (an existing explorer page; got ' + pagePath + ')');
  process.exit(1);
}
let chromium;
try {
  ({ chromium } = await import('playwright-core'));
} catch (e) {
  console.log('SKIPPED: playwright-core is not installed (npm ci --prefix tests/browser; scripts/install-deps does)');
  process.exit(SKIP);
}
if (!existsSync(CHROMIUM)) {
  console.log('SKIPPED: ' + CHROMIUM + ' is missing (apt-get install chromium; scripts/install-deps does)');
  process.exit(SKIP);
}
let browser;
try {
  browser = await chromium.launch({
    executablePath: CHROMIUM, headless: true, timeout: 60000,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
  });
} catch (e) {
  console.log('FAIL Chromium is installed but could not start: ' + String(e.message).split('\n')[0]);
  process.exit(1);
}

let failed = 0;
function check(name, ok, why) {
  if (ok) console.log('ok ' + name);
  else { failed++; console.log('FAIL ' + name + ': ' + why); }
}

const started = Date.now();
const errors = [];
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.setDefaultTimeout(15000);
  page.on('console', (m) => { if (m.type() === 'error') errors.push('console: ' + m.text()); });
  page.on('pageerror', (e) => errors.push('page error: ' + e.message));
  await page.goto(pathToFileURL(resolve(pagePath)).href);
  await page.waitForSelector('#tour li[data-step]', { state: 'visible' });

  // What the user sees: the menus' chosen run names, the slider, the graph's title, the panel's node.
  const seen = () => page.evaluate(() => {
    const sel = (id) => { const s = document.getElementById(id); return s.selectedIndex >= 0 ? s.options[s.selectedIndex].text : ''; };
    const title = document.querySelector('#panel [data-k="title"]');
    return {
      a: sel('run-a'), b: sel('run-b'), slider: document.getElementById('step').value,
      step: document.getElementById('step-label').textContent, graph: document.getElementById('graph-title').textContent,
      node: title ? title.textContent : '', aOn: document.getElementById('show-a').classList.contains('on'),
      bOn: document.getElementById('show-b').classList.contains('on'), jsErrors: document.getElementById('js-errors').textContent,
    };
  });

  // 1. The default view: A is Post-LN and B Pre-LN, both without warmup; the graph shows A.
  let v = await seen();
  check('default: run A is "post, warmup 0"', v.a === 'post, warmup 0', 'menu says "' + v.a + '"');
  check('default: run B is "pre, warmup 0"', v.b === 'pre, warmup 0', 'menu says "' + v.b + '"');
  check('default: the graph shows run A', v.graph === 'A: ' + v.a && v.aOn && !v.bOn, 'graph title "' + v.graph + '"');
  const facts = await page.locator('#facts').textContent();
  check('default: "The runs" describes both runs', facts.includes('post, warmup 0') && facts.includes('pre, warmup 0'), 'facts: ' + facts.slice(0, 200));

  // 1b. The first screen, before any scroll or click: the question, the first link of the chain with
  // its numbers for runs A and B (those of the data), and the chain's control, all inside 1280x800.
  const first = await page.evaluate(() => {
    const inView = (el) => {
      if (!el) return false;
      const r = el.getBoundingClientRect();
      return r.width > 0 && r.height > 0 && r.left >= 0 && r.top >= 0 && r.right <= 1280 && r.bottom <= 800;
    };
    const E = window.gradscopeExplorer, q = document.getElementById('question');
    const li = document.querySelector('#tour li.active');
    const cells = li ? Array.from(li.querySelectorAll('td[data-chart]')) : [];
    const numbers = cells.map((td) => {
      const run = E.DATA.runs[+td.dataset.run], s = run.series.find((x) => x.chart === td.dataset.chart && x.name === td.dataset.name);
      const k = s ? s.steps.indexOf(+td.dataset.at) : -1;
      return { run: run.name, chart: td.dataset.chart, text: td.textContent, data: k >= 0 ? E.fmt(s.values[k]) : null, inView: inView(td) };
    });
    return {
      question: q ? q.textContent : '', questionInView: inView(q), title: li ? li.querySelector('.link-head b').textContent : '',
      liInView: inView(li), numbers, next: inView(document.getElementById('chain-next')), prev: inView(document.getElementById('chain-prev')),
      buttons: Array.from(document.querySelectorAll('#chain-buttons button')).map(inView),
    };
  });
  check('first screen: the question is in the first viewport', first.question === 'Why does Pre-LN train where Post-LN gets stuck?' &&
    first.questionInView, '"' + first.question + '", in view: ' + first.questionInView);
  check('first screen: it shows the chain\'s first link', /^Link 1\b/.test(first.title) && first.liInView, 'link "' + first.title + '"');
  for (const run of ['post, warmup 0', 'pre, warmup 0']) {
    const mine = first.numbers.filter((n) => n.run === run);
    check('first screen: link 1 has numbers of "' + run + '", in the viewport and as the data holds them',
      mine.length >= 2 && mine.every((n) => n.inView && n.data !== null && n.text === n.data),
      JSON.stringify(mine));
  }
  check('first screen: link 1 has the output move of both runs', first.numbers.filter((n) => n.chart === 'output_move').length === 2,
    JSON.stringify(first.numbers));
  check('first screen: the chain\'s control is in the viewport', first.next && first.prev && first.buttons.length >= 4 && first.buttons.every((x) => x),
    'next ' + first.next + ', previous ' + first.prev + ', buttons ' + first.buttons);

  // 1c. The table of blocks is beside the graph, not over it; the graph opens with link 1's block
  // unfolded and on screen.
  const boxes = await page.evaluate(() => {
    const E = window.gradscopeExplorer, r = (id) => document.getElementById(id).getBoundingClientRect();
    const g = r('graph'), l = r('ladder'), open = document.querySelector('#tour li.active').dataset.open;
    const cluster = E.view.clusters[open], c = cluster ? cluster.getBoundingClientRect() : null;
    return {
      graph: [g.left, g.top, g.right, g.bottom], ladder: [l.left, l.top, l.right, l.bottom], ladderShown: document.querySelectorAll('#ladder td[data-scope]').length > 0,
      open, folded: !!E.state.folded[open],
      clusterOnScreen: !!c && c.right > g.left && c.left < g.right && c.bottom > g.top && c.top < g.bottom,
    };
  });
  const [gl, gt, gr, gb] = boxes.graph, [ll, lt, lr, lb] = boxes.ladder;
  check('layout: the table of blocks is shown', boxes.ladderShown && lr > ll && lb > lt, 'ladder box ' + boxes.ladder);
  check('layout: the table of blocks does not overlap the graph', lr <= gl || ll >= gr || lb <= gt || lt >= gb,
    'graph ' + boxes.graph.map(Math.round) + ', table ' + boxes.ladder.map(Math.round));
  check('layout: both are inside the first viewport\'s width', gr <= 1280 && lr <= 1280, 'graph right ' + gr + ', table right ' + lr);
  check('layout: the graph opens with ' + boxes.open + ' unfolded and on screen', !boxes.folded && boxes.clusterOnScreen,
    'folded ' + boxes.folded + ', on screen ' + boxes.clusterOnScreen);

  // 1d. The control steps through the chain: Next, then a numbered button, each change the link shown
  // and its evidence tags; Previous goes back.
  const shownLink = () => page.evaluate(() => {
    const li = document.querySelector('#tour li.active');
    return li ? { title: li.querySelector('.link-head b').textContent, evidence: li.dataset.evidence,
      chips: Array.from(li.querySelectorAll('.link-head .evidence')).map((x) => x.textContent).join('; ') } : null;
  });
  const link1 = await shownLink();
  await page.click('#chain-next');
  const link2 = await shownLink();
  check('chain: Next shows another link', !!link2 && link2.title !== link1.title && /^Link 2\b/.test(link2.title), JSON.stringify(link2));
  await page.click('#chain-buttons button:nth-child(3)');
  const link3 = await shownLink();
  check('chain: button 3 shows link 3 and another evidence tag', !!link3 && /^Link 3\b/.test(link3.title) &&
    link3.evidence !== link2.evidence && link3.chips === link3.evidence, JSON.stringify(link3));
  await page.click('#chain-prev');
  const back = await shownLink();
  check('chain: Previous goes back to link 2', !!back && back.title === link2.title, JSON.stringify(back));
  await page.click('#chain-buttons button:nth-child(1)');

  // 1e. The vanishing-gradient link: the ln-undo-gain run's verdict names the frozen-blocks baseline and
  // says what the losses the page carries say (beats only when its held-out loss is below the frozen
  // one minus the margin).
  const undoLink = page.locator('#tour li', { hasText: 'ln-undo-gain' }).first();
  if (await undoLink.count()) {
    await undoLink.click();
    const u = await page.evaluate(() => {
      const E = window.gradscopeExplorer, li = document.querySelector('#tour li.active');
      const run = E.DATA.runs[+li.dataset.run], fact = (k) => (run.facts.find((f) => f[0] === k) || ['', ''])[1];
      const td = li.querySelector('td[data-fact="verdict"][data-run="' + li.dataset.run + '"]');
      return { name: run.name, evidence: li.dataset.evidence, cell: td ? td.textContent : '', heldOut: parseFloat(fact('held-out loss')),
        frozen: parseFloat(fact('frozen-blocks loss')), graph: document.getElementById('graph-title').textContent,
        facts: document.getElementById('facts').textContent };
    });
    const m = u.cell.match(/^(beats|does not beat) frozen blocks \(([^ ]+) vs ([^ ]+) frozen, margin ([^ )]+)\)$/);
    check('ln-undo-gain: its link shows that run, tagged intervention: not sufficient', /ln-undo-gain/.test(u.name) &&
      u.graph === 'B: ' + u.name && /intervention: not sufficient/.test(u.evidence), JSON.stringify(u).slice(0, 300));
    check('ln-undo-gain: its verdict names the frozen-blocks baseline', !!m, '"' + u.cell + '"');
    if (m) {
      const loss = parseFloat(m[2]), frozen = parseFloat(m[3]), margin = parseFloat(m[4]);
      check('ln-undo-gain: the verdict quotes the page\'s own held-out and frozen-blocks losses',
        Math.abs(loss - u.heldOut) <= 1e-3 * Math.abs(u.heldOut) && Math.abs(frozen - u.frozen) <= 1e-3 * Math.abs(u.frozen),
        m[2] + ' vs ' + u.heldOut + ', ' + m[3] + ' vs ' + u.frozen);
      check('ln-undo-gain: it says "beats" only when the numbers beat frozen blocks', (m[1] === 'beats') === (u.heldOut < u.frozen - margin),
        m[1] + ' with ' + u.heldOut + ' against ' + u.frozen + ' - ' + margin);
      check('ln-undo-gain: "The runs" table says the same verdict', u.facts.includes(u.cell), 'facts: ' + u.facts.slice(0, 300));
    }
    await page.click('#chain-buttons button:nth-child(1)');
  } else {
    check('ln-undo-gain: the page has its link', false, 'no link names ln-undo-gain');
  }

  // 1f. The identity-path link: its share of k = 0 at emb for runs A and B is the data's; its node's panel
  // draws both runs' path-length profiles. Then a real click on another node on screen: its panel draws
  // them too, on one axis.
  const identityLink = page.locator('#tour li', { hasText: 'the identity path' }).first();
  if (await identityLink.count()) {
    await identityLink.click();
    const id = await page.evaluate(() => {
      const E = window.gradscopeExplorer, li = document.querySelector('#tour li.active');
      const cells = Array.from(li.querySelectorAll('td[data-paths="share0"][data-at="' + li.dataset.step + '"]')).map((td) => {
        const run = E.DATA.runs[+td.dataset.run], snap = run.graph.snapshots.find((x) => x.step === +td.dataset.at);
        const p = snap.paths[+td.dataset.node];
        return { run: run.name, node: run.graph.nodes[+td.dataset.node].label, shown: td.textContent, data: p ? E.fmt(p[2][0]) : null };
      });
      return { evidence: li.dataset.evidence, cells, drawn: document.querySelectorAll('#panel .paths-run[data-drawn="1"]').length,
        sets: E.pathView.chart ? E.pathView.chart.data.datasets.length : 0, title: document.querySelector('#panel [data-k="title"]').textContent };
    });
    check('identity path: its link is tagged measurement', id.evidence === 'measurement', id.evidence);
    check('identity path: it shows the share of k = 0 at emb for post and pre, the data\'s numbers',
      id.cells.length === 2 && id.cells[0].run === 'post, warmup 0' && id.cells[1].run === 'pre, warmup 0' &&
      id.cells.every((c) => c.node === 'emb' && c.data !== null && c.shown === c.data), JSON.stringify(id.cells));
    check('identity path: the panel shows emb with both runs\' profiles drawn', / emb$/.test(id.title) && id.drawn === 2 && id.sets === 2,
      id.title + ': ' + id.drawn + ' drawn, ' + id.sets + ' bar sets');
    // a node of the open block, on screen, clicked with the mouse
    const target = await page.evaluate(() => {
      const E = window.gradscopeExplorer, g = E.graphShown(), box = document.getElementById('graph').getBoundingClientRect();
      const s = E.snapshot();
      for (const n of g.nodes) {
        const el = E.view.nodes[n.i];
        if (!el || el.style.display === 'none' || !s.paths || !s.paths[n.i] || n.label === 'emb' || n.i === E.state.selected) continue;
        const r = el.getBoundingClientRect(), x = r.left + r.width / 2, y = r.top + r.height / 2;
        if (x > box.left + 5 && x < box.right - 5 && y > box.top + 30 && y < box.bottom - 5 && document.elementFromPoint(x, y) &&
            el.contains(document.elementFromPoint(x, y))) return { i: n.i, x, y };
      }
      return null;
    });
    check('paths: a node with a gradient is on screen to click', !!target, 'none');
    if (target) {
      await page.mouse.click(target.x, target.y);
      const pv = await page.evaluate(() => {
        const E = window.gradscopeExplorer, c = E.pathView.chart, canvas = document.getElementById('paths-chart');
        return { title: document.querySelector('#panel [data-k="title"]').textContent,
          drawn: Array.from(document.querySelectorAll('#panel .paths-run[data-drawn="1"]')).map((d) => d.dataset.side).join(','),
          axes: c ? Object.keys(c.scales).sort().join(',') : '', sets: c ? c.data.datasets.map((d) => d.side).join(',') : '',
          w: canvas ? canvas.getBoundingClientRect().width : 0, caption: (document.querySelector('#panel .paths-caption') || {}).textContent || '' };
      });
      check('paths: clicking node #' + target.i + ' opens its panel', pv.title.startsWith('#' + target.i + ' '), pv.title);
      check('paths: its panel draws A\'s and B\'s profiles on one y axis', pv.drawn === 'a,b' && pv.sets === 'a,b' && pv.axes === 'x,y' && pv.w > 100,
        JSON.stringify(pv));
      check('paths: the caption says what k and the share are', /residual branches/.test(pv.caption) && /sum to 1/.test(pv.caption), pv.caption);
    }
    await page.click('#chain-buttons button:nth-child(1)');
  } else {
    check('identity path: the page has its link', false, 'no link names the identity path');
  }

  // 2. Labels of the graph on screen at the default zoom: at least 11 px tall as rendered.
  const labels = await page.evaluate(() => {
    const box = document.getElementById('graph').getBoundingClientRect();
    let n = 0, smallest = Infinity, text = '';
    document.querySelectorAll('#graph svg text').forEach((t) => {
      if (!t.textContent.trim() || getComputedStyle(t).display === 'none' || t.closest('[style*="display: none"]')) return;
      const r = t.getBoundingClientRect();
      if (r.width === 0 || r.right < box.left || r.left > box.right || r.bottom < box.top || r.top > box.bottom) return;
      // font size in SVG units times the zoom (the screen transform's scale)
      const m = t.getScreenCTM();
      const px = parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
      n++;
      if (px < smallest) { smallest = px; text = t.textContent; }
    });
    return { n, smallest, text };
  });
  check('labels: the graph has text on screen', labels.n >= 5, labels.n + ' labels in view');
  check('labels: every graph label on screen is at least 11 px', labels.smallest >= 11,
    'smallest ' + labels.smallest.toFixed(1) + ' px: "' + labels.text + '"');

  // 3. Move the slider with the keyboard (click it, then End: the last snapshot), then switch runs.
  await page.click('#step');
  await page.keyboard.press('End');
  await page.keyboard.press('ArrowLeft');
  const before = await seen();
  check('slider: keys move it off step 0', before.slider !== '0' && before.step !== '0', 'slider ' + before.slider + ', step ' + before.step);
  const options = await page.locator('#run-a option').allTextContents();
  const other = options.find((o) => o !== before.a && o !== before.b);
  if (other) {
    await page.selectOption('#run-a', { label: other });
    v = await seen();
    check('run A menu: picking "' + other + '" keeps the step', v.a === other && v.slider === before.slider && v.step === before.step,
      'A "' + v.a + '", slider ' + v.slider + ' step ' + v.step + ' (was ' + before.slider + ', ' + before.step + ')');
    check('run A menu: the graph redraws run A', v.graph === 'A: ' + other, 'graph title "' + v.graph + '"');
    await page.selectOption('#run-a', { label: before.a });
  } else {
    check('run A menu: the page has a third run to pick', false, 'options ' + options.join(' / '));
  }
  await page.click('#show-b');
  v = await seen();
  check('toggle B: the graph shows run B, the step stays', v.graph === 'B: ' + v.b && v.bOn && v.slider === before.slider && v.step === before.step,
    'graph "' + v.graph + '", slider ' + v.slider + ' step ' + v.step + ' (was ' + before.slider + ', ' + before.step + ')');
  await page.click('#show-a');
  v = await seen();
  check('toggle A: the graph shows run A again, the step stays', v.graph === 'A: ' + v.a && v.aOn && v.slider === before.slider && v.step === before.step,
    'graph "' + v.graph + '", step ' + v.step);

  // 4. The chain, link by link: each click sets the step, the run and the node it names; menu A stays
  // Post-LN without warmup.
  const items = page.locator('#tour li[data-step]');
  const count = await items.count();
  check('chain: it has at least 4 links', count >= 4, count + ' links');
  for (let k = 0; k < count; k++) {
    const li = items.nth(k);
    const claim = await li.evaluate((el) => ({
      head: el.querySelector('.link-head b').textContent, run: window.gradscopeExplorer.DATA.runs[+el.dataset.run].name,
      step: el.dataset.step, node: +el.dataset.node,
    }));
    await li.click();
    v = await seen();
    const name = 'chain ' + (k + 1) + ' (' + claim.head.slice(0, 50) + ')';
    check(name + ': the slider is at step ' + claim.step, v.step === claim.step, 'step label ' + v.step);
    check(name + ': the graph shows "' + claim.run + '"', v.graph.replace(/^[AB]: /, '') === claim.run, 'graph "' + v.graph + '"');
    check(name + ': "' + claim.run + '" is in a run menu', v.a === claim.run || v.b === claim.run, 'menus "' + v.a + '" | "' + v.b + '"');
    check(name + ': menu A stays "post, warmup 0"', v.a === 'post, warmup 0', 'menu A "' + v.a + '"');
    if (claim.node >= 0) check(name + ': the panel shows node #' + claim.node, v.node.startsWith('#' + claim.node + ' '), 'panel "' + v.node + '"');
  }

  // 5. #tour=K opens the page at tour step K, as clicking it does.
  const last = await items.nth(count - 1).getAttribute('data-step');
  await page.goto(pathToFileURL(resolve(pagePath)).href + '#tour=' + count);
  await page.reload();
  await page.waitForSelector('#tour li.active');
  v = await seen();
  check('address #tour=' + count + ': the slider is at its step ' + last, v.step === last, 'step ' + v.step);

  v = await seen();
  check('no JavaScript error or console error', errors.length === 0 && !v.jsErrors, errors.concat(v.jsErrors ? [v.jsErrors] : []).join('; '));
} catch (e) {
  check('the page could be driven', false, String(e.message).split('\n')[0]);
} finally {
  await browser.close();
}
console.log((failed ? 'FAILED: ' + failed + ' check(s)' : 'all checks ok') + ' in ' + ((Date.now() - started) / 1000).toFixed(1) + ' s');
process.exit(failed ? 1 : 0);
