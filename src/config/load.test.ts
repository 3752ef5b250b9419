import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig, MAX_CONFIG_BYTES, parseSet } from './load.ts';

function tmpYaml(text: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'sharp-cfg-'));
  const file = join(dir, 'c.yaml');
  writeFileSync(file, text);
  return file;
}

function errorOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('gives schema defaults with no file', () => {
    const c = loadConfig();
    expect(c.train.clipLow).toBe(0.2);
    expect(c.credit.weights).toEqual({ broadcast: 0.9, marginal: 0.9, tool: 0.1 });
    expect(c.run.backend).toBe('auto');
  });

  it('lets YAML override defaults and --set override YAML, parsing scalars as YAML', () => {
    const f = tmpYaml('train:\n  lr: 0.001\n  steps: 3\nrollout:\n  protocol: json\n');
    const c = loadConfig({
      file: f,
      sets: ['train.steps=7', 'credit.weights.tool=0.5', 'run.name=abc', 'credit.toolGate=true'],
    });
    expect(c.train.lr).toBe(0.001);
    expect(c.train.steps).toBe(7);
    expect(c.rollout.protocol).toBe('json');
    expect(c.credit.weights.tool).toBe(0.5);
    expect(c.credit.weights.marginal).toBe(0.9);
    expect(c.credit.toolGate).toBe(true);
    expect(c.run.name).toBe('abc');
  });

  it('names the key and the --set on a wrong type', () => {
    const msg = errorOf(() => loadConfig({ sets: ['train.lr=abc'] }));
    expect(msg).toContain('train.lr');
    expect(msg).toContain('--set train.lr=abc');
    expect(msg.split('\n')).toHaveLength(1);
  });

  it(
    'rollout.prefixCacheMiB: 512 by default, 0 turns it off, a negative or fractional budget is one line naming the ' +
      'key',
    () => {
      expect(loadConfig({ sets: [] }).rollout.prefixCacheMiB).toBe(512);
      expect(loadConfig({ sets: ['rollout.prefixCacheMiB=0'] }).rollout.prefixCacheMiB).toBe(0);
      for (const bad of ['-1', '1.5']) {
        expect(() => loadConfig({ sets: [`rollout.prefixCacheMiB=${bad}`] })).toThrow(
          new RegExp(
            `^config: rollout\\.prefixCacheMiB: [^\\n]+ \\(from --set ` +
              `rollout\\.prefixCacheMiB=${bad.replace('.', '\\.')}\\)$`,
          ),
        );
      }
    },
  );

  it('names an unknown key and its file', () => {
    const f = tmpYaml('train:\n  lrr: 0.1\n');
    const msg = errorOf(() => loadConfig({ file: f }));
    expect(msg).toBe(`config: unknown key train.lrr (in ${f})`);
  });

  it('names an unknown section', () => {
    expect(errorOf(() => loadConfig({ sets: ['bogus.x=1'] }))).toContain('unknown key bogus');
  });

  it('reports a missing file and an unparsable file in one line', () => {
    expect(errorOf(() => loadConfig({ file: '/nonexistent/x.yaml' }))).toBe(
      'config: file not found: /nonexistent/x.yaml',
    );
    const f = tmpYaml('train:\n  lr: [1, 2\n');
    const msg = errorOf(() => loadConfig({ file: f }));
    expect(msg).toMatch(/cannot parse .*c\.yaml:\d+:\d+/);
    expect(msg.split('\n')).toHaveLength(1);
  });

  it('rejects a non-mapping document', () => {
    expect(errorOf(() => loadConfig({ file: tmpYaml('- a\n- b\n') }))).toContain('mapping');
  });

  it('applies the cross-field rules', () => {
    const msg = errorOf(() => loadConfig({ sets: ['data.synthetic.minHops=4', 'data.synthetic.maxHops=2'] }));
    expect(msg).toContain('data.synthetic.minHops (4) must be <= data.synthetic.maxHops (2)');
    expect(errorOf(() => loadConfig({ sets: ['data.source=musique'] }))).toContain('data.path is required');
  });

  it('refuses the oracle without workers, and repair or the oracle on data without gold decompositions', () => {
    expect(errorOf(() => loadConfig({ sets: ['credit.method=oracle', 'rollout.agents=single'] }))).toBe(
      'config: credit.method oracle rewards each worker by its report, and rollout.agents single has no workers; ' +
        'use rollout.agents multi or another credit.method',
    );
    expect(
      errorOf(() => loadConfig({ sets: ['credit.counterfactual=repair', 'data.source=hotpotqa', 'data.path=x.json'] })),
    ).toBe(
      'config: credit.counterfactual repair needs gold decompositions (question_decomposition), and data.source ' +
        "'hotpotqa' has none; use the synthetic world or MuSiQue",
    );
    expect(
      errorOf(() => loadConfig({ sets: ['credit.method=oracle', 'data.source=2wiki', 'data.path=x.json'] })),
    ).toContain(
      "credit.method oracle needs gold decompositions (question_decomposition), and data.source '2wiki' has none",
    );
    // repair on broadcast replays nothing: no decomposition needed; MuSiQue has one.
    expect(() =>
      loadConfig({
        sets: ['credit.counterfactual=repair', 'credit.method=broadcast', 'data.source=hotpotqa', 'data.path=x.json'],
      }),
    ).not.toThrow();
    expect(() =>
      loadConfig({ sets: ['credit.counterfactual=repair', 'data.source=musique', 'data.path=x.jsonl'] }),
    ).not.toThrow();
  });

  it('refuses a bfloat16 base with full-parameter training, which would ignore it', () => {
    expect(errorOf(() => loadConfig({ sets: ['train.lora.baseDtype=bfloat16'] }))).toBe(
      'config: train.lora.baseDtype bfloat16 keeps a frozen base for LoRA adapters, and train.lora.rank 0 trains ' +
        'every weight (full-parameter training keeps them in float32); set train.lora.rank > 0 or baseDtype float32',
    );
    expect(loadConfig({ sets: ['train.lora.baseDtype=bfloat16', 'train.lora.rank=16'] }).train.lora.baseDtype).toBe(
      'bfloat16',
    );
    expect(loadConfig({ file: 'configs/qwen3-0.6b-lora-cpu.yaml' }).train.lora.rank).toBe(16);
  });

  it('refuses a step whose rollouts and replays together could not fit in memory, though each count is in bounds', () => {
    const big = ['train.batchQuestions=1000', 'data.synthetic.train=1000', 'rollout.groupSize=64'];
    expect(errorOf(() => loadConfig({ sets: [...big, 'credit.replays=8'] }))).toBe(
      'config: a step of train.batchQuestions 1000 x rollout.groupSize 64 x (1 + credit.replays 8 x ' +
        '(rollout.maxDelegations 4 + 1)) holds 2624000 rollouts in memory; at most 2000000',
    );
    // Without replays the same step holds its 64,000 trajectories; the shipped configs are far below.
    expect(() => loadConfig({ sets: [...big, 'credit.method=broadcast'] })).not.toThrow();
    expect(() => loadConfig({ file: 'configs/qwen3-0.6b-gpu.yaml' })).not.toThrow();
  });

  it('parses --set values', () => {
    expect(parseSet('a.b=1')).toEqual({ path: ['a', 'b'], value: 1 });
    expect(parseSet('a=x=y')).toEqual({ path: ['a'], value: 'x=y' });
    expect(parseSet('a=')).toEqual({ path: ['a'], value: '' });
    expect(() => parseSet('novalue')).toThrow(/key.path=value/);
    expect(() => parseSet('a..b=1')).toThrow(/empty key/);
  });
});

describe('the likelihood value in the config', () => {
  it('needs loo or shapley, the mask counterfactual, and loo for the sequential form: one line each', () => {
    expect(loadConfig({ sets: ['credit.value=likelihood'] }).credit).toMatchObject({
      value: 'likelihood',
      likelihood: { form: 'coalition', scale: 1 },
    });
    expect(() => loadConfig({ sets: ['credit.value=likelihood', 'credit.method=broadcast'] })).toThrow(
      'credit.value likelihood values coalitions, which credit.method broadcast does not use; use loo or shapley',
    );
    expect(() => loadConfig({ sets: ['credit.value=likelihood', 'credit.counterfactual=resample'] })).toThrow(
      /credit\.counterfactual resample needs sampled replays \(use mask, or credit\.value outcome\)$/,
    );
    expect(() =>
      loadConfig({ sets: ['credit.value=likelihood', 'credit.method=shapley', 'credit.likelihood.form=sequential'] }),
    ).toThrow(/form sequential is a per-worker gain, not a coalition value: it needs credit\.method loo$/);
    expect(() => loadConfig({ sets: ['credit.value=gain'] })).toThrow(/credit\.value/);
    expect(() => loadConfig({ sets: ['credit.likelihood.scale=0'] })).toThrow(/credit\.likelihood\.scale/);
  });
});

describe('loadConfig --set of a section and prototype keys', () => {
  it('a mapping-valued --set merges into the section instead of resetting the rest of it', () => {
    const f = tmpYaml('train:\n  lr: 0.001\n  steps: 3\n');
    const c = loadConfig({ file: f, sets: ['train={steps: 9, sft: {lr: 0.5}}'] });
    expect(c.train.steps).toBe(9);
    expect(c.train.lr).toBe(0.001); // from the file, not the schema default
    expect(c.train.sft.lr).toBe(0.5);
    expect(c.train.sft.steps).toBe(loadConfig().train.sft.steps); // the rest of train.sft keeps its default
  });

  it('blames a bad value inside a mapping-valued --set on that --set, not on the YAML file', () => {
    const f = tmpYaml('train:\n  steps: 3\n');
    expect(errorOf(() => loadConfig({ file: f, sets: ['train={lr: abc}'] }))).toMatch(
      /^config: train\.lr: .* \(from --set train=\{lr: abc\}\)$/,
    );
    expect(errorOf(() => loadConfig({ file: f, sets: ['train={lrr: 1}'] }))).toBe(
      'config: unknown key train.lrr (from --set train={lrr: 1})',
    );
    // A bad value that the file gave is still the file's.
    const g = tmpYaml('train:\n  lr: abc\n');
    expect(errorOf(() => loadConfig({ file: g, sets: ['train={steps: 2}'] }))).toMatch(
      new RegExp(`^config: train\\.lr: .* \\(in ${g.replace(/[/.]/g, '\\$&')}\\)$`),
    );
  });

  it.each([
    '__proto__.x=1',
    'constructor.prototype.x=1',
    'train.__proto__.x=1',
    'train={__proto__: {x: 1}}',
    'train.prototype=1',
  ])('refuses --set %s and leaves Object.prototype clean', (set) => {
    const msg = errorOf(() => loadConfig({ sets: [set] }));
    expect(msg).toMatch(
      /key '.*(__proto__|constructor|prototype)' is not allowed \(it would reach Object\.prototype\)$/,
    );
    expect(({} as Record<string, unknown>).x).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty('x');
  });

  it('refuses a prototype key in the YAML file', () => {
    const f = tmpYaml('train:\n  __proto__:\n    x: 1\n');
    expect(errorOf(() => loadConfig({ file: f }))).toBe(
      `config: ${f}: key 'train.__proto__' is not allowed (it would reach Object.prototype)`,
    );
    expect(({} as Record<string, unknown>).x).toBeUndefined();
  });

  it('refuses a self-referencing YAML alias in --set and in a file instead of recursing forever', () => {
    expect(errorOf(() => loadConfig({ sets: ['run=&a [*a]'] }))).toBe(
      "config: --set run=&a [*a]: 'run.0' refers to itself (a YAML alias cycle)",
    );
    const f = tmpYaml('train: &t\n  sft: *t\n');
    expect(errorOf(() => loadConfig({ file: f }))).toBe(
      `config: ${f}: 'train.sft' refers to itself (a YAML alias cycle)`,
    );
  });
});

describe('loadConfig: size, duplicate keys, names and sane ranges', () => {
  it('parses a 1 MB file with 85,000 keys in linear time and names the unknown keys briefly', () => {
    const lines = ['train:'];
    for (let i = 0; i < 85_000; i++) lines.push(`  k${i}: 1`);
    const f = tmpYaml(`${lines.join('\n')}\n`);
    const cpu0 = process.cpuUsage();
    const msg = errorOf(() => loadConfig({ file: f }));
    // The yaml package's quadratic duplicate-key check took over a minute on this file. CPU time,
    // not wall-clock: other jobs on a shared machine slow the clock, not the work.
    const cpu = process.cpuUsage(cpu0);
    expect((cpu.user + cpu.system) / 1000).toBeLessThan(20_000);
    expect(msg).toBe(`config: unknown key train.k0, train.k1, train.k2, train.k3, train.k4 (and 84995 more) (in ${f})`);
  }, 60_000);

  it('still refuses a duplicate key, naming its line', () => {
    const f = tmpYaml('train:\n  lr: 0.1\n  steps: 1\n  lr: 0.2\n');
    expect(errorOf(() => loadConfig({ file: f }))).toBe(
      `config: cannot parse ${f}:4:3: duplicate key 'lr' (map keys must be unique)`,
    );
    const g = tmpYaml('run: {name: a}\nrun: {name: b}\n');
    expect(errorOf(() => loadConfig({ file: g }))).toBe(
      `config: cannot parse ${g}:2:1: duplicate key 'run' (map keys must be unique)`,
    );
    // Keys in different mappings may repeat.
    expect(loadConfig({ file: tmpYaml('train: {lr: 0.01, sft: {lr: 0.02}}\n') }).train.sft.lr).toBe(0.02);
  });

  it('refuses a file over 1 MiB before parsing it', () => {
    const f = tmpYaml(`# ${'x'.repeat(MAX_CONFIG_BYTES)}\n`);
    expect(errorOf(() => loadConfig({ file: f }))).toBe(
      `config: ${f} is ${MAX_CONFIG_BYTES + 3} bytes; a config file may hold at most 1048576 bytes (1 MiB)`,
    );
  });

  it('blames an unknown section given by --set on that --set, not on the file', () => {
    const f = tmpYaml('train:\n  steps: 3\n');
    expect(errorOf(() => loadConfig({ file: f, sets: ['a.b=1'] }))).toBe('config: unknown key a (from --set a.b=1)');
    expect(errorOf(() => loadConfig({ file: tmpYaml('a: {b: 1}\n') }))).toMatch(
      /^config: unknown key a \(in .*c\.yaml\)$/,
    );
  });

  it.each([
    [
      'a/b',
      "config: run.name: 'a/b' is not one folder name (no / or \\; the run folder is " +
        '<run.dir>/<name>-<timestamp>) (from --set run.name=a/b)',
    ],
    [
      '../escape',
      "config: run.name: '../escape' is not one folder name (no / or \\; the run folder is " +
        '<run.dir>/<name>-<timestamp>) (from --set run.name=../escape)',
    ],
    ['..', "config: run.name: '..' is not a folder name (from --set run.name=..)"],
    [
      'a\\b',
      "config: run.name: 'a\\b' is not one folder name (no / or \\; the run folder is " +
        '<run.dir>/<name>-<timestamp>) (from --set run.name=a\\b)',
    ],
  ])('refuses run.name=%s (one path segment only)', (name, msg) => {
    expect(errorOf(() => loadConfig({ sets: [`run.name=${name}`] }))).toBe(msg);
  });

  it('refuses a run name over 200 characters or bytes and accepts 200', () => {
    expect(errorOf(() => loadConfig({ sets: [`run.name=${'x'.repeat(300)}`] }))).toMatch(
      /^config: run\.name: at most 200 characters /,
    );
    expect(errorOf(() => loadConfig({ sets: [`run.name=${'é'.repeat(150)}`] }))).toMatch(
      /^config: run\.name: 300 bytes; at most 200 /,
    );
    expect(loadConfig({ sets: [`run.name=${'x'.repeat(200)}`] }).run.name).toHaveLength(200);
  });

  it('bounds learning rates, batch and data sizes', () => {
    expect(errorOf(() => loadConfig({ sets: ['train.lr=1e10'] }))).toBe(
      'config: train.lr: a learning rate above 1 would move every weight by up to lr per Adam step and wreck the ' +
        'model (sane: 1e-6..1e-2) (from --set train.lr=1e10)',
    );
    expect(errorOf(() => loadConfig({ sets: ['train.dpo.lr=5'] }))).toMatch(
      /^config: train\.dpo\.lr: a DPO learning rate above 1 /,
    );
    expect(loadConfig({ sets: ['train.lr=1'] }).train.lr).toBe(1);
    expect(errorOf(() => loadConfig({ sets: ['train.batchQuestions=1e12'] }))).toBe(
      'config: train.batchQuestions: Too big: expected number to be <=100000 (from --set train.batchQuestions=1e12)',
    );
    expect(errorOf(() => loadConfig({ sets: ['data.synthetic.train=12', 'train.batchQuestions=10000000'] }))).toMatch(
      /^config: train\.batchQuestions: Too big/,
    );
    expect(errorOf(() => loadConfig({ sets: ['data.synthetic.train=12', 'train.batchQuestions=13'] }))).toBe(
      'config: train.batchQuestions (13) must be <= data.synthetic.train (12): a step takes each training question ' +
        'at most once',
    );
    // Without RL steps the batch size is unused.
    expect(
      loadConfig({ sets: ['data.synthetic.train=12', 'train.batchQuestions=13', 'train.steps=0'] }).train
        .batchQuestions,
    ).toBe(13);
    expect(errorOf(() => loadConfig({ sets: ['data.synthetic.train=1e9'] }))).toBe(
      'config: data.synthetic.train: Too big: expected number to be <=100000 (from --set data.synthetic.train=1e9)',
    );
    expect(errorOf(() => loadConfig({ sets: ['data.synthetic.world.people=1e9'] }))).toMatch(
      /^config: data\.synthetic\.world\.people: Too big: expected number to be <=10000 /,
    );
  });
});
