import { describe, it, expect } from 'vitest';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Episode } from '../data/episode.ts';
import { PredictionLog, episodeKeys } from './predictions.ts';

const ep = (id: string): Episode => ({ id, question: 'q', answers: ['a'], paragraphs: [] });

describe('episodeKeys', () => {
  it('repeats of an id get #k (MuSiQue full)', () => {
    expect(episodeKeys([ep('a'), ep('b'), ep('a'), ep('a')])).toEqual(['a', 'b', 'a#1', 'a#2']);
  });
});

describe('PredictionLog (resume)', () => {
  it('records, reopens, skips done keys and reports missing ones', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sharp-log-')), 'sub', 'predictions.log.jsonl');
    const log = PredictionLog.open(file);
    log.append('a', { id: 'a', answer: 'x', supportIdx: [1], answerable: true });
    log.append('a#1', { id: 'a', answer: '', supportIdx: [], answerable: false });
    const again = PredictionLog.open(file);
    expect(again.size).toBe(2);
    expect(again.has('a#1')).toBe(true);
    const { preds, missing } = again.collect([ep('a'), ep('b'), ep('a')]);
    expect(missing).toEqual(['b']);
    expect(preds.map((p) => p.answerable)).toEqual([true, false]);
  });
  it('ignores a torn last line, refuses a torn earlier one', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharp-log-'));
    const file = join(dir, 'p.jsonl');
    writeFileSync(
      file,
      '{"key":"a","id":"a","answer":"x","supportIdx":[],"answerable":true}\n{"key":"b","id":"b","ans',
    );
    const log = PredictionLog.open(file);
    expect(log.size).toBe(1);
    // Opening cut the torn tail, so the next append starts on a fresh line and the log stays valid.
    log.append('c', { id: 'c', answer: 'y', supportIdx: [], answerable: true });
    expect(PredictionLog.open(file).size).toBe(2);
    const torn = join(dir, 'torn.jsonl');
    writeFileSync(
      torn,
      '{"key":"a","id":"a","ans\n{"key":"c","id":"c","answer":"y","supportIdx":[],"answerable":true}\n',
    );
    expect(() => PredictionLog.open(torn)).toThrow(`${torn}:1: not valid JSON (only the last line may be torn)`);
    const bad = join(dir, 'q.jsonl');
    writeFileSync(bad, '{"key":"a","id":"a","answer":3,"supportIdx":[],"answerable":true}\n');
    expect(() => PredictionLog.open(bad)).toThrow(new RegExp(`q.jsonl:1: answer: `));
  });
});
