import { describe, it, expect } from 'vitest';
import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JsonlMetrics, readMetrics } from './jsonl.ts';

const withDir = (fn: (dir: string) => void) => {
  const dir = mkdtempSync(join(tmpdir(), 'jsonl-'));
  try {
    fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
};
const t0 = new Date('2026-11-30T00:00:00.000Z');

describe('JsonlMetrics', () => {
  it('writes one JSON line per step with namespaced keys', () =>
    withDir((dir) => {
      const m = new JsonlMetrics(join(dir, 'sub', 'metrics.jsonl'));
      m.write(1, { 'reward/planner': 0.5, 'losses/clipfrac': Number.NaN }, t0);
      m.write(2, { 'reward/planner': 0.75, accuracy: 1 }, t0);
      expect(readFileSync(m.path, 'utf8')).toBe(
        '{"step":1,"time":"2026-11-30T00:00:00.000Z","reward/planner":0.5,"losses/clipfrac":null}\n{"step":2,' +
          '"time":"2026-11-30T00:00:00.000Z","reward/planner":0.75,"accuracy":1}\n',
      );
      expect(() => m.write(3, { 'reward planner': 1 })).toThrow("key 'reward planner' is not a namespaced metric name");
    }));

  it('cuts later steps on resume and tolerates a torn last line', () =>
    withDir((dir) => {
      const path = join(dir, 'metrics.jsonl');
      const m = new JsonlMetrics(path);
      for (let s = 1; s <= 4; s++) m.write(s, { 'loss/total': s }, t0);
      appendFileSync(path, '{"step":5,"lo'); // killed mid-append
      expect(readMetrics(path).map((l) => l.step)).toEqual([1, 2, 3, 4]);
      const resumed = new JsonlMetrics(path, { resumeStep: 2 });
      resumed.write(3, { 'loss/total': 30 }, t0);
      expect(readMetrics(path).map((l) => [l.step, l['loss/total']])).toEqual([
        [1, 1],
        [2, 2],
        [3, 30],
      ]);
    }));

  it('names the file and line of a malformed line', () =>
    withDir((dir) => {
      const path = join(dir, 'metrics.jsonl');
      writeFileSync(path, '{"step":1}\nnot json\n{"step":3}\n');
      expect(() => readMetrics(path)).toThrow(`${path}:2: not valid JSON`);
      writeFileSync(path, '{"nostep":1}\n');
      expect(() => readMetrics(path)).toThrow(`${path}:1: a metrics line needs a numeric "step"`);
    }));
});
