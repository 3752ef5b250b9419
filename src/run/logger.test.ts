import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger, plainLine } from './logger.ts';

describe('createLogger', () => {
  it('writes pino JSON lines to the log file', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sharp-log-')), 'log.jsonl');
    const { log, close } = createLogger({ file, terminal: null });
    log.info({ step: 3, reward: 0.5 }, 'step done');
    log.debug('hidden at info level');
    await close();
    const lines = readFileSync(file, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 30, msg: 'step done', step: 3, reward: 0.5 });
  });

  it('formats plain terminal lines', () => {
    expect(plainLine({ level: 40, time: 1, msg: 'careful', backend: 'wasm', n: 2 })).toBe(
      'WARN careful backend=wasm n=2',
    );
  });
});
