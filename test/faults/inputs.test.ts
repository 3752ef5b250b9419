import fc from 'fast-check';
import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.ts';
import { UserError } from '../../src/errors.ts';
import { readSafetensors } from '../../src/model/io/safetensors.ts';
import { microConfig, sharp } from '../cli-helpers.ts';

/**
 * Fuzzed user inputs: configs (YAML files and --set) and checkpoints (safetensors headers and
 * tensor bytes). Each either loads or fails with a typed one-line error: never another exception,
 * never a stack, never a polluted Object.prototype.
 */

const dir = mkdtempSync(join(tmpdir(), 'sharp-fuzz-'));
const TINY = resolve(import.meta.dirname, '../../models/tiny-random/model.safetensors');

function expectOneLineUserError(err: unknown, type: new (...a: never[]) => Error): void {
  expect(err, String(err instanceof Error ? err.stack : err)).toBeInstanceOf(type);
  expect((err as Error).message).not.toContain('\n');
}

const KEYS = [
  'run',
  'run.name',
  'run.seed',
  'train',
  'train.lr',
  'train.steps',
  'train.sft',
  'train.sft.steps',
  'rollout.protocol',
  'rollout.code.timeoutMs',
  'credit.weights.tool',
  'eval.limit',
  'bogus',
  '__proto__',
  'constructor',
  'train.__proto__',
  'model.init.hidden',
  '',
];
const VALUES = fc.oneof(
  fc.constantFrom(
    '1',
    '-1',
    '0',
    '1e309',
    'abc',
    '',
    '{}',
    '[]',
    '{steps: 2}',
    '{__proto__: {x: 1}}',
    'null',
    'true',
    '[1, {a: 2}]',
    '{lr: nope}',
    '"quoted"',
    '&a [*a]',
    '!!js/function x',
  ),
  fc.string({ maxLength: 20 }),
);

describe('fuzzed configs', () => {
  it('--set with generated keys and values loads or fails with one ConfigError line', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom(...KEYS), VALUES), { maxLength: 4 }), (sets) => {
        try {
          loadConfig({ sets: sets.map(([k, v]) => `${k}=${v}`) });
        } catch (err) {
          expectOneLineUserError(err, ConfigError);
        }
        expect(Object.prototype).not.toHaveProperty('x');
      }),
      { numRuns: 400, seed: 17 },
    );
  });

  it('generated YAML files load or fail with one ConfigError line', () => {
    const file = join(dir, 'c.yaml');
    const yamlText = fc.oneof(
      fc.string({ unit: 'binary', maxLength: 200 }),
      fc
        .array(
          fc.tuple(
            fc.constantFrom('run', 'train', 'rollout', '__proto__', 'x'),
            fc.constantFrom(
              '',
              ' {lr: 1}',
              ' [1, 2]',
              ' 5',
              ' {steps: -1}',
              ': :',
              ' {a: {b: {c: 1}}}',
              '\n  lr: abc',
              '\n\t- x',
            ),
          ),
          { maxLength: 4 },
        )
        .map((es) => es.map(([k, v]) => `${k}:${v}`).join('\n')),
    );
    fc.assert(
      fc.property(yamlText, (text) => {
        writeFileSync(file, text);
        try {
          loadConfig({ file });
        } catch (err) {
          expectOneLineUserError(err, ConfigError);
        }
        expect(Object.prototype).not.toHaveProperty('x');
      }),
      { numRuns: 300, seed: 18 },
    );
  });
});

describe('fuzzed checkpoints', () => {
  const good = readFileSync(TINY);
  const headerLen = Number(good.readBigUInt64LE(0));

  async function expectLoadsOrUserError(bytes: Uint8Array): Promise<void> {
    const f = join(dir, 'm.safetensors');
    writeFileSync(f, bytes);
    try {
      await readSafetensors(f);
    } catch (err) {
      expectOneLineUserError(err, UserError);
    }
  }

  it('random byte flips in the header and truncations give a one-line checkpoint error', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.nat({ max: 8 + headerLen - 1 }), fc.nat({ max: 255 })), { minLength: 1, maxLength: 6 }),
        fc.option(fc.nat({ max: good.length })),
        async (flips, cut) => {
          const b = Buffer.from(good);
          for (const [at, v] of flips) b[at] = v;
          await expectLoadsOrUserError(cut === null ? b : b.subarray(0, cut));
        },
      ),
      { numRuns: 200, seed: 19 },
    );
  });

  it('generated headers (dtypes, shapes, offsets, lengths) give a one-line checkpoint error', async () => {
    const entry = fc.record({
      dtype: fc.constantFrom('F32', 'BF16', 'F16', 'I64', 'U8', 'F64', 'bogus', ''),
      shape: fc.array(fc.oneof(fc.nat({ max: 4 }), fc.constantFrom(-1, 1e12, 2 ** 53, 0.5)), { maxLength: 3 }),
      data_offsets: fc.tuple(
        fc.oneof(fc.nat({ max: 64 }), fc.constantFrom(-8, 1e15)),
        fc.oneof(fc.nat({ max: 64 }), fc.constantFrom(-8, 1e15)),
      ),
    });
    const header = fc.dictionary(
      fc.oneof(fc.constantFrom('w', '__metadata__', '__proto__', ''), fc.string({ maxLength: 8 })),
      fc.oneof(entry, fc.anything()),
      { maxKeys: 3 },
    );
    await fc.assert(
      fc.asyncProperty(
        header,
        fc.option(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })),
        fc.nat({ max: 80 }),
        async (h, lenOverride, dataBytes) => {
          const json = Buffer.from(JSON.stringify(h), 'utf8');
          const len = Buffer.alloc(8);
          len.writeBigUInt64LE(lenOverride ?? BigInt(json.length));
          await expectLoadsOrUserError(Buffer.concat([len, json, Buffer.alloc(dataBytes, 0x7f)]));
        },
      ),
      { numRuns: 300, seed: 20 },
    );
  });
});

describe('sizes and names nobody could mean, through `sharp train`', () => {
  // Each is refused by the config check, before any run folder, data or model exists.
  it.each([
    [
      'train.batchQuestions=1e12',
      /^sharp: config: train\.batchQuestions: Too big: expected number to be <=100000 \(from --set train\.batchQuestions=1e12\)$/,
    ],
    [
      'train.batchQuestions=10000000',
      /^sharp: config: train\.batchQuestions: Too big: expected number to be <=100000 /,
    ],
    [
      'train.batchQuestions=13',
      /^sharp: config: train\.batchQuestions \(13\) must be <= data\.synthetic\.train \(12\): a step takes each training question at most once$/,
    ],
    ['data.synthetic.train=1e9', /^sharp: config: data\.synthetic\.train: Too big: expected number to be <=100000 /],
    // Each replay of each coalition is held in memory: 1e9 ran V8 out of memory after a minute.
    ['credit.replays=1e9', /^sharp: config: credit\.replays: Too big: expected number to be <=64 /],
    [
      'train.lr=1e10',
      /^sharp: config: train\.lr: a learning rate above 1 would move every weight by up to lr per Adam step and wreck the model \(sane: 1e-6\.\.1e-2\) \(from --set train\.lr=1e10\)$/,
    ],
    ['run.name=a/b', /^sharp: config: run\.name: 'a\/b' is not one folder name /],
    ['run.name=../escape', /^sharp: config: run\.name: '\.\.\/escape' is not one folder name /],
    [`run.name=${'n'.repeat(300)}`, /^sharp: config: run\.name: at most 200 characters /],
    ['a.b=1', /^sharp: config: unknown key a \(from --set a\.b=1\)$/],
  ])(
    '--set %s: one line, exit 2, nothing written',
    async (set, line) => {
      const root = mkdtempSync(join(tmpdir(), 'sharp-sizes-'));
      const cfg = microConfig(root, 'sizes', 2);
      const r = await sharp(root, ['train', '--config', cfg, '--set', set]);
      expect(r.code).toBe(2);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
      expect(r.stderr.trim()).toMatch(line);
      expect(existsSync(join(root, 'runs'))).toBe(false);
      expect(readdirSync(root).sort()).toEqual(['sizes.yaml']);
    },
    120_000,
  );

  it('a 1 MB config of 85,000 keys is read in seconds; over 1 MiB is refused before parsing', async () => {
    const root = mkdtempSync(join(tmpdir(), 'sharp-big-yaml-'));
    const big = join(root, 'big.yaml');
    writeFileSync(big, `train:\n${Array.from({ length: 85_000 }, (_, i) => `  k${i}: 1`).join('\n')}\n`);
    const t0 = Date.now();
    const r = await sharp(root, ['config', '--config', big]);
    const seconds = (Date.now() - t0) / 1000;
    expect(r.code).toBe(2);
    expect(r.stderr.trim()).toBe(
      `sharp: config: unknown key train.k0, train.k1, train.k2, train.k3, train.k4 (and 84995 more) (in ${big})`,
    );
    expect(seconds).toBeLessThan(60); // 123 s with the quadratic duplicate-key check
    const huge = join(root, 'huge.yaml');
    writeFileSync(huge, `# ${'x'.repeat(2 * 1024 * 1024)}\n`);
    const h = await sharp(root, ['config', '--config', huge]);
    expect(h.code).toBe(2);
    expect(h.stderr.trim()).toBe(
      `sharp: config: ${huge} is 2097155 bytes; a config file may hold at most 1048576 bytes (1 MiB)`,
    );
  }, 180_000);

  it('a batch larger than the questions of a benchmark file is one line and exit 2, and leaves no run folder', async () => {
    const root = mkdtempSync(join(tmpdir(), 'sharp-batch-bench-'));
    const data = join(root, 'six.jsonl');
    const made = await sharp(root, ['data', 'synth', '--n', '6', '--seed', '3', '--out', data]);
    expect(made.code, made.stderr).toBe(0);
    const cfg = microConfig(root, 'bench', 2);
    const r = await sharp(root, [
      'train',
      '--config',
      cfg,
      '--set',
      'data.source=musique',
      '--set',
      `data.path=${data}`,
      '--set',
      'data.benchmarkHeldOut=1',
      '--set',
      'train.batchQuestions=50',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n').at(-1)).toBe(
      `sharp: train.batchQuestions (50) must be <= the 5 training questions of ${data}: a step takes each ` +
        `question at most once`,
    );
    expect(readdirSync(join(root, 'runs'))).toEqual([]);
  }, 300_000);

  it('a gold answer longer than the answer turn under credit.value likelihood: one line before the first step', async () => {
    const root = mkdtempSync(join(tmpdir(), 'sharp-long-gold-'));
    const repo = resolve(import.meta.dirname, '../..');
    const lines = readFileSync(join(repo, 'data/jsonl/questions_sample.jsonl'), 'utf8').trim().split('\n');
    const long = JSON.parse(lines[2] as string) as { id: string; answers: string[] };
    long.answers = ['Krigraix '.repeat(20000).trim()];
    lines[2] = JSON.stringify(long);
    const data = join(root, 'long.jsonl');
    writeFileSync(data, lines.join('\n') + '\n');
    const r = await sharp(root, [
      'train',
      '--config',
      join(repo, 'configs/quickstart.yaml'),
      ...[
        `model.path=${join(repo, 'models/sharp-tiny-sft')}`,
        'run.dir=runs',
        'data.source=jsonl',
        `data.path=${data}`,
        'data.benchmarkHeldOut=2',
      ].flatMap((s) => ['--set', s]),
      ...['eval.validationShare=0', 'train.steps=1', 'credit.value=likelihood'].flatMap((s) => ['--set', s]),
    ]);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(
      new RegExp(
        `^sharp: train: data\\.path ${data.replace(/[.]/g, '\\.')}: credit\\.value=likelihood: ` +
          `episode ${long.id}: its shortest gold answer has \\d+ tokens, more than the 48 of the planner's ` +
          'answer turn \\(rollout\\.maxNewTokens\\)',
      ),
    );
    // Refused before the evaluation and the first step: the run folder it had made is gone again.
    expect(readdirSync(join(root, 'runs'))).toEqual([]);
  }, 180_000);
});

describe('refusals that need more than the config come before the run or output folder', () => {
  const root = mkdtempSync(join(tmpdir(), 'sharp-preflight-'));
  const REPO = resolve(import.meta.dirname, '../..');

  /** The shipped MuSiQue sample without its gold decompositions. */
  function bareMusique(): string {
    const file = join(root, 'bare.jsonl');
    const lines = readFileSync(join(REPO, 'data/musique/musique_ans_v1.0_sample.jsonl'), 'utf8').trim().split('\n');
    writeFileSync(
      file,
      lines
        .map((l) => {
          const r = JSON.parse(l) as Record<string, unknown>;
          delete r.question_decomposition;
          return JSON.stringify(r);
        })
        .join('\n') + '\n',
    );
    return file;
  }

  async function refusedEarly(args: string[], line: RegExp, folder: string): Promise<void> {
    const before = existsSync(folder) ? readdirSync(folder) : [];
    const r = await sharp(root, args);
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(1);
    expect(r.stderr.trim()).toMatch(line);
    expect(existsSync(folder) ? readdirSync(folder) : []).toEqual(before);
  }

  it('a bfloat16 base without the native kernels: one line at once, no run folder', async () => {
    const cfg = microConfig(root, 'bf16', 2);
    // The pure-wasm fallback: no native kernels, so no bfloat16 products.
    const native = process.env.SHARP_NATIVE;
    process.env.SHARP_NATIVE = '0';
    try {
      await refusedEarly(
        [
          'train',
          '--config',
          cfg,
          '--backend',
          'wasm',
          '--set',
          'train.lora.rank=4',
          '--set',
          'train.lora.baseDtype=bfloat16',
        ],
        /^sharp: train: train\.lora\.baseDtype bfloat16 needs the native kernels' bfloat16 products, and the wasm backend/,
        join(root, 'runs'),
      );
    } finally {
      if (native === undefined) delete process.env.SHARP_NATIVE;
      else process.env.SHARP_NATIVE = native;
    }
  }, 120_000);

  it('repair or the oracle on data without decompositions: train, ablate and eval --credit refuse at once', async () => {
    const bare = bareMusique();
    const cfg = microConfig(root, 'bare', 2);
    const data = ['data.source=musique', `data.path=${bare}`, 'data.benchmarkHeldOut=2'].flatMap((s) => ['--set', s]);
    await refusedEarly(
      ['train', '--config', cfg, ...data, '--set', 'credit.counterfactual=repair'],
      /^sharp: train: credit\.counterfactual repair needs a gold decomposition .* has none/,
      join(root, 'runs'),
    );
    const model = ['--set', `model.path=${join(REPO, 'models/tiny-random')}`, '--set', 'train.sft.steps=0'];
    const out = join(root, 'ablation');
    await refusedEarly(
      ['ablate', '--config', cfg, ...data, ...model, '--set', 'ablation.methods=[loo, oracle]', '--out', out],
      /^sharp: ablation: arm oracle: credit\.method oracle needs a gold decomposition .* has none/,
      out,
    );
    expect(existsSync(out)).toBe(false);
    const evalOut = join(root, 'eval-credit');
    await refusedEarly(
      [
        'eval',
        '--bench',
        'hotpotqa',
        '--credit',
        '--set',
        'credit.counterfactual=repair',
        '--model',
        join(REPO, 'models/tiny-random'),
        '--out',
        evalOut,
      ],
      /^sharp: eval --credit: credit\.counterfactual repair needs a gold decomposition .* has none/,
      evalOut,
    );
    expect(existsSync(evalOut)).toBe(false);
    // --credit with a method that values no coalition, and the expert on data it cannot follow: refused first too.
    const broadcastOut = join(root, 'eval-broadcast');
    await refusedEarly(
      [
        'eval',
        '--credit',
        '--set',
        'credit.method=broadcast',
        '--model',
        join(REPO, 'models/tiny-random'),
        '--out',
        broadcastOut,
      ],
      /^sharp: --credit needs credit\.method loo or shapley \(it is broadcast\)$/,
      broadcastOut,
    );
    expect(existsSync(broadcastOut)).toBe(false);
    const expertOut = join(root, 'eval-expert');
    await refusedEarly(
      ['eval', '--bench', 'musique', '--data', bare, '--policy', 'expert', '--out', expertOut],
      /^sharp: eval --policy expert: episode \S+ of musique has no gold decomposition/,
      expertOut,
    );
    expect(existsSync(expertOut)).toBe(false);
  }, 300_000);
});
