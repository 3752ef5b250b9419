import { describe, it, expect } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHARTS, chartPoints, chartSpec, plotRun, renderSvg } from './plot.ts';
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

describe('chart rendering (headless sharp plot)', () => {
  const texts = (svg: string): string[] => [...svg.matchAll(/<text[^>]*>([^<]*)<\/text>/g)].map((m) => m[1]);
  const long = 'reward/marginal/worker-with-a-rather-long-series-name-for-the-legend';
  const points = [1, 2, 3].flatMap((step) => [
    { step, series: 'reward/planner', value: step / 3 },
    { step, series: long, value: step / 6 },
  ]);

  it('the step axis has integer ticks only', async () => {
    const svg = await renderSvg(chartSpec('Reward per role', points));
    const ticks = texts(svg).filter((t) => /^-?[\d.]+$/.test(t));
    expect(ticks.length).toBeGreaterThan(0);
    // Step ticks are 1, 2, 3 only (no 1.5, 2.5); value ticks are on the y axis (0.0 .. 1.0).
    const stepTicks = [...svg.matchAll(/aria-label="X-axis[^"]*"/g)].length;
    expect(stepTicks).toBe(1);
    const xAxis = svg.slice(
      svg.indexOf('X-axis'),
      svg.indexOf('Y-axis') > svg.indexOf('X-axis') ? svg.indexOf('Y-axis') : undefined,
    );
    expect(texts(xAxis).filter((t) => /^[\d.]+$/.test(t))).toEqual(['1', '2', '3']);
  });

  it('legend labels are drawn in full, not cut off with an ellipsis', async () => {
    const svg = await renderSvg(chartSpec('Reward per role', points));
    expect(texts(svg)).toContain(long);
    expect(svg).not.toContain('…');
  });

  it('reward parts per role and invalid tool calls get charts of their own', () => {
    const names = (k: string) => CHARTS.filter((c) => c.match(k)).map((c) => c.name);
    expect(names('reward/planner')).toEqual(['reward']);
    expect(names('reward/marginal/worker')).toEqual(['reward-parts']);
    expect(names('rollout/invalid_calls')).toEqual(['invalid-calls']);
    expect(names('heldout/accuracy')).toEqual(['accuracy']);
    expect(['credit/noise_floor', 'credit/nonzero_success', 'credit/nonzero_failure'].map(names)).toEqual([
      ['credit-signal'],
      ['credit-signal'],
      ['credit-signal'],
    ]);
  });
});

describe('chart specs', () => {
  it('rate charts span [0, 1] and colour helpful / neutral / harmful as green / grey / red', () => {
    const wc = CHARTS.find((c) => c.name === 'worker-calls');
    const pts = ['credit/helpful', 'credit/harmful'].map((series) => ({ step: 1, series, value: 0 }));
    const spec = chartSpec('w', pts, wc) as unknown as {
      encoding: { y: { scale?: unknown }; color: { scale?: unknown } };
    };
    expect(spec.encoding.y.scale).toEqual({ domain: [0, 1] });
    expect(spec.encoding.color.scale).toEqual({
      domain: ['credit/helpful', 'credit/harmful'],
      range: ['#2e7d32', '#c0392b'],
    });
    const reward = chartSpec('r', [{ step: 1, series: 'reward/planner', value: 2 }], CHARTS[0]) as unknown as {
      encoding: { y: { scale?: unknown }; color: { scale?: unknown } };
    };
    expect(reward.encoding.y.scale).toBeUndefined();
    expect(reward.encoding.color.scale).toBeUndefined();
  });
});
