// Browser test of `grtreport --html`: Debian's chromium, headless, driven by playwright-core
// (scripts/browser/run.sh makes the page and sets the environment):
//   PAGE      the page made from a simulator scenario
//   BARS      job bars expected (jobs with a START and an END, from `grtreport --jobs`)
//   SHOT      where to keep the screenshot (an artifact, under target/)
//   CHROMIUM  the browser (default /usr/bin/chromium)
// Run with node's own test runner: node --test scripts/browser/html.test.mjs
import { test } from "node:test";
import assert from "node:assert/strict";
import { execSync } from "node:child_process";
import { pageTests } from "./page.mjs";

const PAGE = process.env.PAGE;
const BARS = Number(process.env.BARS);
const SHOT = process.env.SHOT;
let page;

pageTests(PAGE, PAGE && BARS > 0 && SHOT, "PAGE, BARS and SHOT must be set", p => {
  page = p;
});

test("the timeline has one bar per job of the scenario", async () => {
  assert.equal(await page.locator("rect.job").count(), BARS);
  // Tables and verdicts are there too.
  assert.ok((await page.locator("#groups tbody tr").count()) >= 2);
  assert.ok((await page.locator("#verdicts li").count()) >= 1);
  // The per-ring verdicts (GPU-, host-, dependency-bound) head the list, one per ring.
  const verdicts = await page.locator("#verdicts li.verdict").allInnerTexts();
  const rings = await page.evaluate(() => window.grtreport.data.verdicts.length);
  assert.ok(rings >= 1 && verdicts.length === rings, verdicts.join("\n"));
  assert.ok(verdicts.every(v => /: (GPU|host|dependency)-bound: busy /.test(v)), verdicts.join("\n"));
  // The tables fit a 1,400 px window (the page's widest part besides the timeline).
  for (const id of ["#groups"]) {
    const w = await page.locator(id).evaluate(t => t.getBoundingClientRect().width);
    assert.ok(w <= 1400, id + " is " + w + " px wide");
  }
  assert.ok((await page.locator(".plot svg").count()) >= 4);
});

test("clicking a job shows its phases, tags, blockers and a grtparse command that prints it", async () => {
  const bar = page.locator("rect.job").nth(Math.floor(BARS / 2));
  const i = Number(await bar.getAttribute("data-i"));
  // The job's fields by name (the page's data names its job columns).
  const job = await page.evaluate(i => {
    const d = window.grtreport.data;
    return Object.fromEntries(d.job_columns.map((c, k) => [c, d.jobs[i][k]]));
  }, i);
  await bar.click({ force: true });
  const details = page.locator("#details");
  const text = await details.innerText();
  assert.match(text, new RegExp("ctx " + job.ctx + " · ring " + job.ring + ".* · seqno " + job.seqno));
  for (const p of ["submit_host", "queue", "exec", "complete", "total", "COMMIT", "START"]) {
    assert.ok(text.includes(p), "details lack " + p + ":\n" + text);
  }
  assert.match(text, /tags: /);
  assert.match(text, /blocker chain: /);
  assert.equal(await page.locator("rect.sel").count() >= 1, true);
  // The command prints this job's COMMIT, SUBMIT, START and END (grtparse from target/).
  const cmd = await page.locator("#grtparse-cmd").innerText();
  assert.match(cmd, /^grtparse /);
  const out = execSync(cmd, { shell: "/bin/bash", encoding: "utf8" });
  for (const ev of ["COMMIT", "SUBMIT", "START", "END"]) {
    assert.ok(out.split("\n").some(l => l.split(/\s+/)[5] === ev), ev + " missing from:\n" + out);
  }
  for (const l of out.trim().split("\n")) assert.equal(l.split(/\s+/)[8], String(job.seqno), l);
  await page.screenshot({ path: SHOT, fullPage: false });
});

test("zoom and pan change the view", async () => {
  const before = await page.locator("#zoom").getAttribute("transform");
  await page.click("#zoom-in");
  await page.waitForFunction(b => document.querySelector("#zoom").getAttribute("transform") !== b, before);
  const zoomed = await page.locator("#zoom").getAttribute("transform");
  const box = await page.locator("#tl-svg").boundingBox();
  await page.mouse.move(box.x + box.width / 2, box.y + 40);
  await page.mouse.down();
  await page.mouse.move(box.x + box.width / 2 - 200, box.y + 40, { steps: 4 });
  await page.mouse.up();
  await page.waitForFunction(b => document.querySelector("#zoom").getAttribute("transform") !== b, zoomed);
  await page.click("#zoom-fit");
});
