import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readTranscripts } from './transcripts-jsonl.ts';

let root: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'sharp-transcripts-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('readTranscripts', () => {
  it('reads the expert format and names a bad line and field', async () => {
    const file = join(root, 't.jsonl');
    await writeFile(
      file,
      '{"messages":[{"role":"user","content":"q","train":false},{"role":"assistant","content":"a","train":true}]}\n\n',
    );
    expect(readTranscripts(file)).toEqual([
      {
        messages: [
          { role: 'user', content: 'q', train: false },
          { role: 'assistant', content: 'a', train: true },
        ],
      },
    ]);
    await writeFile(
      file,
      '{"messages":[{"role":"user","content":"q","train":false}]}\n{"messages":[{"role":"bot","content":"a",' +
        '"train":true}]}\n',
    );
    expect(() => readTranscripts(file)).toThrow(`${file}:2: field 'messages.0.role'`);
    await writeFile(file, '{"messages":[{"role":"assistant","content":"a","train":true,"weight":3}]}\n');
    expect(readTranscripts(file)[0].messages[0].weight).toBe(3);
    await writeFile(file, '{"messages":[{"role":"assistant","content":"a","train":true,"weight":0}]}\n');
    expect(() => readTranscripts(file)).toThrow(`${file}:1: field 'messages.0.weight'`);
    await writeFile(file, '\n');
    expect(() => readTranscripts(file)).toThrow(`${file}: no transcripts`);
  });
});
