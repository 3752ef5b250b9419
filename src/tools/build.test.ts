import { describe, expect, it } from 'vitest';
import { WORKER_ENTRIES, buildWorkers, builtWorker } from './build.ts';

describe('the committed tool worker bundles', () => {
  it('are exactly what the worker sources build to (run npm run build:tools after editing src/tools)', async () => {
    const built = await buildWorkers();
    for (const name of WORKER_ENTRIES) {
      const committed = builtWorker(name);
      expect(committed.length, name).toBe(built[name].length);
      expect(committed === built[name], name).toBe(true);
    }
  });

  it('are plain JavaScript: no TypeScript loader and no import of a source .ts file', () => {
    for (const name of WORKER_ENTRIES) {
      expect(builtWorker(name)).not.toMatch(/\.ts["']|tsx/);
    }
  });
});
