import { existsSync, mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';

/**
 * Browser test support: Debian's chromium (/usr/bin/chromium, installed by .ci/run) driven by
 * playwright-core, headless. Tests skip with a clear message when the binary is absent.
 */
const CHROMIUM = process.env.SHARP_CHROMIUM ?? '/usr/bin/chromium';
export const hasChromium = existsSync(CHROMIUM);
export const skipReason =
  `browser tests skipped: no chromium at ${CHROMIUM} ` + '(apt-get install chromium, or set SHARP_CHROMIUM)';

/** Screenshots land here (git-ignored) so a person can look at them. */
const ARTIFACTS = resolve(import.meta.dirname, '..', '..', 'test-artifacts', 'view');

export function launch(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const file = join(ARTIFACTS, `${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** Collects what would show that injected markup ran: page errors, dialogs, console messages. */
export function watch(page: Page): { errors: string[]; dialogs: string[]; console: string[] } {
  const w = { errors: [] as string[], dialogs: [] as string[], console: [] as string[] };
  page.on('pageerror', (e) => w.errors.push(e.message));
  page.on('dialog', (d) => {
    w.dialogs.push(d.message());
    void d.dismiss();
  });
  page.on('console', (m) => w.console.push(`${m.type()}: ${m.text()}`));
  return w;
}
