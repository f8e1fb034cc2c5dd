// Benchmark (not a test): frames per second of the visualiser with 10 000 messages in a
// deferred heap, how fast scrubbing that run lands, and the token view with a thousand tokens
// moving, in headless Chromium. Run by scripts/bench-web.sh.
// usage: NODE_TOOLS=<dir with node_modules> node fps.mjs <base-url>
import { createRequire } from 'module';
const require = createRequire(process.env.NODE_TOOLS + '/');
const { chromium } = require('playwright-core');
const os = require('os'), fs = require('fs'), path = require('path');

const [base] = process.argv.slice(2);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nsqlab-chromium-'));
const ctx = await chromium.launchPersistentContext(dir, {
  executablePath: '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
  viewport: { width: 1280, height: 800 },
});
const page = await ctx.newPage();
const f = (x) => x.toFixed(1);
if (process.env.REDUCED) await page.emulateMedia({ reducedMotion: 'reduce' });
const deferred = () => page.$$eval('.node.channel [data-testid=deferred]', (els) => els.reduce((s, e) => s + Number(e.dataset.value), 0));
// Frames drawn in `ms` (requestAnimationFrame callbacks) and the longest gap between two.
const frames = (ms) => page.evaluate((ms) => new Promise((done) => {
  let n = 0, last = performance.now(), worst = 0;
  const t0 = last;
  const tick = (t) => {
    n++; worst = Math.max(worst, t - last); last = t;
    if (t - t0 < ms) requestAnimationFrame(tick); else done({ fps: n * 1000 / (t - t0), worst });
  };
  requestAnimationFrame(tick);
}), ms);

await page.goto(`${base}/?scenario=big-heap&seed=1&speed=1`);
await page.waitForSelector('[data-testid=explain]');
const idle = await frames(2000);
await page.click('[data-testid=play]');
// The first 2 s at 1x: 10 000 DPUBs pushed into the heap (published over the first second).
const publishing = await frames(2000);
await page.waitForFunction(() => Number(document.querySelector('.node.channel [data-testid=deferred]')?.dataset.value) >= 10000, null, { timeout: 60000 });
const full = await deferred();
fs.mkdirSync('target/screenshots', { recursive: true });
await page.screenshot({ path: 'target/screenshots/big-heap-full.png' });
// Playing at 1x while the heap is full: 3 s of frames.
const playing = await frames(3000);
// Playing at 1x while messages come due and are delivered (from 5 s on): 3 s of frames.
const clock = () => page.$eval('[data-testid=clock]', (e) => Number(e.textContent.replace(/[^0-9.]/g, '')));
while ((await clock()) < 5.5) await page.waitForTimeout(100);
const delivering = await frames(3000);
const delivered = await page.$eval('.node.channel [data-testid=finished]', (e) => e.dataset.value);
await page.click('[data-testid=play]');
// One step at a time on the full heap: how long a click takes to show.
const steps = [];
for (let i = 0; i < 20; i++) {
  const t = await page.evaluate(() => new Promise((done) => {
    const t0 = performance.now();
    document.querySelector('[data-testid=step]').click();
    requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));
  }));
  steps.push(t);
}
steps.sort((a, b) => a - b);
// Playing at 100x: pops and deliveries as fast as the page goes.
await page.selectOption('[data-testid=speed]', '100');
await page.click('[data-testid=play]');
const fast = await frames(3000);
const left = await deferred();

// Scrubbing the 10 000-message run: played to its end, then the timeline dragged to points
// along it, and back one step; each measured from the input to the page drawn.
// (At 100x it may still be playing: then it plays on to the end.)
if (await page.$eval('[data-testid=play]', (b) => b.getAttribute('aria-pressed') !== 'true')) {
  await page.click('[data-testid=play]');
}
await page.waitForSelector('[data-testid=scenario-finished]', { timeout: 120000 });
const horizon = await page.$eval('[data-testid=timeline]', (r) => Number(r.max));
const landed = (fn, arg) => page.evaluate(([fn, arg]) => new Promise((done) => {
  const t0 = performance.now();
  if (fn === 'seek') {
    const r = document.querySelector('[data-testid=timeline]');
    r.value = String(arg);
    r.dispatchEvent(new Event('input', { bubbles: true }));
  } else {
    document.querySelector('[data-testid=back]').click();
  }
  requestAnimationFrame(() => requestAnimationFrame(() => done(performance.now() - t0)));
}), [fn, arg]);
const scrubs = [];
for (const frac of [0.5, 0.1, 0.9, 0.33, 0.66, 0.02, 1.0, 0.75, 0.25, 0.5]) {
  scrubs.push(await landed('seek', Math.round(horizon * frac)));
}
const backs = [];
for (let i = 0; i < 10; i++) backs.push(await landed('back'));
const worst = (xs) => Math.max(...xs), median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

// The token view with a thousand tokens moving: the DPUB scenario's flow view, played out,
// then 1 000 DPUBs due together (deferred 1 s): at their due time every token glides from the
// deferred heap to the memory queue, then on to the consumer. At 1x.
await page.goto(`${base}/?scenario=dpub-heap&seed=1&speed=100&view=flow`);
await page.waitForSelector('[data-testid=flow]');
await page.click('[data-testid=play]');
await page.waitForSelector('[data-testid=scenario-finished]', { timeout: 60000 });
await page.click('[data-testid=play]');
await page.selectOption('[data-testid=speed]', '1');
await page.fill('#pub-count', '1000');
await page.fill('#pub-defer', '1000');
await page.click('[data-testid=publish]');

await page.click('[data-testid=play]');
// Frames, and how many tokens are gliding (the canvas says, as it paints) every 4th frame.
const glide = await page.evaluate((ms) => new Promise((done) => {
  let n = 0, last = performance.now(), worst = 0, most = 0, sum = 0, samples = 0, drawn = 0;
  const t0 = last;
  const tick = (t) => {
    n++; worst = Math.max(worst, t - last); last = t;
    if (n % 4 === 0) {
      const moving = Number(document.querySelector('[data-testid=tokens]').dataset.moving || 0);
      most = Math.max(most, moving); drawn = Math.max(drawn, Number(document.querySelector('[data-testid=tokens]').dataset.count));
      if (moving > 0) { sum += moving; samples++; }
    }
    if (t - t0 < ms) requestAnimationFrame(tick); else done({ fps: n * 1000 / (t - t0), worst, most, drawn, mean: samples ? sum / samples : 0 });
  };
  requestAnimationFrame(tick);
}), 3000);
await page.click('[data-testid=play]');
await page.screenshot({ path: 'target/screenshots/flow-1000-tokens.png' });

// The 10 000-message scenario in the flow view: at 1x while the 10 000 DPUBs go in, and at
// 100x while they come due and are delivered.
await page.goto(`${base}/?scenario=big-heap&seed=1&speed=1&view=flow`);
await page.waitForSelector('[data-testid=flow]');
await page.click('[data-testid=play]');
const flow1 = await frames(3000);
await page.click('[data-testid=play]');
await page.selectOption('[data-testid=speed]', '100');
await page.click('[data-testid=play]');
const flow100 = await frames(3000);
await page.click('[data-testid=play]');
// Every other scenario, played at 1x for 3 s and at 100x for 3 s (both views): the longest frame.
const others = [];
for (const id of ['dpub-heap', 'fan-out', 'load-balance', 'crash-timeout', 'req-backoff', 'overflow-disk', 'crash-restart', 'cluster', 'scan-vs-exact']) {
  let worstFrame = 0, slowest = 1e9;
  for (const view of ['', '&view=flow']) {
    for (const speed of ['1', '100']) {
      await page.goto(`${base}/?scenario=${id}&seed=1&speed=${speed}${view}`);
      await page.waitForSelector('[data-testid=explain]');
      await page.click('[data-testid=play]');
      const r = await frames(3000);
      worstFrame = Math.max(worstFrame, r.worst);
      slowest = Math.min(slowest, r.fps);
    }
  }
  others.push(`${id} ${f(slowest)} fps / ${f(worstFrame)} ms`);
}
await ctx.close();
fs.rmSync(dir, { recursive: true, force: true });
console.log(`| idle page | ${f(idle.fps)} fps (longest frame ${f(idle.worst)} ms) |`);
console.log(`| playing 1x, the first 2 s: 10 000 DPUBs pushed | ${f(publishing.fps)} fps (longest frame ${f(publishing.worst)} ms) |`);
console.log(`| playing 1x with ${full} in the heap | ${f(playing.fps)} fps (longest frame ${f(playing.worst)} ms) |`);
console.log(`| playing 1x, 5.5–8.5 s: popping and delivering (${delivered} finished by 8.5 s) | ${f(delivering.fps)} fps (longest frame ${f(delivering.worst)} ms) |`);
console.log(`| one Step on the full heap, click to drawn | median ${f(steps[10])} ms, max ${f(steps[19])} ms |`);
console.log(`| playing 100x, draining (${left} left after 3 s) | ${f(fast.fps)} fps (longest frame ${f(fast.worst)} ms) |`);
console.log(`| scrubbing the played-out run (${horizon} steps) to 10 points, input to drawn | median ${f(median(scrubs))} ms, max ${f(worst(scrubs))} ms |`);
console.log(`| Back, 10 times from the end of that run, click to drawn | median ${f(median(backs))} ms, max ${f(worst(backs))} ms |`);
console.log(`| flow view at 1x, 1 000 DPUBs coming due together (${glide.drawn} tokens drawn; up to ${glide.most} gliding at once, ${f(glide.mean)} on average while any move) | ${f(glide.fps)} fps (longest frame ${f(glide.worst)} ms) |`);
console.log(`| flow view, 10 000 deferred messages, 1x while they go in | ${f(flow1.fps)} fps (longest frame ${f(flow1.worst)} ms) |`);
console.log(`| flow view, 10 000 deferred messages, 100x while they are delivered | ${f(flow100.fps)} fps (longest frame ${f(flow100.worst)} ms) |`);
console.log(`| every other scenario at 1x and 100x, both views, 3 s each: slowest fps / longest frame | ${others.join('; ')} |`);
