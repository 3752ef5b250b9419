import { describe, it, expect } from 'vitest';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { readMusique, hopsFromId } from './musique.ts';

const repo = resolve(import.meta.dirname, '../../..');
const ans = join(repo, 'data/musique/musique_ans_v1.0_sample.jsonl');
const full = join(repo, 'data/musique/musique_full_v1.0_sample.jsonl');
const shared = join(repo, '../shared/data/musique/musique_ans_train_100.jsonl');

describe('readMusique', () => {
  it('shipped ans sample: 20 answerable episodes with paragraphs, aliases and decompositions', () => {
    const eps = readMusique(ans);
    expect(eps).toHaveLength(20);
    const first = eps[0];
    expect(first.id).toBe('2hop__9000_9001');
    expect(first.answers).toEqual(['Thornwick', 'Thornwick-on-Lume']);
    expect(first.paragraphs).toHaveLength(10);
    expect(
      first.paragraphs
        .filter((p) => p.isSupporting)
        .map((p) => p.title)
        .sort(),
    ).toEqual(['Brightwater Looms', 'Ilsa Marrow']);
    expect(first.decomposition?.map((d) => d.answer)).toEqual(['Ilsa Marrow', 'Thornwick']);
    expect(first.meta?.hops).toBe(2);
    // Every decomposition step points at a supporting paragraph holding its answer.
    for (const ep of eps) {
      for (const d of ep.decomposition ?? []) {
        const p = ep.paragraphs.find((q) => q.idx === d.paragraphSupportIdx);
        expect(p?.isSupporting).toBe(true);
        expect(p?.text).toContain(d.answer);
      }
    }
    expect(eps.map((e) => e.meta?.hops)).toEqual([...Array(8).fill(2), ...Array(8).fill(3), ...Array(4).fill(4)]);
  });
  it('shipped full sample: pairs share an id, the unanswerable one has no answers', () => {
    const eps = readMusique(full);
    expect(eps).toHaveLength(20);
    for (let i = 0; i < eps.length; i += 2) {
      expect(eps[i].id).toBe(eps[i + 1].id);
      expect(eps[i].answerable).toBe(true);
      expect(eps[i + 1].answerable).toBe(false);
      expect(eps[i + 1].answers).toEqual([]);
    }
  });
  it.skipIf(!existsSync(shared))('real MuSiQue-Ans sample: 100 records, hop counts 68/27/5', () => {
    const eps = readMusique(shared);
    expect(eps).toHaveLength(100);
    expect(eps.every((e) => e.paragraphs.length === 20 && e.answers.length >= 1)).toBe(true);
    const hops = eps.map((e) => e.meta?.hops);
    expect([2, 3, 4].map((h) => hops.filter((x) => x === h).length)).toEqual([68, 27, 5]);
    expect(eps[0].answers).toEqual(['G. Stanley Hall', 'Stanley Hall']);
  });
  it('a bad record names file, line and field', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sharp-musique-'));
    const p = join(dir, 'bad.jsonl');
    const good = '{"id":"2hop__1_2","paragraphs":[],"question":"q","answer":"a","answer_aliases":[],"answerable":true}';
    writeFileSync(
      p,
      `${good}\n{"id":"2hop__3_4","paragraphs":[{"idx":"0","title":"t","paragraph_text":"x",` +
        `"is_supporting":true}],"question":"q"}\n`,
    );
    expect(() => readMusique(p)).toThrow(`${p}:2: paragraphs[0].idx: Invalid input: expected number, received string`);
  });
  it('hopsFromId', () => {
    expect(hopsFromId('3hop2__1_2_3')).toBe(3);
    expect(hopsFromId('x')).toBeNull();
  });
});
