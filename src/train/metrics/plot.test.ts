import { describe, it, expect } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHARTS, chartPoints, plotRun } from './plot.ts';
import { JsonlMetrics, readMetrics } from './jsonl.ts';

const PNG_SIGNATURE = [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a];

describe('plotRun', () => {
  it('renders reward, accuracy and credit PNGs from a metrics file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plot-'));
    try {
      const m = new JsonlMetrics(join(dir, 'metrics.jsonl'));
      for (let s = 1; s <= 6; s++) {
        m.write(s, {
          'reward/planner': s / 6,
          'reward/worker': s / 12,
          accuracy: Math.min(1, s / 5),
          'credit/worker': 0.1 * s,
          'credit/planner': 0.05 * s,
          'credit/worker_calls': 3, // a count: not on the credit chart
          'credit/helpful': 0.5,
          'credit/harmful': 0.1,
          'losses/clipfrac': 0.01,
        });
      }
      const res = await plotRun(dir);
      expect(res.map((r) => [r.chart, r.series, r.points])).toEqual([
        ['reward', ['reward/planner', 'reward/worker'], 12],
        ['accuracy', ['accuracy'], 6],
        ['credit', ['credit/worker', 'credit/planner'], 12],
        ['worker-calls', ['credit/helpful', 'credit/harmful'], 12],
      ]);
      for (const r of res) {
        const png = readFileSync(r.file);
        expect(Array.from(png.subarray(0, 8))).toEqual(PNG_SIGNATURE);
        // IHDR width/height (big-endian at bytes 16..23): the 560x280 plot area plus axes and legend.
        const w = png.readUInt32BE(16);
        const h = png.readUInt32BE(20);
        expect(w).toBeGreaterThan(560);
        expect(h).toBeGreaterThan(280);
        expect(png.length).toBeGreaterThan(5000); // real content, not a blank canvas
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('fails with one line when nothing can be plotted', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'plot-'));
    try {
      await expect(plotRun(dir)).rejects.toThrow('metrics.jsonl does not exist');
      writeFileSync(join(dir, 'metrics.jsonl'), '{"step":1,"losses/total":1}\n');
      await expect(plotRun(dir)).rejects.toThrow('has no reward/*, accuracy or credit/* metrics to plot');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('skips non-finite values', () => {
    const dir = mkdtempSync(join(tmpdir(), 'plot-'));
    try {
      writeFileSync(join(dir, 'm.jsonl'), '{"step":1,"accuracy":null}\n{"step":2,"accuracy":0.5,"eval/accuracy":1}\n');
      const acc = CHARTS.find((c) => c.name === 'accuracy');
      expect(acc && chartPoints(readMetrics(join(dir, 'm.jsonl')), acc)).toEqual([
        { step: 2, series: 'accuracy', value: 0.5 },
        { step: 2, series: 'eval/accuracy', value: 1 },
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
