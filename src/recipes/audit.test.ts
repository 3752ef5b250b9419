import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sharp } from '../../test/cli-helpers.ts';
import { errorOf } from '../../test/one-line-error.ts';
import type { AurocEstimate, BlamedShare } from '../eval/credit-quality.ts';
import type { AuditReport } from '../eval/audit/report.ts';
import { auditFlags, withDefaults, type GivenFlags } from './commands.ts';
import { run as runAudit } from './audit.ts';

/**
 * `sharp audit` end to end: the real program (bin/sharp.js) on the shipped SFT model of the parallel
 * world and its ablation config, a few trajectories; the structure and ranges of what it writes, the
 * common random numbers shared by the counterfactuals, and the bad inputs (one line, exit 2).
 */
const repo = resolve(import.meta.dirname, '../..');
const root = mkdtempSync(join(tmpdir(), 'sharp-audit-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
const audit = (opts: GivenFlags<typeof auditFlags>): Promise<void> => runAudit(withDefaults(auditFlags, opts));
const args = ['--model', 'models/sharp-tiny-sft-parallel', '--config', 'configs/ablation-parallel.yaml'];

const inUnit = (x: number | null): boolean => x === null || (x >= 0 && x <= 1);
function checkAuroc(e: AurocEstimate): void {
  if (e.auroc === null) {
    expect([e.low, e.high]).toEqual([null, null]);
    expect(e.positives === 0 || e.negatives === 0).toBe(true);
    return;
  }
  expect(inUnit(e.auroc) && inUnit(e.low) && inUnit(e.high)).toBe(true);
  expect(e.low as number).toBeLessThanOrEqual(e.high as number);
  expect(e.positives).toBeGreaterThan(0);
  expect(e.negatives).toBeGreaterThan(0);
}
function checkShare(s: BlamedShare): void {
  expect(s.blamed).toBeLessThanOrEqual(s.calls);
  expect(s.share).toBe(s.calls === 0 ? null : s.blamed / s.calls);
}

describe('sharp audit', () => {
  it(
    'rolls out, credits the same trajectories under every counterfactual and the oracle, writes audit.json / ' +
      'audit.md / calls.jsonl',
    async () => {
      const out = join(root, 'run');
      const r = await sharp(repo, ['audit', ...args, '--n', '3', '--reps', '200', '--seed', '5', '--out', out]);
      expect(r.stderr).not.toMatch(/Error|at .*\.ts/);
      expect(r.code).toBe(0);
      const report = JSON.parse(readFileSync(join(out, 'audit.json'), 'utf8')) as AuditReport;
      expect(report).toMatchObject({
        kind: 'sharp-credit-audit',
        version: 1,
        trajectories: 3,
        setup: { n: 3, seed: 5, reps: 200, replayMode: 'replan', config: 'configs/ablation-parallel.yaml' },
      });
      expect(report.successes).toBeGreaterThanOrEqual(0);
      expect(report.successes).toBeLessThanOrEqual(3);
      const c = report.calls;
      expect(c.overall.calls).toBe(c.failure.calls + c.success.calls);
      expect(c.overall.right + c.overall.wrong + c.overall.unjudged).toBe(c.overall.calls);
      expect(report.arms.map((a) => [a.name, a.ceiling])).toEqual([
        ['mask', false],
        ['resample', false],
        ['repair', false],
        ['likelihood', false],
        ['likelihood-shapley', false],
        ['likelihood-seq', false],
        ['oracle', true],
      ]);
      for (const a of report.arms) {
        for (const s of ['failure', 'success', 'overall'] as const) {
          checkAuroc(a.quality.auroc[s]);
          for (const kind of ['wrong', 'right', 'planted'] as const) checkShare(a.quality.blamed[kind][s]);
        }
        expect(a.quality.auroc.overall.positives).toBe(c.overall.wrong);
        expect(a.quality.auroc.overall.negatives).toBe(c.overall.right);
        expect(inUnit(a.noise)).toBe(true);
        expect(Number.isInteger(a.replays) && a.seconds >= 0).toBe(true);
      }
      const [mask, resample, repair, lik, likShapley, likSeq, oracle] = report.arms;
      // The likelihood value samples nothing: no replays, no noise floor.
      for (const a of [lik, likShapley, likSeq]) expect([a?.noise, a?.replays]).toEqual([0, 0]);
      // Every counterfactual replays v(N) (nothing left out) on the same random numbers: one noise floor.
      expect(resample?.noise).toBe(mask?.noise);
      expect(repair?.noise).toBe(mask?.noise);
      expect([oracle?.noise, oracle?.replays]).toEqual([0, 0]);
      if (c.overall.calls > 0) expect(mask?.replays).toBeGreaterThan(0);
      // The oracle rewards the judge's own label: it ranks every wrong report below every right one, and blames none.
      if (oracle?.quality.auroc.overall.auroc !== null) expect(oracle?.quality.auroc.overall.auroc).toBe(1);
      expect(oracle?.quality.blamed.wrong.overall.blamed).toBe(0);

      const rows = readFileSync(join(out, 'calls.jsonl'), 'utf8')
        .trim()
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { right: boolean | null; credit: Record<string, number> });
      expect(rows).toHaveLength(c.overall.calls);
      for (const row of rows) {
        expect(Object.keys(row.credit)).toEqual([
          'mask',
          'resample',
          'repair',
          'likelihood',
          'likelihood-shapley',
          'likelihood-seq',
          'oracle',
        ]);
        // Likelihood gains are in nats, finite.
        for (const k of ['likelihood', 'likelihood-shapley', 'likelihood-seq'])
          expect(Number.isFinite(row.credit[k])).toBe(true);
        if (row.right !== null) expect(row.credit.oracle).toBe(row.right ? 1 : 0);
      }
      const md = readFileSync(join(out, 'audit.md'), 'utf8');
      expect(md).toContain('| oracle (ceiling) |');
      expect(r.stdout).toContain(md);

      // The folder is an audit's: a second run may rewrite it.
      const again = await sharp(repo, [
        'audit',
        ...args,
        '--n',
        '1',
        '--reps',
        '10',
        '--out',
        out,
        '--set',
        'credit.replays=1',
      ]);
      expect(again.code).toBe(0);
      expect((JSON.parse(readFileSync(join(out, 'audit.json'), 'utf8')) as AuditReport).trajectories).toBe(1);
    },
    300_000,
  );

  it('--help names what it measures and its flags', async () => {
    const r = await sharp(repo, ['audit', '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain('credit quality without RL');
    for (const flag of ['--model <dir>', '--n <n>', '--out <dir>', '--seed <s>', '--reps <n>', '--config <file>'])
      expect(r.stdout).toContain(flag);
  }, 60_000);

  it('refuses a folder that holds something else, with exit 2 and one line', async () => {
    const out = join(root, 'foreign');
    mkdirSync(out);
    writeFileSync(join(out, 'notes.txt'), 'mine');
    const r = await sharp(repo, ['audit', ...args, '--n', '1', '--out', out]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      `sharp: --out ${out}: is a folder not written by sharp audit; choose a new or empty folder`,
    );
    expect(readFileSync(join(out, 'notes.txt'), 'utf8')).toBe('mine');
  }, 60_000);

  it('bad input is one line: n < 1, a checkpoint that does not load, data without decompositions', async () => {
    const base = {
      model: join(repo, 'models/sharp-tiny-sft-parallel'),
      config: join(repo, 'configs/ablation-parallel.yaml'),
    };
    expect(await errorOf(audit({ ...base, n: 0, out: join(root, 'n0') }))).toBe(
      "audit: --n expects an integer in 1..100000, got '0'",
    );
    expect(await errorOf(audit({ ...base, n: 1e9, out: join(root, 'n0') }))).toBe(
      "audit: --n expects an integer in 1..100000, got '1000000000'",
    );
    expect(await errorOf(audit({ ...base, n: 1, reps: 1e9, out: join(root, 'n0') }))).toBe(
      "audit: --reps expects an integer in 1..100000, got '1000000000'",
    );
    // More than the training split: refused at once, before the output folder is claimed.
    expect(
      await errorOf(audit({ ...base, n: 1000, set: ['data.synthetic.train=200'], out: join(root, 'past-split') })),
    ).toBe(
      'audit: --n 1000 is more than the 200 training questions (data.synthetic.train); the audit takes the first n ' +
        'of them',
    );
    expect(existsSync(join(root, 'past-split'))).toBe(false);

    const broken = join(root, 'broken-model');
    mkdirSync(broken);
    for (const f of ['config.json', 'tokenizer.json', 'tokenizer_config.json'])
      copyFileSync(join(repo, 'models/sharp-tiny-sft-parallel', f), join(broken, f));
    writeFileSync(join(broken, 'model.safetensors'), 'not a safetensors file');
    expect(await errorOf(audit({ ...base, model: broken, n: 1, out: join(root, 'broken') }))).toMatch(
      new RegExp(`^--model ${broken}: `),
    );

    const hotpot = [
      'data.source=hotpotqa',
      `data.path=${join(repo, 'data/hotpotqa/hotpot_dev_distractor_sample.json')}`,
    ];
    expect(await errorOf(audit({ ...base, n: 2, set: hotpot, out: join(root, 'hotpot') }))).toMatch(
      /^audit: episode \S+ has no gold decomposition, which the rule judge labels reports by/,
    );
    // Refused before the output folder is claimed.
    expect(existsSync(join(root, 'hotpot'))).toBe(false);

    expect(await errorOf(audit({ ...base, n: 1, set: ['rollout.agents=single'], out: join(root, 'single') }))).toBe(
      'audit: rollout.agents is single; the audit scores worker reports, so it needs the multi-agent system (multi)',
    );
  }, 120_000);
});
