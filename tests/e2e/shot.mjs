// usage: node shot.mjs <url> <out.png> [steps] [width] [height]
import { createRequire } from 'module';
const require = createRequire(process.env.NODE_TOOLS + '/');
const { chromium } = require('playwright-core');
const [url, out, steps = '0', w = '1280', h = '800'] = process.argv.slice(2);
const os = require('os'), fs = require('fs'), path = require('path');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nsqlab-chromium-'));
const ctx = await chromium.launchPersistentContext(dir, {
  executablePath: '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: Number(w), height: Number(h) },
});
const page = await ctx.newPage();
const errors = [];
page.on('pageerror', (e) => errors.push(String(e)));
page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
await page.goto(url);
await page.waitForSelector('[data-testid=explain]');
for (let i = 0; i < Number(steps); i++) await page.click('[data-testid=step]');
await page.waitForTimeout(700);
await page.screenshot({ path: out, fullPage: process.env.FULL === '1' });
console.log(JSON.stringify({ errors, explain: await page.textContent('[data-testid=explain]') }));
await ctx.close();
fs.rmSync(dir, { recursive: true, force: true });
