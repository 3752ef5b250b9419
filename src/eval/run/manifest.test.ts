import { describe, it, expect } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MANIFEST_FILE, checkSetup } from './manifest.ts';

describe('checkSetup', () => {
  it('writes the setup once, accepts the same setup, names the first differing key otherwise', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharp-manifest-'));
    const setup = { benchmark: 'musique', model: '/m', agents: 'multi', temperature: 0 };
    checkSetup(dir, setup);
    expect(JSON.parse(readFileSync(join(dir, MANIFEST_FILE), 'utf8'))).toEqual(setup);
    expect(() => checkSetup(dir, { ...setup })).not.toThrow();
    expect(() => checkSetup(dir, { ...setup, model: '/other' })).toThrow(
      `${dir} holds predictions of another setup (model: "/m" there, "/other" now); use another --out or delete ` +
        `that folder`,
    );
    expect(() => checkSetup(dir, { ...setup, temperature: 0.7 })).toThrow(/temperature: 0 there, 0.7 now/);
    const { agents: _a, ...fewer } = setup;
    expect(() => checkSetup(dir, fewer)).toThrow(/agents: "multi" there, undefined now/);
  });
});
