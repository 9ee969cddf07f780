// The explorer page as a person uses it: Debian's Chromium, driven from outside the page by
// playwright-core, with real mouse clicks and keys (no event dispatched from inside the page).
// The page's own #selfcheck (selfcheck.js) checks the page against its data; this script checks what a
// user sees and does: no JavaScript error, the default pair of runs in the menus, readable labels,
// the step kept across run switches, and each tour step doing what its text says.
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

  // 4. The tour: click each step; what its text claims (its step, the runs it names, the node #N) is
  // what the slider, the menus, the graph's title and the node panel then show.
  const items = page.locator('#tour li[data-step]');
  const count = await items.count();
  check('tour: it has at least 4 steps', count >= 4, count + ' steps');
  for (let k = 0; k < count; k++) {
    const li = items.nth(k);
    const claim = await li.evaluate((el) => ({
      text: el.textContent, head: el.querySelector('b') ? el.querySelector('b').textContent : '',
      runs: Array.from(el.querySelectorAll('i')).map((i) => i.textContent),
      headRuns: Array.from(el.querySelectorAll('b i')).map((i) => i.textContent),
      step: el.getAttribute('data-step'), node: +el.getAttribute('data-node'),
    }));
    await li.click();
    v = await seen();
    const name = 'tour ' + (k + 1) + ' (' + claim.head.replace(/:$/, '').slice(0, 50) + ')';
    // The step: the one its heading names ("Step 13: ...", "... at step 13"), else the one it sets,
    // which its text must name when it names any.
    const inHead = claim.head.match(/[Ss]tep (\d+)/);
    const want = inHead ? inHead[1] : claim.step;
    check(name + ': the slider is at step ' + want, v.step === want, 'step label ' + v.step);
    if (!inHead && /[Ss]tep \d+/.test(claim.text))
      check(name + ': the step it sets is named in its text', new RegExp('[Ss]tep ' + claim.step + '\\b').test(claim.text),
        'sets ' + claim.step + ', text: ' + claim.text);
    // The runs: the first run it names is the graph's; those its heading names are in the menus
    // ("X against A": X in menu B, A in menu A).
    const shown = claim.runs.length ? claim.runs[0] : 'post, warmup 0';
    check(name + ': the graph shows "' + shown + '"', v.graph.replace(/^[AB]: /, '') === shown, 'graph "' + v.graph + '"');
    claim.headRuns.forEach((r) => check(name + ': "' + r + '" is in a run menu', v.a === r || v.b === r, 'menus "' + v.a + '" | "' + v.b + '"'));
    check(name + ': menu A stays "post, warmup 0"', v.a === 'post, warmup 0', 'menu A "' + v.a + '"');
    // The node: "#N" in its text, else the one it selects; the panel's title starts with it.
    const hash = claim.text.match(/#(\d+) /);
    const node = hash ? +hash[1] : claim.node;
    if (node >= 0) check(name + ': the panel shows node #' + node, v.node.startsWith('#' + node + ' '), 'panel "' + v.node + '"');
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
