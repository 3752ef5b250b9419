import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { UserError } from '../errors.ts';
import { evalFlags, withDefaults, type GivenFlags } from './commands.ts';
import { run as runEval } from './eval.ts';

const run = (opts: GivenFlags<typeof evalFlags>): Promise<void> => runEval(withDefaults(evalFlags, opts));

const repo = resolve(import.meta.dirname, '../..');

async function quiet<T>(fn: () => Promise<T>): Promise<T> {
  const o = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
  const e = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    return await fn();
  } finally {
    o.mockRestore();
    e.mockRestore();
  }
}

describe('eval resume is keyed on the checkpoint content', () => {
  it('refuses to extend predictions of a model replaced in place (same path, other weights)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharp-eval-hash-'));
    const model = join(dir, 'model');
    cpSync(join(repo, 'models/tiny-random'), model, { recursive: true });
    const opts = {
      bench: 'musique',
      model,
      out: join(dir, 'out'),
      backend: 'wasm' as const,
      set: ['rollout.maxNewTokens=4'],
    };
    await quiet(() => run({ ...opts, limit: 1 }));
    // Another model under the same path: one weight changed (still finite).
    const f = join(model, 'model.safetensors');
    const b = readFileSync(f);
    b.writeFloatLE(0.25, b.length - 4);
    writeFileSync(f, b);
    const err = await quiet(() => run({ ...opts, limit: 2 })).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toMatch(
      /holds predictions of another setup \(modelHash: "sha256:[0-9a-f]{64}" there, "sha256:[0-9a-f]{64}" now\)/,
    );
    const log = readFileSync(join(dir, 'out', 'predictions.log.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(log).toHaveLength(1); // nothing of the second model was appended
  }, 120_000);
});
