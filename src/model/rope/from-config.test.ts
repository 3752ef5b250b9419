import { describe, expect, it } from 'vitest';
import { RopeConfigError, ropeConfigOf } from './from-config.ts';

function errorOf(f: () => unknown): RopeConfigError {
  try {
    f();
  } catch (err) {
    if (err instanceof RopeConfigError) return err;
    throw err;
  }
  throw new Error('expected a RopeConfigError');
}

const LLAMA31 = {
  factor: 8.0,
  low_freq_factor: 1.0,
  high_freq_factor: 4.0,
  original_max_position_embeddings: 8192,
  rope_type: 'llama3',
};

describe('ropeConfigOf: both config.json spellings give one spec', () => {
  it('absent RoPE keys: default, theta 10000 (the HF default), 4.x format', () => {
    expect(ropeConfigOf({}, 2048)).toEqual({ spec: { type: 'default', theta: 10000 }, format: 'rope_theta' });
  });

  it('Qwen3: rope_theta 1e6 + rope_scaling null (4.x) equals rope_parameters (5.x), flat or per layer type', () => {
    const v4 = ropeConfigOf({ rope_theta: 1000000.0, rope_scaling: null }, 40960);
    const v5 = ropeConfigOf({ rope_parameters: { rope_theta: 1000000.0, rope_type: 'default' } }, 40960);
    const perType = ropeConfigOf(
      {
        rope_parameters: {
          full_attention: { rope_theta: 1e6, rope_type: 'default' },
          sliding_attention: { rope_theta: 1e4, rope_type: 'default' },
        },
      },
      40960,
    );
    expect(v4).toEqual({ spec: { type: 'default', theta: 1e6 }, format: 'rope_theta' });
    expect(v5).toEqual({ spec: { type: 'default', theta: 1e6 }, format: 'rope_parameters' });
    expect(perType.spec).toEqual(v4.spec);
  });

  it('Llama 3.2: llama3 rope_scaling (4.x) equals rope_parameters with rope_theta inside (5.x)', () => {
    const v4 = ropeConfigOf({ rope_theta: 500000.0, rope_scaling: LLAMA31 }, 131072).spec;
    const v5 = ropeConfigOf({ rope_parameters: { ...LLAMA31, rope_theta: 500000.0 } }, 131072).spec;
    expect(v4).toEqual({
      type: 'llama3',
      theta: 500000,
      factor: 8,
      lowFreqFactor: 1,
      highFreqFactor: 4,
      originalMaxPositions: 8192,
    });
    expect(v5).toEqual(v4);
  });

  it('Qwen2.5 yarn with the legacy "type" key: defaults beta 32/1, truncate, attention factor 0.1 ln 4 + 1', () => {
    const { spec } = ropeConfigOf(
      { rope_theta: 1e6, rope_scaling: { factor: 4.0, original_max_position_embeddings: 32768, type: 'yarn' } },
      131072,
    );
    expect(spec).toEqual({
      type: 'yarn',
      theta: 1e6,
      factor: 4,
      originalMaxPositions: 32768,
      betaFast: 32,
      betaSlow: 1,
      attentionFactor: 0.1 * Math.log(4) + 1,
      truncate: true,
    });
  });

  it('yarn: explicit attention_factor wins; mscale / mscale_all_dim give a ratio; missing factor = max / original', () => {
    const base = { rope_type: 'yarn', rope_theta: 1e4, original_max_position_embeddings: 4096 };
    const att = (p: Record<string, unknown>, max = 163840): number => {
      const s = ropeConfigOf({ rope_parameters: { ...base, ...p } }, max).spec;
      if (s.type !== 'yarn') throw new Error('not yarn');
      return s.attentionFactor;
    };
    expect(att({ factor: 40, attention_factor: 1.25 })).toBe(1.25);
    // DeepSeek-V2-Lite: equal mscales cancel
    expect(att({ factor: 40, mscale: 0.707, mscale_all_dim: 0.707 })).toBe(1);
    expect(att({ factor: 40, mscale: 1, mscale_all_dim: 0.5 })).toBeCloseTo(
      (0.1 * Math.log(40) + 1) / (0.05 * Math.log(40) + 1),
      15,
    );
    expect(att({}, 16384)).toBeCloseTo(0.1 * Math.log(4) + 1, 15); // factor 16384 / 4096 = 4
    const s = ropeConfigOf(
      { rope_parameters: { ...base, factor: 2, truncate: false, beta_fast: 16, beta_slow: 2 } },
      8192,
    ).spec;
    expect(s).toMatchObject({ truncate: false, betaFast: 16, betaSlow: 2 });
  });

  it('refuses with the key and the reason', () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
      [{ rope_scaling: { rope_type: 'dynamic', factor: 2 } }, 'rope_scaling', /dynamic NTK\) is not supported/],
      [
        { rope_scaling: { rope_type: 'longrope', short_factor: [1], long_factor: [1] } },
        'rope_scaling',
        /longrope' is not supported/,
      ],
      [{ rope_scaling: { rope_type: 'linear' } }, 'rope_scaling', /'factor' must be a positive number/],
      [
        { rope_scaling: { rope_type: 'linear', factor: 2, rope_theta: 5 } },
        'rope_scaling',
        /key 'rope_theta' is not read by rope_type 'linear'/,
      ],
      [
        { rope_parameters: { rope_type: 'default', rope_theta: 1e6, factor: 2 } },
        'rope_parameters',
        /key 'factor' is not read by rope_type 'default'/,
      ],
      [
        { rope_parameters: { sliding_attention: { rope_type: 'default', rope_theta: 1e4 } } },
        'rope_parameters',
        /has no 'full_attention' entry/,
      ],
      [
        { rope_parameters: { ...LLAMA31, rope_theta: 5e5, high_freq_factor: 1 } },
        'rope_parameters',
        /high_freq_factor \(1\) must exceed low_freq_factor \(1\)/,
      ],
      [
        { rope_parameters: { rope_type: 'default', rope_theta: 1e6 }, rope_theta: 1e4 },
        'rope_theta',
        /contradict rope_parameters/,
      ],
      [{ rope_theta: 'big' }, 'rope_theta', /'rope_theta' must be a positive number/],
    ];
    for (const [cfg, key, msg] of cases) {
      const e = errorOf(() => ropeConfigOf(cfg, 2048));
      expect(e.key).toBe(key);
      expect(e.message).toMatch(msg);
      expect(e.message).not.toContain('\n');
    }
    // Both spellings that agree are accepted.
    expect(
      ropeConfigOf({ rope_parameters: { rope_type: 'default', rope_theta: 1e6 }, rope_theta: 1e6 }, 2048).spec,
    ).toEqual({ type: 'default', theta: 1e6 });
  });
});
