import { describe, it, expect } from 'vitest';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dropTornTail } from './torn-tail.ts';

describe('dropTornTail', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sharp-torn-'));
  const cases: Array<[string, string, string, number]> = [
    ['complete log', '{"a":1}\n{"a":2}\n', '{"a":1}\n{"a":2}\n', 0],
    ['torn last line', '{"a":1}\n{"a":', '{"a":1}\n', 5],
    ['only a torn line', '{"a', '', 3],
    ['empty file', '', '', 0],
  ];
  it.each(cases)('%s', (_name, before, after, dropped) => {
    const f = join(dir, `${_name.replace(/ /g, '-')}.jsonl`);
    writeFileSync(f, before);
    expect(dropTornTail(f)).toBe(dropped);
    expect(readFileSync(f, 'utf8')).toBe(after);
  });

  it('finds the last newline beyond one 64 KiB chunk', () => {
    const f = join(dir, 'long.jsonl');
    const torn = 'x'.repeat(70 * 1024); // a torn tail longer than the scan chunk
    writeFileSync(f, `{"a":1}\n${torn}`);
    expect(dropTornTail(f)).toBe(torn.length);
    expect(readFileSync(f, 'utf8')).toBe('{"a":1}\n');
  });

  it('a missing file is left alone', () => {
    expect(dropTornTail(join(dir, 'none.jsonl'))).toBe(0);
  });
});
