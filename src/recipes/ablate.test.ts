import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { configSchema } from '../config/schema.ts';
import { LOCK_FILE, processStartTime } from '../run/run-lock.ts';
import { loadTrainData } from './stages/train-data.ts';
import { expertTranscripts } from './stages/expert-transcripts.ts';
import { ensureModel, tokenizerCorpus } from './stages/ensure-model.ts';
import { meanSampleStd } from '../report/ablation.ts';
import { methodConfig } from './stages/run-ablation.ts';
import { configHash } from '../train/checkpoints/checkpoint.ts';

/** `sharp ablate` end to end through the real binary, on a 2-step budget with a micro model. */
const REPO = resolve(import.meta.dirname, '../..');
let root: string;

function sharp(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [join(REPO, 'bin/sharp.js'), ...args], {
      cwd: root,
      env: { ...process.env, FORCE_COLOR: '0' },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => res({ code, stdout, stderr }));
  });
}

const yaml = (model: string, out: string) =>
  [
    `run: {name: abl, dir: ${join(root, 'runs')}, seed: 0, backend: wasm}`,
    `model: {path: ${model}}`,
    'data: {synthetic: {seed: 1, train: 12, heldOut: 4, minHops: 2, maxHops: 2, world: {people: 14, companies: 6, ' +
      'cities: 6, countries: 3}}}',
    'rollout: {groupSize: 2, maxNewTokens: 10, maxContext: 512, maxPlannerTurns: 3, maxDelegations: 2, ' +
      'maxWorkerTurns: 2}',
    'eval: {temperature: 1, heldOutEvery: 1}',
    'train: {steps: 2, batchQuestions: 1, checkpointEvery: 1, microBatch: 8, lr: 0.001}',
    `ablation: {seeds: [0, 1], out: ${out}}`,
    '',
  ].join('\n');

beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'sharp-ablate-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('methodConfig', () => {
  it('applies the method and the seed, nothing else', () => {
    const base = configSchema.parse({ run: { name: 'x' }, credit: { method: 'shapley' } });
    expect(methodConfig(base, 'broadcast', 3)).toMatchObject({
      run: { name: 'x-broadcast-s3', seed: 3 },
      credit: { method: 'broadcast' },
      rollout: { agents: 'multi' },
    });
    expect(methodConfig(base, 'matpo', 0).credit.method).toBe('matpo');
    expect([
      methodConfig(base, 'loo-repair', 0).credit.method,
      methodConfig(base, 'loo-repair', 0).credit.counterfactual,
    ]).toEqual(['loo', 'repair']);
    expect([methodConfig(base, 'oracle', 0).credit.method, methodConfig(base, 'oracle', 0).rollout.agents]).toEqual([
      'oracle',
      'multi',
    ]);
    expect(methodConfig(base, 'loo', 0).credit.method).toBe('loo');
    expect(methodConfig(base, 'loo-resample', 0).credit).toMatchObject({ method: 'loo', counterfactual: 'resample' });
    expect(methodConfig(base, 'loo', 0).credit.counterfactual).toBe('mask');
    expect(methodConfig(base, 'loo-repair-workers', 0).credit).toMatchObject({
      method: 'loo',
      counterfactual: 'repair',
      repairPlanner: false,
    });
    expect(methodConfig(base, 'loo-repair', 0).credit.repairPlanner).toBe(true);
    expect(methodConfig(base, 'loo-likelihood', 0).credit).toMatchObject({
      method: 'loo',
      counterfactual: 'mask',
      value: 'likelihood',
      likelihood: { form: 'coalition' },
    });
    expect(methodConfig(base, 'shapley-likelihood', 0).credit).toMatchObject({
      method: 'shapley',
      value: 'likelihood',
    });
    expect(methodConfig(base, 'loo-likelihood-seq', 0).credit).toMatchObject({
      method: 'loo',
      value: 'likelihood',
      likelihood: { form: 'sequential' },
    });
    expect(methodConfig(base, 'broadcast', 0).credit.value).toBe('outcome');
    expect(methodConfig(base, 'single', 1)).toMatchObject({
      credit: { method: 'broadcast' },
      rollout: { agents: 'single' },
    });
    const c = methodConfig(base, 'shapley', 2);
    expect(c.ablation).toEqual({ methods: ['shapley'], seeds: [2], bootstrap: 4000, out: '' });
    expect({ ...c, run: base.run, ablation: base.ablation }).toEqual(base);
  });

  it("a run's config does not depend on the other arms, seeds or folder of the command", () => {
    const a = configSchema.parse({ run: { name: 'x' }, ablation: { seeds: [0, 2, 4], out: '/a' } });
    const b = configSchema.parse({
      run: { name: 'x' },
      ablation: { seeds: [4], methods: ['loo', 'shapley'], out: '/c', bootstrap: 500 },
    });
    expect(configHash(methodConfig(a, 'loo', 4))).toBe(configHash(methodConfig(b, 'loo', 4)));
    expect(configHash(methodConfig(a, 'loo', 2))).not.toBe(configHash(methodConfig(b, 'loo', 4)));
  });

  it('meanSampleStd is the sample mean and (n - 1) standard deviation', () => {
    // mean 0.5; deviations -0.1, 0, 0.1 -> variance 0.02 / 2 = 0.01 -> std 0.1.
    const { mean, std } = meanSampleStd([0.4, 0.5, 0.6]);
    expect(mean).toBeCloseTo(0.5, 12);
    expect(std).toBeCloseTo(0.1, 12);
    expect(meanSampleStd([0.3])).toEqual({ mean: 0.3, std: 0 });
  });
});

describe('sharp ablate (CLI, 2-step budget)', () => {
  it(
    'runs every arm and seed from one checkpoint, arms of one seed start from the same rollouts, writes the table ' +
      'with paired differences, json and plot, and resumes',
    async () => {
      // A micro starting checkpoint: tokenizer fitted to the expert's transcripts, random weights.
      const cfg = configSchema.parse({
        data: {
          synthetic: {
            seed: 1,
            train: 12,
            heldOut: 4,
            minHops: 2,
            maxHops: 2,
            world: { people: 14, companies: 6, cities: 6, countries: 3 },
          },
        },
      });
      const data = loadTrainData(cfg.data);
      const { transcripts } = await expertTranscripts(data.train, cfg);
      const model = join(root, 'start');
      await ensureModel(
        {
          ...cfg.model,
          path: model,
          init: {
            ...cfg.model.init,
            enabled: true,
            layers: 1,
            hidden: 32,
            heads: 2,
            kvHeads: 1,
            intermediate: 64,
            vocab: 400,
          },
        },
        0,
        () => tokenizerCorpus(data.train, transcripts),
      );
      const out = join(root, 'ablation');
      const file = join(root, 'ablation.yaml');
      writeFileSync(file, yaml(model, out));

      const r = await sharp(['ablate', '--config', file]);
      expect(r.stderr).not.toMatch(/internal error/);
      expect(r.code).toBe(0);
      expect(r.stdout).toContain('ablation: complete');
      const report = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8')) as {
        complete: boolean;
        summaries: { method: string; seeds: number[]; mean: number; std: number }[];
        pairs: {
          a: string;
          b: string;
          diff: { mean: number; low: number; high: number; mde: number; seeds: number; questions: number };
        }[];
        runs: {
          method: string;
          seed: number;
          steps: number;
          curve: { step: number }[];
          after: { accuracy: number; total: number; samples: number; questions: { id: string; correct: number }[] };
        }[];
      };
      expect(report.complete).toBe(true);
      expect(report.summaries.map((s) => s.method)).toEqual(['broadcast', 'matpo', 'loo', 'shapley', 'single']);
      expect(report.runs).toHaveLength(10);
      for (const run of report.runs) {
        expect(run.steps).toBe(2);
        // 4 held out: 2 validation (the curve during RL), 2 test questions x 4 samples (before and after)
        expect(run.after.total).toBe(8);
        expect(run.after.samples).toBe(4);
        expect(run.after.questions.map((q) => q.correct).reduce((a, b) => a + b, 0)).toBe(run.after.accuracy * 8);
        expect(run.curve.map((p) => p.step)).toEqual([0, 1, 2]);
      }
      // Every pair of the 5 arms, paired over 2 seeds x 2 test questions, A - B the difference of their means
      expect(report.pairs.map((p) => `${p.a}-${p.b}`)).toEqual([
        'broadcast-matpo',
        'broadcast-loo',
        'broadcast-shapley',
        'broadcast-single',
        'matpo-loo',
        'matpo-shapley',
        'matpo-single',
        'loo-shapley',
        'loo-single',
        'shapley-single',
      ]);
      for (const p of report.pairs) {
        const mean = (m: string) => report.summaries.find((s) => s.method === m)?.mean ?? NaN;
        expect(p.diff.mean).toBeCloseTo(mean(p.a) - mean(p.b), 12);
        expect(p.diff.low).toBeLessThanOrEqual(p.diff.high);
        expect([p.diff.seeds, p.diff.questions]).toEqual([2, 2]);
      }
      expect(r.stdout).toMatch(
        /ablation: broadcast - loo: [+-]\d\.\d{3} \[-?\d\.\d{3}, -?\d\.\d{3}\], MDE \d\.\d{3} \(2 seeds x 2 questions\)/,
      );
      expect(r.stdout).toMatch(/ablation: Resolved at this budget: .*; not resolved \(interval includes 0\): /);
      // The arms of one seed sample the same first batch: the step-1 rollouts of broadcast, matpo, loo and
      // shapley are identical (their credit differs; the rollout stream does not depend on it).
      const step1 = (arm: string) => {
        const rec = JSON.parse(readFileSync(join(out, arm, 'trajectories', 'step-000001.json'), 'utf8')) as {
          groups: { trajectories: { id: string; messages: { text: string }[] }[] }[];
        };
        return rec.groups.flatMap((g) => g.trajectories.map((t) => [t.id, t.messages.map((m) => m.text)]));
      };
      for (const seed of [0, 1]) {
        const first = step1(`broadcast-s${seed}`);
        expect(first.length).toBeGreaterThan(0);
        for (const arm of ['matpo', 'loo', 'shapley']) expect(step1(`${arm}-s${seed}`)).toEqual(first);
      }
      expect(step1('broadcast-s1')).not.toEqual(step1('broadcast-s0'));
      for (const s of report.summaries) {
        const accs = report.runs.filter((x) => x.method === s.method).map((x) => x.after.accuracy);
        expect(s.seeds).toEqual([0, 1]);
        expect(s).toMatchObject(meanSampleStd(accs));
      }
      // Only LOO / Shapley runs replay counterfactuals; broadcast-only and single-agent runs replay nothing.
      const metrics = (dir: string) =>
        readFileSync(join(out, dir, 'metrics.jsonl'), 'utf8')
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l) as Record<string, number>);
      expect(metrics('broadcast-s0').every((m) => m['credit/replays'] === 0)).toBe(true);
      expect(
        metrics('loo-s0').every((m) => typeof m['credit/noise_floor'] === 'number' || m['credit/worker_calls'] === 0),
      ).toBe(true);
      expect(metrics('single-s0').every((m) => m['rollout/agents_mean'] === 1)).toBe(true);
      const md = readFileSync(join(out, 'ablation.md'), 'utf8');
      for (const label of [
        'broadcast (accuracy',
        'MATPO (accuracy',
        'SHARP: leave-one-out credit',
        'SHARP: Shapley credit',
        'single-agent GRPO',
      ])
        expect(md).toContain(`| ${label}`);
      expect(md).toContain('## Paired differences (A - B)');
      expect(readFileSync(join(out, 'ablation.png')).subarray(1, 4).toString()).toBe('PNG');
      // The before-RL accuracy is measured once per agent system and shared by the runs.
      expect(existsSync(join(out, 'before-multi.json'))).toBe(true);
      expect(existsSync(join(out, 'before-single.json'))).toBe(true);

      // --report on a folder holding two finished runs: the report of those two, nothing trained.
      const partial = join(root, 'partial');
      for (const arm of ['broadcast-s0', 'loo-s0']) cpSync(join(out, arm), join(partial, arm), { recursive: true });
      const rep = await sharp(['ablate', '--config', file, '--out', partial, '--report']);
      expect(rep.code).toBe(0);
      expect(rep.stdout).toContain(`ablation: partial; ${join(partial, 'ablation.md')}`);
      expect(readdirSync(partial).sort()).toEqual([
        'ablation.json',
        'ablation.md',
        'ablation.png',
        'broadcast-s0',
        'log.jsonl',
        'loo-s0',
      ]);
      const part = JSON.parse(readFileSync(join(partial, 'ablation.json'), 'utf8')) as typeof report;
      expect(part.complete).toBe(false);
      expect(part.runs.map((x) => `${x.method}-s${x.seed}`)).toEqual(['broadcast-s0', 'loo-s0']);
      expect(part.summaries.map((x) => [x.method, x.mean])).toEqual([
        ['broadcast', report.runs.find((x) => x.method === 'broadcast' && x.seed === 0)?.after.accuracy],
        ['loo', report.runs.find((x) => x.method === 'loo' && x.seed === 0)?.after.accuracy],
      ]);

      // Again: every run is finished, so nothing is trained; the report is the same.
      const again = await sharp(['ablate', '--config', file]);
      expect(again.code).toBe(0);
      const second = JSON.parse(readFileSync(join(out, 'ablation.json'), 'utf8')) as typeof report;
      expect(second.summaries).toEqual(report.summaries);
      const log = readFileSync(join(out, 'log.jsonl'), 'utf8');
      expect(log.match(/finished earlier: skipped/g)).toHaveLength(10);
    },
    600_000,
  );

  it('refuses a folder another live process is writing (one line, exit 2)', async () => {
    const out = join(root, 'busy');
    mkdirSync(out, { recursive: true });
    // The holder: this test's own process (alive), as a second `sharp ablate` would meet it.
    const since = new Date().toISOString();
    writeFileSync(
      join(out, LOCK_FILE),
      `${JSON.stringify({
        pid: process.pid,
        start: processStartTime(process.pid),
        host: hostname(),
        command: 'sharp ablate --out busy',
        since,
      })}\n`,
    );
    const file = join(root, 'busy.yaml');
    writeFileSync(file, yaml(join(root, 'no-model'), out));
    const r = await sharp(['ablate', '--config', file]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      `sharp: run folder ${out} is in use by process ${process.pid} (sharp ablate --out busy, since ${since}); ` +
        `only one process may write a run at a time (if that process is gone, delete ${join(out, LOCK_FILE)})`,
    );
  });

  it('refuses a config with an SFT stage (one line, exit 2)', async () => {
    const file = join(root, 'bad.yaml');
    writeFileSync(file, 'train: {sft: {steps: 5, data: x.jsonl}}\n');
    const r = await sharp(['ablate', '--config', file, '--out', join(root, 'bad')]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      'sharp: ablation: train.sft.steps must be 0: every method starts from the same checkpoint (model.path), e.g. ' +
        'models/sharp-tiny-sft',
    );
  });
});
