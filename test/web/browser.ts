/**
 * Browser tests drive Debian's Chromium through playwright-core against a real Sightline server. Without
 * Chromium they are skipped with a sentence saying why — except under CI, where that is a failure.
 */
import { existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type Browser, chromium, type Page } from "playwright-core";
import { buildDashboard } from "../../src/web/build.ts";

export const CHROMIUM = process.env.SIGHTLINE_TEST_CHROMIUM ?? "/usr/bin/chromium";
const ARTIFACTS = fileURLToPath(new URL("../../test-artifacts/web/", import.meta.url));
const WEB = fileURLToPath(new URL("../../src/web/", import.meta.url));

/** undefined when Chromium may be used; otherwise the reason to skip. Throws under CI. */
export function chromiumSkipReason(): string | undefined {
  if (existsSync(CHROMIUM)) return undefined;
  const reason = `Chromium is not installed at ${CHROMIUM}`;
  if (process.env.CI) throw new Error(`${reason}, and CI requires it (apt-get install -y chromium)`);
  return `${reason}; skipping the browser tests (apt-get install -y chromium; they are required when CI is set)`;
}

/**
 * A fresh browser on a built dashboard: Chromium, one page of a desktop-sized window, patient enough
 * for a polling page on a loaded two-core machine (`timeoutMs` per wait). A wait ends as soon as its
 * condition holds, so the bound only decides how long a real failure takes to be reported.
 */
export async function openBrowser(timeoutMs = 30_000): Promise<{ browser: Browser; page: Page }> {
  await ensureDashboardBuilt();
  const browser = await launchChromium();
  const page = await (await browser.newContext({ viewport: { width: 1280, height: 860 } })).newPage();
  page.setDefaultTimeout(timeoutMs);
  return { browser, page };
}

function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}

function newestSource(folder: string): number {
  let newest = 0;
  for (const entry of readdirSync(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

/** Builds the dashboard when src/web/dist is missing or older than its sources (npm ci has built it). */
export async function ensureDashboardBuilt() {
  const index = join(WEB, "dist", "index.html");
  const sources = Math.max(newestSource(join(WEB, "app")), statSync(join(WEB, "index.html")).mtimeMs);
  if (existsSync(index) && statSync(index).mtimeMs >= sources) return;
  if (!(await buildDashboard()))
    throw new Error("Vite is not installed, so the dashboard cannot be built for the browser tests");
}

/** Saves a full-page screenshot under test-artifacts/web/ for a person to look at. */
export async function screenshot(page: Page, name: string) {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

/** Signs in through the sign-in page at `url` and waits until the dashboard shows. */
export async function signIn(page: Page, url: string, keys: { accessKey: string; secretKey: string }) {
  await page.goto(url);
  await page.getByLabel("Access key").fill(keys.accessKey);
  await page.getByLabel("Secret key").fill(keys.secretKey);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("button", { name: "Sign out" }).waitFor();
}
