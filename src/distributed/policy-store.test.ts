import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { companionFiles } from '../recipes/stages/save-model.ts';
import { PolicyCache, publishPolicy } from './policy-store.ts';

const MODEL = join(import.meta.dirname, '../../models/tiny-random');

describe('policy versions in a shared folder', () => {
  let root: string;
  let model: CausalLM;
  beforeAll(async () => {
    await initBackend('wasm');
    root = mkdtempSync(join(tmpdir(), 'sharp-policies-'));
    model = await CausalLM.load(MODEL);
  });
  afterAll(() => {
    model?.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  it('publishes complete versions, keeps the newest 3, and a worker loads each version once', async () => {
    const files = companionFiles(MODEL);
    const v1 = await publishPolicy(model, root, 'r', 'v1', files);
    const mtime = statSync(join(v1, 'model.safetensors')).mtimeMs;
    expect(await publishPolicy(model, root, 'r', 'v1', files)).toBe(v1); // a resumed trainer re-publishing: kept as is
    expect(statSync(join(v1, 'model.safetensors')).mtimeMs).toBe(mtime);
    for (const v of ['v2', 'v3', 'v4']) await publishPolicy(model, root, 'r', v, files);
    expect(readdirSync(join(root, 'r')).sort()).toEqual(['v2', 'v3', 'v4']);
    expect(readdirSync(join(root, 'r', 'v4')).sort()).toEqual([
      'config.json',
      'generation_config.json',
      'model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);

    const cache = new PolicyCache();
    const a = await cache.acquire(join(root, 'r', 'v3'));
    const b = await cache.acquire(join(root, 'r', 'v3'));
    expect(b.policy).toBe(a.policy);
    a.release();
    b.release();
    const c = await cache.acquire(join(root, 'r', 'v4'));
    c.release();
    expect(cache.loads).toBe(2);
    // The loaded weights are the published ones, bit for bit.
    const want = await model.trainableVariables()[0]?.data();
    expect(await c.policy.model.trainableVariables()[0]?.data()).toEqual(want);
    await expect(cache.acquire(join(root, 'r', 'v1'))).rejects.toThrow(/policy version .*v1 is not published/);
    await cache.dispose();
  });
});
