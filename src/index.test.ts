import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { expectLoadable, microConfig, sharp } from '../test/cli-helpers.ts';
import { AUDIT_ARMS } from './eval/audit/arms.ts';
import { configFrom } from './recipes/stages/run-setup.ts';
import { readMetrics } from './train/metrics/jsonl.ts';
import { audit, evaluate, loadConfig, train, UserError } from './index.ts';

/**
 * The library entry in process: loadConfig reads what the CLI reads; train, evaluate and audit write
 * what their commands write (compared file for file with the real CLI where a run is deterministic);
 * the user's JSONL questions run through all three.
 */
const repo = resolve(import.meta.dirname, '..');
const sample = join(repo, 'data/jsonl/questions_sample.jsonl');
const root = mkdtempSync(join(tmpdir(), 'sharp-api-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** The UserError a call rejects or throws with (its message), failing when it gives none or another error. */
async function userErrorOf(f: () => unknown): Promise<string> {
  try {
    await f();
  } catch (err) {
    expect(err).toBeInstanceOf(UserError);
    return (err as Error).message;
  }
  throw new Error('no error');
}

describe('the entry', () => {
  it('exports these values (index.js at the package root re-exports the same list)', async () => {
    expect(Object.keys(await import('./index.ts')).sort()).toEqual([
      'UserError',
      'audit',
      'defineReward',
      'defineTool',
      'evaluate',
      'loadConfig',
      'train',
    ]);
    expect(readFileSync(join(repo, 'index.js'), 'utf8')).toContain(
      'export const { loadConfig, train, evaluate, audit, defineReward, defineTool, UserError } = api;',
    );
  });
});

describe('loadConfig', () => {
  it('reads a file and its overrides exactly as the CLI does', () => {
    const file = join(repo, 'configs/quickstart.yaml');
    const sets = ['train.steps=3', 'credit={method: shapley}'];
    const cfg = loadConfig(file, sets);
    expect(cfg).toEqual(configFrom({ config: file, set: sets }));
    expect([cfg.run.name, cfg.train.steps, cfg.credit.method, cfg.rollout.groupSize]).toEqual([
      'quickstart',
      3,
      'shapley',
      8,
    ]);
  });

  it('takes the same keys as an object, leaves it unchanged, and applies the overrides after it', () => {
    const given = { run: { name: 'mine' }, train: { steps: 7, lr: 0.002 } };
    const before = structuredClone(given);
    const cfg = loadConfig(given, ['train.steps=9']);
    expect(given).toEqual(before);
    expect([cfg.run.name, cfg.train.steps, cfg.train.lr]).toEqual(['mine', 9, 0.002]);
    // Everything not given is the schema's default, as with an empty file.
    expect({ ...cfg, run: { ...cfg.run, name: 'sharp' }, train: { ...cfg.train, steps: 0, lr: 0 } }).toEqual({
      ...loadConfig(),
      run: { ...loadConfig().run, name: 'sharp' },
      train: { ...loadConfig().train, steps: 0, lr: 0 },
    });
  });

  it('bad input is one line naming the key, as in the CLI', async () => {
    // The object's type refuses these already; a JavaScript caller gets the CLI's messages.
    expect(await userErrorOf(() => loadConfig({ train: { lrr: 1 } } as never))).toBe('config: unknown key train.lrr');
    expect(await userErrorOf(() => loadConfig({ train: { steps: 'many' } } as never))).toBe(
      'config: train.steps: Invalid input: expected number, received string',
    );
    expect(await userErrorOf(() => loadConfig({}, ['train.steps=-1']))).toMatch(
      /^config: train\.steps: .* \(from --set train\.steps=-1\)$/,
    );
    expect(await userErrorOf(() => loadConfig(join(root, 'missing.yaml')))).toBe(
      `config: file not found: ${join(root, 'missing.yaml')}`,
    );
    expect(await userErrorOf(() => loadConfig([] as never))).toBe(
      'config: the config object must be a mapping of sections',
    );
    expect(await userErrorOf(() => loadConfig({ run: { name: () => 'x' } } as never))).toMatch(
      /^config: the config object holds a value that is not data \(.+\)$/,
    );
    expect(await userErrorOf(() => loadConfig(JSON.parse('{"__proto__": {"x": 1}}') as never))).toBe(
      "config: key '__proto__' is not allowed (it would reach Object.prototype)",
    );
  });

  it('train, evaluate and audit check the config they are given as loadConfig does, before any folder', async () => {
    const cfg = loadConfig({ run: { dir: join(root, 'checked-runs') } });
    const changed = { ...cfg, train: { ...cfg.train, steps: 'x' } } as never;
    const steps = 'config: train.steps: Invalid input: expected number, received string';
    expect(await userErrorOf(() => train(changed))).toBe(steps);
    expect(await userErrorOf(() => evaluate({ config: changed }))).toBe(steps);
    expect(await userErrorOf(() => audit({ config: changed }))).toBe(steps);
    const mapping = 'config: the config object must be a mapping of sections (loadConfig)';
    for (const bad of [undefined, null, 42, {}.toString()])
      expect(await userErrorOf(() => train(bad as never))).toBe(mapping);
    expect(await userErrorOf(() => evaluate({ config: null as never }))).toBe(mapping);
    // A config with a cross-field rule broken by hand gets the rule's line.
    const rule = { ...cfg, credit: { ...cfg.credit, value: 'likelihood', method: 'broadcast' } } as never;
    expect(await userErrorOf(() => train(rule))).toMatch(/^config: credit\.value likelihood values coalitions/);
    expect(existsSync(join(root, 'checked-runs'))).toBe(false);
  });
});

describe('evaluate', () => {
  it('on the user JSONL sample writes what `sharp eval` writes, and the expert answers every question', async () => {
    const config = loadConfig({ run: { dir: join(root, 'runs') } });
    const res = await evaluate({ config, bench: 'jsonl', policy: 'expert', out: join(root, 'eval-api') });
    expect(res.out).toBe(join(root, 'eval-api'));
    expect([res.bench, res.agents, res.episodes, res.run.ran]).toEqual(['jsonl', 'multi', 10, 10]);
    expect(res.report.metrics).toMatchObject({ em: 1, f1: 1, cover_em: 1 });
    expect(res.report.headline).toBe('f1');
    expect(res.report.breakdown.hops?.map((r) => [r.group, r.count])).toEqual([
      ['2hop', 6],
      ['3hop', 4],
    ]);
    expect(res.files).toEqual({
      predictions: join(root, 'eval-api/predictions.jsonl'),
      metrics: join(root, 'eval-api/metrics.json'),
      report: join(root, 'eval-api/report.md'),
    });
    expect(JSON.parse(readFileSync(res.files.metrics, 'utf8'))).toEqual(res.report);

    const cli = await sharp(root, ['eval', '--bench', 'jsonl', '--policy', 'expert', '--out', join(root, 'eval-cli')]);
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain(`eval jsonl (multi): 10 episodes (10 run now in `);
    expect(cli.stdout).toContain('em 1, f1 1, cover_em 1, support_f1 ');
    for (const f of ['predictions.jsonl', 'metrics.json', 'report.md', 'stages.json'])
      expect(readFileSync(join(root, 'eval-cli', f), 'utf8'), f).toBe(readFileSync(join(root, 'eval-api', f), 'utf8'));
  }, 60_000);

  it('a bad line of the user file is FILE:LINE: reason, from the API and from the CLI (exit 2)', async () => {
    const bad = join(root, 'bad.jsonl');
    writeFileSync(bad, `${readFileSync(sample, 'utf8').split('\n')[0]}\n{"id": "x", "question": "Q?", "answer": ""}\n`);
    const reason = `${bad}:2: answer: expected a non-empty string`;
    const out = join(root, 'eval-bad');
    expect(await userErrorOf(() => evaluate({ bench: 'jsonl', data: bad, policy: 'expert', out }))).toBe(reason);
    const cli = await sharp(root, ['eval', '--bench', 'jsonl', '--data', bad, '--policy', 'expert', '--out', out]);
    expect(cli.code).toBe(2);
    expect(cli.stderr).toBe(`sharp: ${reason}\n`);
  }, 60_000);
});

describe('audit', () => {
  it('audits the user JSONL questions and writes what `sharp audit` writes for the same input', async () => {
    const sets = ['data.source=jsonl', `data.path=${sample}`];
    const config = loadConfig(join(repo, 'configs/quickstart.yaml'), sets);
    const model = join(repo, 'models/sharp-tiny-sft');
    const res = await audit({ config, model, n: 2, reps: 50, out: join(root, 'audit-api') });
    expect(res.report.trajectories).toBe(2);
    expect(res.report.setup).toMatchObject({ n: 2, reps: 50, seed: 0, config: null, model });
    expect(res.report.arms.map((a) => a.name)).toEqual(AUDIT_ARMS.map((a) => a.name));
    expect(res.files).toEqual({
      report: join(root, 'audit-api/audit.json'),
      markdown: join(root, 'audit-api/audit.md'),
      calls: join(root, 'audit-api/calls.jsonl'),
    });
    expect(JSON.parse(readFileSync(res.files.report, 'utf8'))).toEqual(res.report);
    expect(readFileSync(res.files.markdown, 'utf8')).toBe(res.markdown);

    const args = ['--model', model, '--n', '2', '--reps', '50', '--out', join(root, 'audit-cli')];
    const cli = await sharp(root, [
      'audit',
      ...args,
      '--config',
      join(repo, 'configs/quickstart.yaml'),
      '--set',
      sets[0] as string,
      '--set',
      sets[1] as string,
    ]);
    expect(cli.code).toBe(0);
    const fromCli = join(root, 'audit-cli');
    expect(readFileSync(join(fromCli, 'calls.jsonl'), 'utf8')).toBe(readFileSync(res.files.calls, 'utf8'));
    // The same numbers; only the timings and the config's name (a file for the CLI) differ.
    const untimed = (r: typeof res.report) => ({
      ...r,
      rolloutSeconds: 0,
      setup: { ...r.setup, config: null },
      arms: r.arms.map((a) => ({ ...a, seconds: 0 })),
    });
    const cliReport = JSON.parse(readFileSync(join(fromCli, 'audit.json'), 'utf8')) as typeof res.report;
    expect(cliReport.setup.config).toBe(join(repo, 'configs/quickstart.yaml'));
    expect(untimed(cliReport)).toEqual(untimed(res.report));
  }, 120_000);
});

describe('train', () => {
  it('trains on the user JSONL questions: a stop signal saves after the step, resume finishes the run', async () => {
    const file = microConfig(root, 'api', 2);
    const cfg = loadConfig(file, ['data.source=jsonl', `data.path=${sample}`]);
    const first = await train(cfg, { signal: AbortSignal.abort(), backend: 'wasm' });
    expect([first.stopped, first.step, first.summary.stopped]).toEqual([true, 1, true]);
    expect(readdirSync(join(root, 'runs'))).toEqual([first.runDir.split('/').at(-1)]);
    // 10 questions: 5 trained on, 5 held out (2 validation, 3 test).
    expect(first.summary.heldOutBefore?.total).toBe(3);
    expect(first.summary.heldOutAfterRl).toBeUndefined();

    const second = await train(cfg, { resume: first.runDir, backend: 'wasm' });
    expect([second.runDir, second.stopped, second.step]).toEqual([first.runDir, false, 2]);
    expect(second.backend.backend).toBe('wasm');
    expect(second.summary.rlSteps).toBe(2);
    expect(second.summary.heldOutAfterRl?.total).toBe(3);
    expect(second.summary.heldOutBefore).toEqual(first.summary.heldOutBefore);

    const run = second.runDir;
    for (const f of ['config.yaml', 'log.jsonl', 'metrics.jsonl', 'sft-metrics.jsonl', 'summary.json'])
      expect(existsSync(join(run, f)), f).toBe(true);
    expect(loadConfig(join(run, 'config.yaml'))).toEqual(cfg);
    expect(JSON.parse(readFileSync(join(run, 'summary.json'), 'utf8'))).toEqual(second.summary);
    expect(readMetrics(join(run, 'metrics.jsonl')).map((m) => m.step)).toEqual([1, 2]);
    expect(await expectLoadable(run)).toEqual([1, 2]);
    const msgs = readFileSync(join(run, 'log.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { msg: string }).msg);
    expect(msgs).toEqual(expect.arrayContaining(['new run', 'resuming run', 'sft done']));
  }, 300_000);
});
