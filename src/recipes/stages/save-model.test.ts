import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../backend/select.ts';
import { CausalLM } from '../../model/causal-lm.ts';
import { checkModelOut, saveModelAtomic } from './save-model.ts';

/** The model a run saves (`<run>/model`) replaces only an earlier save, and never the model it came from. */
const TINY = resolve(import.meta.dirname, '../../../models/tiny-random');
let root: string;
beforeAll(async () => {
  await initBackend('cpu');
  root = mkdtempSync(join(tmpdir(), 'sharp-save-model-'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('saveModelAtomic', () => {
  it('refuses model.path itself and a folder it did not write, before any training', () => {
    expect(() => checkModelOut(TINY, TINY, 'dpo')).toThrow(/^dpo: model output .*tiny-random: is model\.path /);
    const run = join(root, 'run');
    mkdirSync(join(run, 'model'), { recursive: true });
    writeFileSync(join(run, 'model', 'config.json'), '{"mine": true}');
    expect(() => checkModelOut(join(run, 'model'), TINY)).toThrow(
      /^sft: model output .*model: is a folder not written by sharp sft; choose a new or empty folder$/,
    );
  });

  it('replaces its own earlier save, keeping files it did not write', async () => {
    const m = await CausalLM.load(TINY);
    try {
      const dir = join(root, 'run2', 'model');
      await saveModelAtomic(m, dir, TINY);
      writeFileSync(join(dir, 'NOTES.md'), 'mine');
      await saveModelAtomic(m, dir, TINY);
      expect(readFileSync(join(dir, 'NOTES.md'), 'utf8')).toBe('mine');
      expect(readdirSync(dir)).toContain('model.safetensors');
      expect(readdirSync(join(root, 'run2'))).toEqual(['model']); // no temp folder left
    } finally {
      m.dispose();
    }
  });
});
