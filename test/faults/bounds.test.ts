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
      /^sharp: data synth: --n must be in 1\.\.100000, got 1000000000$/,
    );
    await refused(
      ['rollout', '--n', '1e9', '--policy', 'expert', '--out', join(root, 'r.jsonl')],
      /^sharp: rollout: --n expects an integer in 1\.\.100000/,
    );
    expect(readdirSync(root)).toEqual([]);
  }, 120_000);

  it('init-model with a huge hidden size or vocabulary is one line, no folder', async () => {
    await refused(
      ['init-model', '--hidden', '1048576', '--heads', '4', '--kv-heads', '2', '--out', join(root, 'm')],
      /^sharp: init-model: the largest weight \(vocab x hidden, hidden x intermediate or hidden x hidden\) would have 1\.10e\+12 elements, more than one tensor can hold \(2147483647\)$/,
    );
    await refused(
      [
        'init-model',
        '--vocab',
        '2000000',
        '--hidden',
        '1024',
        '--intermediate',
        '4096',
        '--layers',
        '2000',
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
      /^sharp: worker --concurrency: 1000000000 is not an integer in 1\.\.64/,
    );
    await refused(['doctor', '--threads', '-3'], /^sharp: doctor --threads: -3 is not an integer in 0\.\.1024/);
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
