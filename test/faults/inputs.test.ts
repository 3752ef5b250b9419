import fc from 'fast-check';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config/load.ts';
import { UserError } from '../../src/errors.ts';
import { readSafetensors } from '../../src/model/io/safetensors.ts';

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

const KEYS = ['run', 'run.name', 'run.seed', 'train', 'train.lr', 'train.steps', 'train.sft', 'train.sft.steps', 'rollout.protocol', 'rollout.code.timeoutMs', 'credit.weights.tool', 'eval.limit', 'bogus', '__proto__', 'constructor', 'train.__proto__', 'model.init.hidden', ''];
const VALUES = fc.oneof(
  fc.constantFrom('1', '-1', '0', '1e309', 'abc', '', '{}', '[]', '{steps: 2}', '{__proto__: {x: 1}}', 'null', 'true', '[1, {a: 2}]', '{lr: nope}', '"quoted"', '&a [*a]', '!!js/function x'),
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
      fc.array(fc.tuple(fc.constantFrom('run', 'train', 'rollout', '__proto__', 'x'), fc.constantFrom('', ' {lr: 1}', ' [1, 2]', ' 5', ' {steps: -1}', ': :', ' {a: {b: {c: 1}}}', '\n  lr: abc', '\n\t- x')), { maxLength: 4 }).map((es) => es.map(([k, v]) => `${k}:${v}`).join('\n')),
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
      fc.asyncProperty(fc.array(fc.tuple(fc.nat({ max: 8 + headerLen - 1 }), fc.nat({ max: 255 })), { minLength: 1, maxLength: 6 }), fc.option(fc.nat({ max: good.length })), async (flips, cut) => {
        const b = Buffer.from(good);
        for (const [at, v] of flips) b[at] = v;
        await expectLoadsOrUserError(cut === null ? b : b.subarray(0, cut));
      }),
      { numRuns: 200, seed: 19 },
    );
  });

  it('generated headers (dtypes, shapes, offsets, lengths) give a one-line checkpoint error', async () => {
    const entry = fc.record({
      dtype: fc.constantFrom('F32', 'BF16', 'F16', 'I64', 'U8', 'F64', 'bogus', ''),
      shape: fc.array(fc.oneof(fc.nat({ max: 4 }), fc.constantFrom(-1, 1e12, 2 ** 53, 0.5)), { maxLength: 3 }),
      data_offsets: fc.tuple(fc.oneof(fc.nat({ max: 64 }), fc.constantFrom(-8, 1e15)), fc.oneof(fc.nat({ max: 64 }), fc.constantFrom(-8, 1e15))),
    });
    const header = fc.dictionary(fc.oneof(fc.constantFrom('w', '__metadata__', '__proto__', ''), fc.string({ maxLength: 8 })), fc.oneof(entry, fc.anything()), { maxKeys: 3 });
    await fc.assert(
      fc.asyncProperty(header, fc.option(fc.bigInt({ min: 0n, max: 2n ** 64n - 1n })), fc.nat({ max: 80 }), async (h, lenOverride, dataBytes) => {
        const json = Buffer.from(JSON.stringify(h), 'utf8');
        const len = Buffer.alloc(8);
        len.writeBigUInt64LE(lenOverride ?? BigInt(json.length));
        await expectLoadsOrUserError(Buffer.concat([len, json, Buffer.alloc(dataBytes, 0x7f)]));
      }),
      { numRuns: 300, seed: 20 },
    );
  });
});
