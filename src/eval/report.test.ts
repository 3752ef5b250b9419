import { describe, it, expect } from 'vitest';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { BENCHMARKS } from './benchmarks.ts';
import { buildReport, renderMarkdown, writeReport, type EvalReport } from './report.ts';

const repo = resolve(import.meta.dirname, '../..');

describe('eval report', () => {
  it('MuSiQue by hop count (hand-computed)', () => {
    const b = BENCHMARKS.musique;
    const eps = b.read(join(repo, b.sample));
    // right answer and support on 2-hop questions only; the 12 others answered "Zanzibar" with no support
    const preds = eps.map((ep) =>
      ep.meta?.hops === 2
        ? {
            id: ep.id,
            answer: ep.answers[0],
            supportIdx: ep.paragraphs.filter((p) => p.isSupporting).map((p) => p.idx),
            answerable: true,
          }
        : { id: ep.id, answer: 'Zanzibar', supportIdx: [], answerable: true },
    );
    const r = buildReport(b, b.sample, eps, preds, { agents: 'multi' });
    // official: 8 of 20 right -> EM = F1 = support F1 = 0.4
    expect(r.metrics).toEqual({ answer_f1: 0.4, answer_em: 0.4, support_f1: 0.4 });
    expect(r.breakdown.hops.map((row) => [row.group, row.count, row.means.answer_em])).toEqual([
      ['2hop', 8, 1],
      ['3hop', 8, 0],
      ['4hop', 4, 0],
    ]);
    const md = renderMarkdown(r, ['## Credit\n\nhelpful 3']);
    expect(md).toContain('| **answer_f1** | 0.400 |');
    expect(md).toContain('| 2hop | 8 | 1 | 1 | 1 | 1 |');
    expect(md).toContain('- agents: multi');
    expect(md.trimEnd().endsWith('helpful 3')).toBe(true);
    const dir = mkdtempSync(join(tmpdir(), 'sharp-report-'));
    const w = writeReport(dir, r, []);
    expect((JSON.parse(readFileSync(w.metrics, 'utf8')) as EvalReport).metrics).toEqual(r.metrics);
    expect(readFileSync(w.report, 'utf8')).toBe(renderMarkdown(r));
  });
  it('FRAMES by reasoning type: an item counts in each of its types', () => {
    const b = BENCHMARKS.frames;
    const eps = b.read(join(repo, b.sample));
    const preds = eps.map((ep) => ({ id: ep.id, answer: ep.answers[0], supportIdx: [], answerable: true }));
    const rows = buildReport(b, b.sample, eps, preds).breakdown.reasoning_type;
    // types: 0 Num+Multi, 1 Multi, 2 Tab+Temp, 3 Num+Temp, 4 Num, 5 Multi
    expect(rows.map((row) => [row.group, row.count])).toEqual([
      ['Multiple constraints', 3],
      ['Numerical reasoning', 3],
      ['Tabular reasoning', 1],
      ['Temporal reasoning', 2],
    ]);
  });
});
