// Browser test of `grtreport --html` on a recording of two cards (grtsim --cards 2, recorded
// with grtrace -d card0 -d card1): a section per card, each drawing its own jobs, with its
// own view and job details. scripts/browser/run.sh makes the page and sets:
//   PAGE          the two-card page
//   BARS0, BARS1  job bars expected on card0 and card1 (from `grtreport --jobs`)
//   CHROMIUM      the browser (default /usr/bin/chromium)
import { test } from "node:test";
import assert from "node:assert/strict";
import { execSync } from "node:child_process";
import { pageTests } from "./page.mjs";

const PAGE = process.env.PAGE;
const BARS = [Number(process.env.BARS0), Number(process.env.BARS1)];
let page;

pageTests(PAGE, PAGE && BARS[0] > 0 && BARS[1] > 0, "PAGE, BARS0 and BARS1 must be set", p => {
  page = p;
});

test("each card has its section, with its own bars, tables and plots", async () => {
  assert.equal(await page.locator("section.card").count(), 2);
  for (const c of [0, 1]) {
    const s = page.locator("#card" + c);
    assert.match(await s.locator("h1").innerText(), new RegExp("card" + c + " "));
    assert.equal(await page.locator("#timeline-card" + c + " rect.job").count(), BARS[c], "card" + c);
    assert.ok((await page.locator("#groups-card" + c + " tbody tr").count()) >= 2);
    assert.ok((await s.locator(".plot svg").count()) >= 4);
  }
  assert.equal(await page.locator("rect.job").count(), BARS[0] + BARS[1]);
});

test("a job of card1 shows in card1's details, and its command prints card1's events", async () => {
  const bar = page.locator("#timeline-card1 rect.job").nth(Math.floor(BARS[1] / 2));
  const i = Number(await bar.getAttribute("data-i"));
  // The job's fields by name (the page's data names its job columns).
  const job = await page.evaluate(i => {
    const d = window.grtreport.cards[1].data;
    return Object.fromEntries(d.job_columns.map((c, k) => [c, d.jobs[i][k]]));
  }, i);
  await bar.click({ force: true });
  const text = await page.locator("#details-card1").innerText();
  assert.match(text, new RegExp("ctx " + job.ctx + " · ring " + job.ring + ".* · seqno " + job.seqno));
  assert.equal(await page.locator("#card0 rect.sel").count(), 0, "card0 selected nothing");
  const cmd = await page.locator("#grtparse-cmd-card1").innerText();
  const out = execSync(cmd, { shell: "/bin/bash", encoding: "utf8" });
  for (const ev of ["COMMIT", "SUBMIT", "START", "END"]) {
    assert.ok(out.split("\n").some(l => l.split(/\s+/)[5] === ev), ev + " missing from:\n" + out);
  }
  for (const l of out.trim().split("\n")) {
    const f = l.split(/\s+/);
    assert.equal(f[0], "card1", l);
    assert.equal(f[8], String(job.seqno), l);
  }
});

test("zooming one card's timeline leaves the other's view alone", async () => {
  const z0 = await page.locator("#zoom-card0").getAttribute("transform");
  const z1 = await page.locator("#zoom-card1").getAttribute("transform");
  await page.click("#zoom-in-card1");
  await page.waitForFunction(b => document.querySelector("#zoom-card1").getAttribute("transform") !== b, z1);
  assert.equal(await page.locator("#zoom-card0").getAttribute("transform"), z0);
});
