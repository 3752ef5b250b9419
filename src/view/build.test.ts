import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BUILT_SCRIPT, buildPage } from './build.ts';

describe('the committed page bundle', () => {
  it('is exactly what the page sources build to (run npm run build:view after editing src/view/page)', async () => {
    const built = await buildPage();
    const committed = readFileSync(BUILT_SCRIPT, 'utf8');
    expect(committed.length).toBe(built.length);
    expect(committed === built).toBe(true);
  });
});
