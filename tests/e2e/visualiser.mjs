// The visualiser in real headless Chromium (Debian's, driven by playwright-core):
// every scenario runs, the heap drawn is a valid min-heap at every step, counters and
// explanations make sense; live mode follows a real DPUB. Screenshots go to target/screenshots.
// usage: NODE_TOOLS=<dir with node_modules> node visualiser.mjs <base-url> <screenshot-dir>
// Prints "visualiser: N passed, M failed".
import { createRequire } from 'module';
const require = createRequire(process.env.NODE_TOOLS + '/');
const { chromium } = require('playwright-core');
const os = require('os'), fs = require('fs'), path = require('path');

const [base, shots] = process.argv.slice(2);
fs.mkdirSync(shots, { recursive: true });
let passed = 0;
const failures = [];
const check = (cond, what) => { if (cond) passed++; else { failures.push(what); console.log('FAIL:', what); } };

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nsqlab-chromium-'));
const ctx = await chromium.launchPersistentContext(dir, {
  executablePath: '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1280, height: 800 },
});
const page = await ctx.newPage();
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });

const heapArray = () => page.$$eval('[data-testid=heap-array] .cell[data-due]', (cells) =>
  cells.map((c) => ({ due: Number(c.dataset.due), mark: c.classList.contains('mark') })));
// Pairs (parent, child) out of heap order.
const violations = (a) => a.flatMap((v, i) => (i > 0 && a[Math.floor((i - 1) / 2)].due > v.due ? [[Math.floor((i - 1) / 2), i]] : []));
const counter = async (name) => {
  const texts = await page.$$eval(`[data-testid=${name}]`, (els) => els.map((e) => e.textContent));
  return texts.reduce((s, t) => s + Number(t.replace(/[^0-9]/g, '')), 0);
};
const explain = () => page.textContent('[data-testid=explain]');

// 1. DPUB through the heap, one step at a time: a valid min-heap after every single swap.
await page.goto(`${base}/?scenario=dpub-heap&seed=1&speed=1`);
await page.waitForSelector('[data-testid=explain]');
let sawSwap = false, maxHeap = 0;
for (let i = 0; i < 60; i++) {
  await page.click('[data-testid=step]');
  const text = await explain();
  if (text.startsWith('Swap index')) sawSwap = true;
  const heap = await heapArray();
  maxHeap = Math.max(maxHeap, heap.length);
  // Mid-sift the heap may be out of order, but only around the entry being sifted (marked);
  // between heap operations it is a valid min-heap.
  const bad = violations(heap);
  const heapStep = /^(Push|Swap|Pop|The last entry)/.test(text);
  const marked = new Set(heap.flatMap((c, j) => (c.mark ? [j] : [])));
  check(bad.every(([p, c]) => heapStep && (marked.has(p) || marked.has(c))),
    `heap order after step ${i} (${text}): ${JSON.stringify(heap.map((c) => c.due))}`);
  if (i === 29) await page.screenshot({ path: `${shots}/dpub-heap-step30.png` });
}
check(sawSwap, 'a sift swap was shown as its own step');
check(maxHeap === 7, `all seven DPUBs reached the heap (max ${maxHeap})`);
// Jumping timer by timer delivers them; the explanation names the exact firing.
for (let i = 0; i < 40 && (await counter('finished')) < 7; i++) await page.click('[data-testid=next]');
check((await counter('finished')) === 7, `all seven finished (${await counter('finished')})`);
check(page.url().includes('scenario=dpub-heap'), 'URL keeps the scenario');

// 2. Every scenario plays to the end at 100×.
const ids = await page.$$eval('button.scenario', (bs) => bs.map((b) => b.dataset.scenario));
check(ids.length >= 7, `at least 7 scenarios (${ids.length})`);
for (const id of ids) {
  await page.goto(`${base}/?scenario=${id}&seed=1&speed=100`);
  await page.waitForSelector('[data-testid=explain]');
  await page.click('[data-testid=play]');
  await page.waitForTimeout(1500);
  await page.click('[data-testid=play]');
  const finished = await counter('finished');
  check(finished > 0, `${id}: messages finished (${finished})`);
  check((await counter('depth')) === 0 && (await counter('in-flight')) === 0, `${id}: drained`);
  check((await explain()).length > 10, `${id}: explains the last step`);
  if (id === 'crash-timeout') check((await counter('timed-out')) === 1, 'crash scenario: one timeout');
  if (id === 'overflow-disk') {
    const log = await page.textContent('.log');
    check(log !== null, 'overflow scenario has a log');
  }
  if (id === 'scan-vs-exact') {
    const lates = await page.$$eval('[data-testid=lateness] .series', (ss) => ss.map((s) => [...s.querySelectorAll('rect')].map((r) => Number(r.dataset.lateMs))));
    check(lates.length === 2 && lates[0].length === 20 && lates[1].length === 20, `two lateness series of 20: ${JSON.stringify(lates)}`);
    check(lates[0].every((x) => x === 0), `exact timers are on time: ${lates[0]}`);
    check(lates[1].some((x) => x > 0), `the scan loop is late: ${lates[1]}`);
  }
  await page.screenshot({ path: `${shots}/${id}.png` });
}

// 3. Changes by hand: add a consumer, change its behaviour, crash it, delete its channel;
// messages glide between places (FLIP transforms while they move).
await page.goto(`${base}/?scenario=load-balance&seed=3&speed=1`);
await page.waitForSelector('[data-testid=explain]');
const consumers = () => page.$$eval('.node.consumer', (els) => els.length);
const before = await consumers();
await page.fill('#m-topic', 'jobs');
await page.fill('#m-channel', 'work');
await page.fill('#m-rdy', '2');
await page.click('[data-testid=add-consumer]');
check((await consumers()) === before + 1, `add consumer: ${before} -> ${await consumers()}`);
for (let i = 0; i < 10 && !(await page.$('.node.channel[data-channel=work]')); i++) await page.click('[data-testid=step]');
check(await page.$('.node.channel[data-channel=work]') !== null, `its channel is drawn (${await explain()})`);
const mine = page.locator('.node.consumer').last();
check((await mine.textContent()).includes('work · RDY 2'), `its RDY shows: ${await mine.textContent()}`);
await mine.locator('[data-testid=rdy]').fill('0');
await mine.locator('[data-testid=rdy]').dispatchEvent('change');
check((await mine.textContent()).includes('RDY 0'), 'RDY changed by hand');
await mine.locator('[data-testid=crash]').click();
check(await mine.evaluate((el) => el.classList.contains('crashed')), 'crash marks it');
await mine.locator('[data-testid=crash]').click();
check(!(await mine.evaluate((el) => el.classList.contains('crashed'))), 'recover unmarks it');
await page.fill('#m-channel', 'no such!');
await page.click('[data-testid=delete-channel]');
check((await page.textContent('[data-testid=manage-status]')).includes('names'), 'a bad name is refused');
await page.fill('#m-channel', 'work');
await page.click('[data-testid=delete-channel]');
await page.click('[data-testid=step]');
for (let i = 0; i < 20 && (await page.$('.node.channel[data-channel=work]')); i++) await page.click('[data-testid=step]');
check(await page.$('.node.channel[data-channel=work]') === null, `the deleted channel is gone (${await page.textContent('[data-testid=manage-status]')} / ${await explain()})`);
check((await consumers()) === before, `its consumer went with it (${await consumers()})`);
await page.fill('#m-topic', 'audit');
await page.click('[data-testid=create-topic]');
for (let i = 0; i < 10 && !(await page.$('.node.topic[data-topic=audit]')); i++) await page.click('[data-testid=step]');
check(await page.$('.node.topic[data-topic=audit]') !== null, 'create topic draws it');
await page.click('[data-testid=delete-topic]');
for (let i = 0; i < 10 && (await page.$('.node.topic[data-topic=audit]')); i++) await page.click('[data-testid=step]');
check(await page.$('.node.topic[data-topic=audit]') === null, 'delete topic removes it');
await page.fill('#m-topic', 'orders');
await page.fill('#m-channel', 'billing');
await page.click('[data-testid=create-channel]');
for (let i = 0; i < 10 && !(await page.$('.node.channel[data-channel=billing]')); i++) await page.click('[data-testid=step]');
check(await page.$('.node.channel[data-channel=billing]') !== null, 'create channel draws it');
// Publish a few and step: a chip that moved is drawn at its old place first (a transform),
// then glides to its new one.
await page.fill('#pub-defer', '0');
await page.fill('#pub-count', '3');
await page.click('[data-testid=publish]');
let glided = false;
for (let i = 0; i < 30 && !glided; i++) {
  await page.click('[data-testid=step]');
  glided = await page.evaluate(() => [...document.querySelectorAll('[data-flip]')].some((e) => e.style.transform === '' && e.style.transition.includes('transform')));
}
check(glided, 'a message glided to its new place');
await page.waitForTimeout(500);
await page.evaluate(() => window.scrollTo(0, 0));
await page.screenshot({ path: `${shots}/manage.png`, fullPage: true });

// 4. Phone-sized screen.
await page.setViewportSize({ width: 390, height: 844 });
await page.goto(`${base}/?scenario=load-balance&seed=1&speed=1`);
await page.waitForSelector('[data-testid=explain]');
for (let i = 0; i < 12; i++) await page.keyboard.press('ArrowRight');
check((await page.textContent('[data-testid=clock]')).startsWith('t = '), 'keyboard stepping works');
const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
check(overflow <= 1, `no sideways scrolling on a phone (${overflow}px)`);
await page.waitForTimeout(500);
await page.screenshot({ path: `${shots}/phone-load-balance.png`, fullPage: true });

// 5. Live mode against this server: the snapshot on connect, then a real DPUB entering the
// channel's deferred heap and leaving it when due.
await page.setViewportSize({ width: 1280, height: 800 });
const post = (p, body = '') => fetch(`${base}${p}`, { method: 'POST', body });
await post('/topic/create?topic=live');
await post('/channel/create?topic=live&channel=c');
await post('/pub?topic=live&defer=60000', 'already waiting');
await page.goto(`${base}/?mode=live`);
await page.waitForFunction(() => document.querySelector('[data-testid=status]')?.textContent.startsWith('connected'), null, { timeout: 10000 });
await page.waitForFunction(() => document.querySelectorAll('[data-testid=heap-array] .cell[data-due]').length === 1, null, { timeout: 5000 })
  .then(() => check(true, 'snapshot shows the waiting message'), () => check(false, 'snapshot shows the waiting message'));
const t0 = Date.now();
await post('/pub?topic=live&defer=1500', 'hi');
await page.waitForFunction(() => document.querySelectorAll('[data-testid=heap-array] .cell[data-due]').length === 2, null, { timeout: 5000 })
  .then(() => check(true, 'the DPUB entered the heap'), () => check(false, 'the DPUB entered the heap'));
await page.screenshot({ path: `${shots}/live-dpub.png` });
await page.waitForFunction(() => document.querySelectorAll('[data-testid=heap-array] .cell[data-due]').length === 1, null, { timeout: 6000 })
  .then(() => check(true, 'the DPUB left the heap'), () => check(false, 'the DPUB left the heap'));
const waited = Date.now() - t0;
check(waited >= 1400, `it left when due, not before (${waited} ms)`);
const log = await page.textContent('.app');
check(/timer fired exactly then/.test(log), 'the live log explains the due time');
await page.screenshot({ path: `${shots}/live-after.png` });

check(errors.length === 0, `no page errors: ${errors.join(' | ')}`);
await ctx.close();
fs.rmSync(dir, { recursive: true, force: true });
console.log(`visualiser: ${passed} passed, ${failures.length} failed`);
process.exit(failures.length ? 1 : 0);
