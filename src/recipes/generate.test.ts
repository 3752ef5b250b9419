import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sharp } from '../../test/cli-helpers.ts';

/**
 * `sharp generate` through the real binary on models/tiny-random (max_position_embeddings 2048):
 * --max-new-tokens beyond what the model has room for is capped with a warning, a prompt that fills
 * the model is one line and exit 2, and a long generation prints its progress.
 */
const MODEL = resolve(import.meta.dirname, '../../models/tiny-random');
const root = mkdtempSync(join(tmpdir(), 'sharp-generate-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('sharp generate: sizes bounded by the model', () => {
  it('--max-new-tokens 1e9 is capped at the positions left after the prompt, with progress lines', async () => {
    const r = await sharp(root, [
      'generate',
      '--model',
      MODEL,
      '--prompt',
      'hello',
      '--max-new-tokens',
      '1e9',
      '--backend',
      'wasm',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stderr.trim().split('\n');
    expect(lines[0]).toBe(
      'sharp generate: --max-new-tokens 1000000000 is more than the model has room for (2048 positions - 4 prompt ' +
        'tokens): generating at most 2044',
    );
    const progress = lines.slice(1);
    expect(progress.length).toBeGreaterThanOrEqual(1);
    progress.forEach((l, i) =>
      expect(l).toMatch(new RegExp(`^sharp generate: ${256 * (i + 1)}/2044 tokens \\(\\d+\\.\\d tok/s\\)$`)),
    );
    // Never more tokens than the room: this tokenizer renders each generated token as at most a few bytes.
    expect(r.stdout.length).toBeGreaterThan(0);
    expect(r.stdout.length).toBeLessThanOrEqual(4 * 2044 + 1);
  }, 300_000);

  it('a short request is not capped and prints no progress', async () => {
    const r = await sharp(root, [
      'generate',
      '--model',
      MODEL,
      '--prompt',
      'hello',
      '--max-new-tokens',
      '8',
      '--backend',
      'wasm',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toBe('');
  }, 120_000);

  it('a prompt that fills every position is one line and exit 2', async () => {
    const r = await sharp(root, [
      'generate',
      '--model',
      MODEL,
      '--prompt',
      'hello '.repeat(2100),
      '--max-new-tokens',
      '4',
      '--backend',
      'wasm',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr.trim()).toMatch(
      /^sharp: --prompt is \d+ tokens: the model holds at most 2048 positions \(max_position_embeddings\), so nothing can be generated$/,
    );
  }, 120_000);
});
