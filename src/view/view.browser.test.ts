import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listStepRecords, readStepRecord, type StepRecord, type TrajectoryRecord } from '../credit/record.ts';
import { exportView, serveView } from '../recipes/view.ts';
import { readSummary } from '../eval/train-summary.ts';
import { readMetrics } from '../train/metrics/jsonl.ts';
import { hasChromium, launch, screenshot, skipReason, watch } from '../../test/view/browser.ts';
import { BLAME, XSS, ablationRun, blameRun, evalRun, trainRun, xssRun } from '../../test/view/runs.ts';
import { METHOD_LABELS } from '../report/ablation.ts';
import { creditColour } from './page/colour.ts';
import { messageCredit, replaySentence } from './page/trajectory.ts';
import type { ViewServer } from './server.ts';

/**
 * The viewer in a real browser (Debian's chromium through playwright-core), on folders made by the
 * real programs (test/view/runs.ts). Screenshots go to test-artifacts/view/.
 */
if (!hasChromium) console.warn(skipReason);

let root: string;
let trainDir: string;
let evalDir: string;
let xssDir: string;
let ablDir: string;
let blameDir: string;
let browser: Browser;
const servers: ViewServer[] = [];

beforeAll(async () => {
  if (!hasChromium) return;
  root = mkdtempSync(join(tmpdir(), 'sharp-view-'));
  [trainDir, evalDir, xssDir, ablDir] = [
    await trainRun(root),
    await evalRun(root),
    await xssRun(root),
    await ablationRun(root),
  ];
  blameDir = await blameRun(root);
  browser = await launch();
}, 300_000);

afterAll(async () => {
  for (const s of servers) await s.close();
  await browser?.close();
  if (root) rmSync(root, { recursive: true, force: true });
});

async function open(dir: string): Promise<{ page: Page; w: ReturnType<typeof watch> }> {
  const s = await serveView(dir, { host: '127.0.0.1', port: 0 });
  servers.push(s);
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const w = watch(page);
  await page.goto(s.url);
  await page.waitForSelector('#app[data-ready=yes]');
  return { page, w };
}

const firstStep = (dir: string): StepRecord => readStepRecord(listStepRecords(dir)[0] as string);
const lastStep = (dir: string): StepRecord => readStepRecord(listStepRecords(dir).at(-1) as string);
const bg = (page: Page, sel: string): Promise<string[]> =>
  page.locator(sel).evaluateAll((els) => els.map((e) => getComputedStyle(e).backgroundColor));

/** What the page must colour each message with: its credit relative to the trajectory's largest |credit|. */
function expectedColours(t: TrajectoryRecord): string[] {
  const scale = Math.max(1e-9, ...t.messages.map((m) => Math.abs(messageCredit(t, m) ?? 0)));
  return t.messages
    .filter((m) => m.chatRole === 'assistant')
    .map((m) => creditColour(messageCredit(t, m) as number, scale));
}

const noInjection = (w: ReturnType<typeof watch>): void => {
  expect(w.errors).toEqual([]);
  expect(w.dialogs).toEqual([]);
  expect(w.console.filter((c) => /Refused|Content Security Policy/.test(c))).toEqual([]);
};

describe.skipIf(!hasChromium)('sharp view in chromium', () => {
  it('overview: every curve of the training run renders, with the run summary', async () => {
    const { page, w } = await open(trainDir);
    for (const name of ['reward', 'reward-parts', 'accuracy', 'credit', 'worker-calls', 'invalid-calls']) {
      const chart = page.locator(`[data-testid=chart-${name}]`);
      await expect.poll(() => chart.getAttribute('data-rendered')).toBe('yes');
      // One drawn line per series (vega's SVG renderer: a path per line mark group).
      expect(await chart.locator('svg .mark-line path').count(), name).toBeGreaterThan(0);
    }
    // Held-out accuracy before (step 0) and after RL is a series of the accuracy chart.
    expect(await page.locator('[data-testid=chart-accuracy] svg').textContent()).toContain('heldout/accuracy');
    const s = readSummary(trainDir);
    const b = s?.heldOutBefore;
    expect(await page.locator('dl.facts').textContent()).toContain(
      `${b?.accuracy.toFixed(3)} [${b?.interval[0].toFixed(3)}, ${b?.interval[1].toFixed(3)}] (n = 8)`,
    );
    await screenshot(page, 'overview');
    noInjection(w);
    await page.close();
  });

  it('a training step: clicking a trajectory shows its lanes, credit colours and replayed answers', async () => {
    const { page, w } = await open(trainDir);
    await page.click('[data-testid=tab-trajectories]');
    const step = lastStep(trainDir);
    const trajs = step.groups.flatMap((g) => g.trajectories);
    await expect.poll(() => page.locator('[data-testid=traj-row]').count()).toBe(trajs.length);
    await screenshot(page, 'train-step');
    // The trajectory with the most workers shows the most replays.
    const t = [...trajs].sort((a, b) => b.k - a.k)[0] as TrajectoryRecord;
    await page.click(`[data-testid=traj-row][data-id="${t.id}"]`);
    await page.waitForSelector('[data-testid=trajectory]');
    expect(await page.locator('[data-testid=message]').count()).toBe(t.messages.length);
    // One lane per agent: each message sits in its agent's column.
    const cols = await page
      .locator('[data-testid=message]')
      .evaluateAll((els) => els.map((e) => `${e.getAttribute('data-agent')}:${getComputedStyle(e).gridColumnStart}`));
    expect(cols).toEqual(t.messages.map((m) => `${m.agent}:${m.agent + 1}`));
    expect(await bg(page, '[data-testid=message].assistant')).toEqual(expectedColours(t));
    // The replay beside each delegation, and every coalition's replayed answers, as recorded.
    const notes = await page.locator('[data-testid=replay-note]').allTextContents();
    expect(notes).toEqual(Array.from({ length: t.k }, (_, m) => replaySentence(t, m)));
    expect(notes[0]).toMatch(/^without worker 0: ('.*'|no answer), (right|wrong)/);
    const rows = await page.locator('[data-testid=coalitions] tbody tr').allTextContents();
    expect(rows).toHaveLength(t.coalitions.length);
    t.coalitions.forEach((c, i) => {
      for (const a of c.answers) expect(rows[i]).toContain(a.answer === null ? 'no answer' : `'${a.answer}'`);
    });
    expect(await page.locator('[data-testid=shapley] tbody tr').count()).toBe(t.k);
    await screenshot(page, 'train-trajectory');

    // The sample keeps a step's harmful worker calls when it has any (credit/harmful > 0 in metrics.jsonl),
    // and the harmful filter shows exactly those trajectories.
    const metrics = readMetrics(join(trainDir, 'metrics.jsonl'));
    await page.click('[data-testid=back]');
    for (const f of listStepRecords(trainDir)) {
      const rec = readStepRecord(f);
      const harmfulLogged = (metrics.find((m) => m.step === rec.step)?.['credit/harmful'] as number) > 0;
      const harmful = rec.groups.flatMap((g) => g.trajectories).filter((x) => x.deltas.some((d) => d < 0));
      expect(harmful.length > 0, `step ${rec.step}`).toBe(harmfulLogged);
      await page.selectOption(
        '[data-testid=step-select]',
        f
          .split('/')
          .at(-1)
          ?.replace(/\.json(\.gz)?$/, '') as string,
      );
      await page.locator('[data-testid=filter-harmful]').setChecked(true);
      await expect
        .poll(() =>
          page.locator('[data-testid=traj-row]').evaluateAll((rs) => rs.map((r) => r.getAttribute('data-id'))),
        )
        .toEqual(harmful.map((x) => x.id));
      await page.locator('[data-testid=filter-harmful]').setChecked(false);
    }
    noInjection(w);
    await page.close();
  });

  it('an eval with credit: helpful workers in green, and the counterfactual that shows it', async () => {
    const { page, w } = await open(evalDir);
    await page.click('[data-testid=tab-trajectories]');
    const step = firstStep(evalDir);
    const t = step.groups
      .flatMap((g) => g.trajectories)
      .find((x) => x.k === 3 && x.deltas[2] === 1) as TrajectoryRecord;
    expect(t, 'a 3-worker trajectory whose last worker is needed').toBeDefined();
    await page.click(`[data-testid=traj-row][data-id="${t.id}"]`);
    await page.waitForSelector('[data-testid=trajectory]');
    // Masking worker 2 (its report replaced by the placeholder) makes the answer wrong: Delta = 1 - 0.
    expect(await page.locator('[data-testid=replay-note]').nth(2).textContent()).toBe(
      "without worker 2: '[no report]', wrong; '[no report]', wrong (v = 0.00; Delta = +1.00, helpful)",
    );
    // Worker 2's messages: credit 1 of scale 1 -> rgb(120, 200, 120); the planner's 1/3 -> rgb(183, 225, 183).
    const w2 = t.agents.find((a) => a.delegation === 2)?.id as number;
    expect(new Set(await bg(page, `[data-testid=message].assistant[data-agent="${w2}"]`))).toEqual(
      new Set(['rgb(120, 200, 120)']),
    );
    expect(new Set(await bg(page, '[data-testid=message].assistant[data-agent="0"]'))).toEqual(
      new Set(['rgb(183, 225, 183)']),
    );
    await screenshot(page, 'eval-trajectory');
    noInjection(w);
    await page.close();
  });

  it(
    'model strings with <script> and <img onerror> show as text and run nothing; the harmful filter finds worker ' +
      '1',
    async () => {
      const { page, w } = await open(xssDir);
      await page.click('[data-testid=tab-trajectories]');
      await expect.poll(() => page.locator('[data-testid=traj-row]').count()).toBe(2);
      expect(await page.locator('[data-testid=group] .q').textContent()).toBe(XSS.question);
      await page.click('[data-testid=filter-harmful]');
      await expect.poll(() => page.locator('[data-testid=traj-row]').count()).toBe(1);
      await page.click('[data-testid=traj-row]');
      await page.waitForSelector('[data-testid=trajectory]');
      expect(await page.locator('[data-testid=harmful-summary]').textContent()).toBe(
        "without worker 1: 'yes', right; 'yes', right (v = 1.00; Delta = -1.00, harmful)",
      );
      const body = (await page.locator('[data-testid=trajectory]').textContent()) ?? '';
      for (const s of [XSS.question, XSS.subtask, XSS.report, XSS.final]) expect(body).toContain(s);
      expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
      expect(await page.locator('img').count()).toBe(0);
      expect(await page.locator('#app script').count()).toBe(0);
      await screenshot(page, 'xss-trajectory');
      noInjection(w);
      await page.close();
    },
  );

  it('message-level shares, the first error and the preferred alternative are marked', async () => {
    const { page, w } = await open(blameDir);
    await page.click('[data-testid=tab-trajectories]');
    await page.click('[data-testid=traj-row]');
    await page.waitForSelector('[data-testid=trajectory]');
    const t = firstStep(blameDir).groups[0]?.trajectories[0] as TrajectoryRecord;
    const idx = t.firstError?.index as number;
    const first = page.locator(`[data-testid=message][data-index="${idx}"]`);
    expect(await first.locator('[data-testid=first-error]').textContent()).toBe('first error');
    expect(await page.locator('[data-testid=first-error]').count()).toBe(1);
    expect(await first.locator('pre.text').first().textContent()).toBe(BLAME.rejected);
    expect(await first.locator('[data-testid=preferred] pre').textContent()).toBe(BLAME.chosen);
    // Shares colour the messages. Worker 0's credit C = 0.1 (tool part only: the team failed) over
    // T = 2 messages labelled (0, -1): r = C/T + |C| (s - mean s) / T = 0.05 -/+ 0.025.
    const share = t.messages[idx]?.share?.reward as number;
    expect(share).toBeCloseTo(0.025, 12);
    expect(t.messages[idx - 2]?.share?.reward).toBeCloseTo(0.075, 12);
    expect(Number(await first.getAttribute('data-credit'))).toBe(share);
    expect(await bg(page, '[data-testid=message].assistant')).toEqual(expectedColours(t));
    expect(await first.locator('.msg-head').textContent()).toContain('judge -1');
    await screenshot(page, 'blame-trajectory');
    noInjection(w);
    await page.close();
  });

  it('an ablation folder: its comparison table and held-out plot', async () => {
    const { page, w } = await open(ablDir);
    const abl = JSON.parse(readFileSync(join(ablDir, 'ablation.json'), 'utf8')) as {
      summaries: { label: string; seeds: number[]; mean: number; std: number }[];
    };
    const rows = page.locator('[data-testid=ablation-table] tbody tr');
    await expect.poll(() => rows.count()).toBe(2);
    const cells = await rows.evaluateAll((trs) =>
      trs.map((tr) => Array.from(tr.querySelectorAll('td'), (td) => td.textContent)),
    );
    expect(cells.map((c) => c[0])).toEqual([METHOD_LABELS.broadcast, METHOD_LABELS.loo]);
    expect(cells.map((c) => c[3])).toEqual(abl.summaries.map((s) => `${s.mean.toFixed(3)} ± ${s.std.toFixed(3)}`));
    const chart = page.locator('[data-testid=chart-ablation]');
    await expect.poll(() => chart.getAttribute('data-rendered')).toBe('yes');
    expect(await chart.locator('svg .mark-line path').count()).toBeGreaterThan(0);
    expect(await chart.locator('svg').textContent()).toContain(METHOD_LABELS.loo);
    await screenshot(page, 'ablation');
    noInjection(w);
    await page.close();
  });

  it('the exported file opens from file:// with no server and makes no request', async () => {
    for (const [dir, name] of [
      [trainDir, 'train'],
      [xssDir, 'xss'],
    ] as const) {
      const file = join(root, `${name}.html`);
      await exportView(dir, file);
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const w = watch(page);
      const requests: string[] = [];
      page.on('request', (r) => requests.push(r.url()));
      await page.goto(pathToFileURL(file).href);
      await page.waitForSelector('#app[data-ready=yes]');
      if (name === 'train')
        await expect.poll(() => page.locator('[data-testid=chart-reward]').getAttribute('data-rendered')).toBe('yes');
      await page.click('[data-testid=tab-trajectories]');
      await page.locator('[data-testid=traj-row]').first().click();
      await page.waitForSelector('[data-testid=trajectory]');
      expect(await page.locator('[data-testid=message]').count()).toBeGreaterThan(0);
      expect(requests).toEqual([pathToFileURL(file).href]);
      expect(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss)).toBeUndefined();
      await screenshot(page, `export-${name}`);
      noInjection(w);
      await page.close();
    }
  });
});
