import { describe, it, expect } from 'vitest';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadConfig } from '../../config/load.ts';
import { UserError } from '../../errors.ts';
import { SHIPPED_MODEL, resolveModelDir } from './model.ts';

const repo = resolve(import.meta.dirname, '../../..');

describe('resolveModelDir', () => {
  const cwd = mkdtempSync(join(tmpdir(), 'sharp-eval-model-'));
  const fake = join(cwd, 'ckpt');
  mkdirSync(fake);
  writeFileSync(join(fake, 'config.json'), '{}');
  writeFileSync(join(fake, 'tokenizer.json'), '{}');

  it('--model wins, relative to the working folder', () => {
    expect(resolveModelDir('ckpt', loadConfig(), repo, cwd)).toEqual({ dir: fake });
  });

  it('without --model: model.path when it holds a checkpoint', () => {
    expect(resolveModelDir(undefined, loadConfig({ sets: ['model.path=ckpt'] }), repo, cwd)).toEqual({ dir: fake });
  });

  it('fresh clone (model.path is the untouched default and empty): the shipped model, with a note saying so', () => {
    const c = resolveModelDir(undefined, loadConfig(), repo, cwd);
    expect(c.dir).toBe(join(repo, SHIPPED_MODEL));
    expect(c.note).toBe(
      `model.path checkpoints/quickstart-init holds no checkpoint yet; using the shipped untrained model ` +
        `${SHIPPED_MODEL} (random init: expect scores near 0; pass --model DIR)`,
    );
  });

  it('a path the user named that holds no checkpoint is a one-line UserError, never a silent fallback', () => {
    expect(() => resolveModelDir('nope', loadConfig(), repo, cwd)).toThrow(
      new UserError(`--model ${join(cwd, 'nope')}: no config.json there (expected a Hugging Face checkpoint folder)`),
    );
    expect(() => resolveModelDir(undefined, loadConfig({ sets: ['model.path=elsewhere'] }), repo, cwd)).toThrow(
      /^model\.path .*elsewhere: no config\.json there/,
    );
    mkdirSync(join(cwd, 'half'));
    writeFileSync(join(cwd, 'half', 'config.json'), '{}');
    expect(() => resolveModelDir('half', loadConfig(), repo, cwd)).toThrow(/half: no tokenizer\.json there/);
  });
});
