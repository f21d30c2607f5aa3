// Opens a grtreport --html page for the browser tests: Debian's chromium, headless, driven by
// playwright-core (CHROMIUM overrides /usr/bin/chromium). The page must be self-contained:
// any request but the page itself is recorded in `requests` and refused. Waits until the
// page's script is done and fails on script errors.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const { chromium } = require("playwright-core");

export async function openPage(path) {
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu"],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const requests = [];
  await page.route("**/*", route => {
    const url = route.request().url();
    if (url === "file://" + path) return route.continue();
    requests.push(url);
    return route.abort();
  });
  const errors = [];
  page.on("pageerror", e => errors.push(String(e)));
  await page.goto("file://" + path);
  await page.waitForSelector("body[data-ready='1']", { timeout: 30000 });
  assert.deepEqual(errors, [], "script errors");
  return { browser, page, requests };
}

// What every page test file starts with: checks its environment (`envSet`, or fails with
// `envHelp`), opens the page at `path` before its tests and closes it after them, and tests
// that the page loads nothing from the network. `opened` is handed the page.
export function pageTests(path, envSet, envHelp, opened) {
  let browser, requests;
  before(async () => {
    assert.ok(envSet, envHelp);
    let page;
    ({ browser, page, requests } = await openPage(path));
    opened(page);
  });

  after(async () => {
    if (browser) await browser.close();
  });

  test("the page loads nothing from the network", () => {
    assert.deepEqual(requests, []);
  });
}
