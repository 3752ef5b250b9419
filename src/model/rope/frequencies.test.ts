import { describe, expect, it } from 'vitest';
import { refInvFreq, refYarnScale } from '../../../test/rope-reference.ts';
import { ropeFrequencies } from './frequencies.ts';
import type { RopeSpec } from './spec.ts';

function maxRelDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let d = 0;
  for (let i = 0; i < a.length; i++)
    d = Math.max(d, Math.abs((a[i] as number) - (b[i] as number)) / Math.abs(b[i] as number));
  return d;
}

describe('ropeFrequencies against the float64 reference of the published formulas', () => {
  it('default and linear (hand-checked: hd=4, theta=100 -> [1, 0.1]; linear factor 2 halves them)', () => {
    expect(Array.from(ropeFrequencies({ type: 'default', theta: 100 }, 4).invFreq)).toEqual([1, 0.1]);
    const lin = ropeFrequencies({ type: 'linear', theta: 100, factor: 2 }, 4);
    expect(Array.from(lin.invFreq)).toEqual([0.5, 0.05]);
    expect(lin.attentionScaling).toBe(1);
    const q = ropeFrequencies({ type: 'default', theta: 1e6 }, 128).invFreq;
    expect(maxRelDiff(q, refInvFreq({ dim: 128, base: 1e6, kind: 'default' }))).toBeLessThan(1e-14);
  });

  it('llama3 with Llama 3.1/3.2 settings: high frequencies kept, low ones divided by 8, the band blended', () => {
    const spec: RopeSpec = {
      type: 'llama3',
      theta: 500000,
      factor: 8,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositions: 8192,
    };
    const { invFreq, attentionScaling } = ropeFrequencies(spec, 64);
    const ref = refInvFreq({
      dim: 64,
      base: 500000,
      kind: 'llama3',
      scale: 8,
      lowFreq: 1,
      highFreq: 4,
      oldContext: 8192,
    });
    expect(maxRelDiff(invFreq, ref)).toBeLessThan(1e-14);
    expect(attentionScaling).toBe(1);
    // Hand-checked ends: pair 0 (wavelength 2 pi < 2048) unchanged; pair 31 (wavelength ~2.1e6 > 8192) / 8.
    expect(invFreq[0]).toBe(1);
    expect(invFreq[31]).toBeCloseTo(Math.pow(500000, -62 / 64) / 8, 18);
    // All three regimes occur, so the blend is really exercised.
    const plain = refInvFreq({ dim: 64, base: 500000, kind: 'default' });
    const kept = plain.filter((f, i) => invFreq[i] === f).length;
    const divided = plain.filter((f, i) => Math.abs((invFreq[i] as number) - f / 8) < 1e-20).length;
    expect(kept).toBeGreaterThan(0);
    expect(divided).toBeGreaterThan(0);
    expect(kept + divided).toBeLessThan(32);
  });

  it('yarn: ramp between beta_fast and beta_slow, attention factor 0.1 ln(s) + 1 by default', () => {
    for (const truncate of [true, false]) {
      const spec: RopeSpec = {
        type: 'yarn',
        theta: 1e6,
        factor: 4,
        originalMaxPositions: 32768,
        betaFast: 32,
        betaSlow: 1,
        attentionFactor: refYarnScale(4),
        truncate,
      };
      const { invFreq, attentionScaling } = ropeFrequencies(spec, 128);
      const ref = refInvFreq({
        dim: 128,
        base: 1e6,
        kind: 'yarn',
        scale: 4,
        oldContext: 32768,
        alpha: 1,
        beta: 32,
        truncate,
      });
      expect(maxRelDiff(invFreq, ref)).toBeLessThan(1e-14);
      expect(attentionScaling).toBeCloseTo(1.1386294361119891, 15); // 0.1 ln 4 + 1
    }
  });

  it(
    'yarn: matches inverse frequencies printed by Transformers 5 _compute_yarn_parameters (dim 64, theta 1e7, ' +
      'factor 4, original 262144)',
    () => {
      // Published output of transformers.modeling_rope_utils._compute_yarn_parameters for this setting
      // (rope_type yarn, betas default 32/1, truncate true): inv_freq[14..22] and the attention factor.
      const spec: RopeSpec = {
        type: 'yarn',
        theta: 1e7,
        factor: 4,
        originalMaxPositions: 262144,
        betaFast: 32,
        betaSlow: 1,
        attentionFactor: 0.1 * Math.log(4) + 1,
        truncate: true,
      };
      const { invFreq } = ropeFrequencies(spec, 64);
      const hf: [number, number][] = [
        [14, 8.659643354e-4],
        [15, 4.74239816e-4],
        [16, 2.569350763e-4],
        [17, 1.373497507e-4],
        [18, 7.217386883e-5],
        [19, 3.707224823e-5],
        [20, 1.844922372e-5],
        [21, 8.759770026e-6],
        [22, 3.849816039e-6],
        [31, 4.137042708e-8],
      ];
      for (const [j, v] of hf) expect(Math.abs((invFreq[j] as number) - v) / v).toBeLessThan(1e-6);
    },
  );
});
