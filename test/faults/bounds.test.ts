import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.ts';
import { checkInitSize, initParameters } from '../../src/recipes/stages/model-size.ts';
import { sharp } from '../cli-helpers.ts';

/**
 * Every count and size a user gives is bounded (one line, exit 2, before any folder is made) or
 * streamed with progress: absurd record and episode counts, model dimensions, world sizes, a
 * context longer than the model's positions, worker and doctor counts.
 */
const REPO = resolve(import.meta.dirname, '../..');
const root = mkdtempSync(join(tmpdir(), 'sharp-bounds-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

async function refused(args: string[], line: RegExp): Promise<void> {
  const r = await sharp(root, args);
  expect(r.code, r.stderr).toBe(2);
  const lines = r.stderr.trim().split('\n');
  expect(lines, r.stderr).toHaveLength(1);
  expect(lines[0]).toMatch(line);
}

describe('bounded counts and sizes', () => {
  it('data synth and rollout --n 1e9 are refused at once', async () => {
    await refused(
      ['data', 'synth', '--n', '1e9', '--out', join(root, 's.jsonl')],
      /^sharp: data synth: --n expects an integer in 1\.\.100000, got '1e9'$/,
    );
    await refused(
      ['rollout', '--n', '1e9', '--policy', 'expert', '--out', join(root, 'r.jsonl')],
      /^sharp: rollout: --n expects an integer in 1\.\.100000/,
    );
    expect(readdirSync(root)).toEqual([]);
  }, 120_000);

  it('audit --n and --reps 1e9 are refused at once; --n past the training split too, before any output', async () => {
    const model = ['--model', join(REPO, 'models/sharp-tiny-sft-parallel')];
    const out = join(root, 'audit');
    await refused(
      ['audit', ...model, '--n', '1e9', '--out', out],
      /^sharp: audit: --n expects an integer in 1\.\.100000, got '1e9'$/,
    );
    await refused(
      ['audit', ...model, '--n', '1000000000', '--out', out],
      /^sharp: audit: --n expects an integer in 1\.\.100000, got '1000000000'$/,
    );
    await refused(
      ['audit', ...model, '--reps', '1e9', '--out', out],
      /^sharp: audit: --reps expects an integer in 1\.\.100000/,
    );
    await refused(
      [
        'audit',
        ...model,
        '--config',
        join(REPO, 'configs/ablation-parallel.yaml'),
        '--set',
        'data.synthetic.train=200',
        '--n',
        '1000',
        '--out',
        out,
      ],
      /^sharp: audit: --n 1000 is more than the 200 training questions \(data\.synthetic\.train\); the audit takes the first n of them$/,
    );
    expect(readdirSync(root)).toEqual([]);
  }, 120_000);

  it('init-model with a huge hidden size or vocabulary is one line, no folder', async () => {
    await refused(
      ['init-model', '--hidden', '1048576', '--heads', '4', '--kv-heads', '2', '--out', join(root, 'm')],
      /^sharp: init-model: --hidden expects an integer in 1\.\.65536, got '1048576'$/,
    );
    await refused(
      [
        'init-model',
        '--hidden',
        '65536',
        '--vocab',
        '65536',
        '--heads',
        '4',
        '--kv-heads',
        '2',
        '--out',
        join(root, 'm'),
      ],
      /^sharp: init-model: the largest weight \(vocab x hidden, hidden x intermediate or hidden x hidden\) would have 4\.29e\+9 elements, more than one tensor can hold \(2147483647\)$/,
    );
    await refused(
      [
        'init-model',
        '--vocab',
        '2000000',
        '--hidden',
        '1024',
        '--layers',
        '1000',
        '--intermediate',
        '65536',
        '--out',
        join(root, 'm'),
      ],
      /^sharp: init-model: .* parameters need .* GiB as float32, more than this machine's/,
    );
    expect(existsSync(join(root, 'm'))).toBe(false);
  }, 120_000);

  it(
    "train: world sizes out of range, a context past the model's positions, a model too large: refused before the " +
      'run folder exists',
    async () => {
      const sets = (...s: string[]) => [`run.dir=${join(root, 'runs')}`, ...s].flatMap((x) => ['--set', x]);
      await refused(
        ['train', ...sets('data.synthetic.world.cities=300')],
        /^sharp: config: data\.synthetic\.world\.people: people \(220\) must be >= cities \(300\): mayors are distinct people/,
      );
      await refused(
        ['train', ...sets('data.synthetic.world.people=9000')],
        /a fresh world holds at most 5000 entities/,
      );
      await refused(
        ['train', ...sets(`model.path=${join(REPO, 'models/tiny-random')}`, 'rollout.maxContext=4096')],
        /^sharp: train: rollout\.maxContext \(4096\) is more than the model at model\.path .* holds \(2048 positions/,
      );
      await refused(
        [
          'train',
          ...sets(`model.path=${join(root, 'new-model')}`, 'model.init.enabled=true', 'model.init.maxPositions=512'),
        ],
        /^sharp: train: rollout\.maxContext \(1024\) is more than model\.init\.maxPositions holds \(512 positions/,
      );
      await refused(
        [
          'train',
          ...sets(
            `model.path=${join(root, 'new-model')}`,
            'model.init.enabled=true',
            'model.init.hidden=65536',
            'model.init.intermediate=65536',
          ),
        ],
        /^sharp: model\.init: .*more than one tensor can hold/,
      );
      expect(existsSync(join(root, 'runs'))).toBe(false);
      expect(existsSync(join(root, 'new-model'))).toBe(false);
    },
    300_000,
  );

  it('worker --concurrency 1e9 and doctor --threads -3 are refused', async () => {
    await refused(
      ['worker', '--redis', 'redis://127.0.0.1:6379', '--concurrency', '1e9'],
      /^sharp: worker: --concurrency expects an integer in 1\.\.64, got '1e9'$/,
    );
    await refused(
      ['doctor', '--threads', '-3'],
      /^sharp: doctor: --threads expects an integer in 0\.\.1024, got '-3'$/,
    );
  }, 120_000);
});

describe('streamed with progress', () => {
  it('data synth of thousands of records prints a progress line per thousand on stderr', async () => {
    const r = await sharp(root, ['data', 'synth', '--n', '2000', '--out', join(root, 'many.jsonl')]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toMatch(
      /^data synth: 1000\/2000 records \([\d.]+ s\)\ndata synth: 2000\/2000 records \([\d.]+ s\)\n$/,
    );
  }, 120_000);
});

describe('checkInitSize', () => {
  it('counts the parameters of the default model and scales with memory', () => {
    // 2000 x 128 embedding (tied) + 2 layers x (2*128^2 + 2*128*64 [k, v: 2 kv heads x 32] + 3*128*344 + 2*128) + 128
    const d = { layers: 2, hidden: 128, heads: 4, kvHeads: 2, intermediate: 344, vocab: 2000, tieEmbeddings: true };
    expect(initParameters(d)).toBe(256_000 + 2 * (32_768 + 16_384 + 132_096 + 256) + 128);
    expect(() => checkInitSize(d, 'x', 1e9)).not.toThrow();
    expect(() => checkInitSize(d, 'x', 1e6)).toThrow(
      /^x: 6\.19e\+5 parameters need 0\.0 GiB as float32, more than this machine's 0\.0 GiB of memory$/,
    );
  });
});

describe('lists that are sets', () => {
  it.each([
    ['ablation.seeds=[0, 0]', /ablation\.seeds: each seed at most once/],
    ['ablation.methods=[loo, shapley, loo]', /ablation\.methods: each method at most once/],
    ['train.lora.targets=[q_proj, q_proj]', /train\.lora\.targets: each projection at most once/],
    ['train.sft.expert.agents=[multi, multi]', /train\.sft\.expert\.agents: each agent system at most once/],
  ])('%s is one config error, not one run counted twice', (set, msg) => {
    expect(() => loadConfig({ sets: [set] })).toThrow(ConfigError);
    expect(() => loadConfig({ sets: [set] })).toThrow(msg);
  });
});

describe('config counts a run cannot hold, refused with the config', () => {
  it.each([
    ['credit.replays=1e9', /^config: credit\.replays: Too big: expected number to be <=64 /],
    [
      'data.synthetic.namePool=3',
      /^config: data\.synthetic\.namePool: a pool of 3 words cannot name a world of this size: it takes 624 words /,
    ],
    ['data.synthetic.namePool=200000', /^config: data\.synthetic\.namePool: Too big: expected number to be <=100000 /],
    // Node fires a longer timer after 1 ms: every search would time out at once.
    [
      'rollout.search.timeoutMs=2147483648',
      /^config: rollout\.search\.timeoutMs: at most 2147483647 ms \(2\^31 - 1, the longest delay a Node timer holds\)/,
    ],
    ['rollout.code.timeoutMs=1e12', /^config: rollout\.code\.timeoutMs: at most 2147483647 ms/],
    [
      'train.lora.baseDtype=bfloat16',
      /^config: train\.lora\.baseDtype bfloat16 keeps a frozen base for LoRA adapters, and train\.lora\.rank 0 trains every weight/,
    ],
  ])('%s is one config error', (set, msg) => {
    expect(() => loadConfig({ sets: [set] })).toThrow(ConfigError);
    expect(() => loadConfig({ sets: [set] })).toThrow(msg);
  });
});
