// The README's screenshots of a grtreport --html page (small PNGs):
//   node scripts/browser/shots.mjs PAGE OUTDIR
// OUTDIR/html-report.png: the top of the page (verdicts, tables, timeline);
// OUTDIR/html-timeline.png: the timeline zoomed on a queue-wait job and its details, the
// view the Perfetto UI gives of the --perfetto export (which needs ui.perfetto.dev, online).
import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");

const [page_, out] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu"],
});
const page = await browser.newPage({ viewport: { width: 1100, height: 760 } });
await page.goto("file://" + page_);
await page.waitForSelector("body[data-ready='1']");
await page.screenshot({ path: out + "/html-report.png" });
// A job that queued behind another (an arrow), zoomed to a few jobs around it.
const i = await page.evaluate(() => {
  const d = window.grtreport.data;
  let i = d.jobs.findIndex(j => j[22] && j[21] && (j[9] & 2));
  if (i < 0) i = d.jobs.findIndex(j => j[9] & 2);
  return Math.max(i, 0);
});
await page.evaluate(i => {
  const j = window.grtreport.data.jobs[i];
  const t0 = Math.max(j[4], 0) / 1000, t1 = j[7] / 1000;
  const span = Math.max(t1 - t0, 100) * 3;
  window.grtreport.setView(t0 - span / 3, t0 + span);
  window.grtreport.showJob(i);
}, i);
await page.waitForTimeout(300);
// From the toolbar above the timeline to the end of the job details, in page coordinates.
const clip = await page.evaluate(() => {
  const y = e => e.getBoundingClientRect().top + window.scrollY;
  const top = y(document.querySelector(".toolbar"));
  const det = document.querySelector("#details");
  return { x: 0, y: top - 4, width: 1100, height: y(det) + det.offsetHeight - top + 12 };
});
await page.screenshot({ path: out + "/html-timeline.png", fullPage: true, clip });
await browser.close();
console.log("screenshots: " + out + "/html-report.png " + out + "/html-timeline.png");
