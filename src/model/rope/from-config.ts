import { DEFAULT_ROPE_THETA, type RopeSpec } from './spec.ts';

/**
 * Reads the RoPE settings of a config.json in either format Transformers writes:
 *   4.x: top-level `rope_theta` and `rope_scaling` (null, or {rope_type | type, factor, ...});
 *   5.x: `rope_parameters`, flat ({rope_type, rope_theta, factor, ...}) or per attention type
 *        ({full_attention: {...}, sliding_attention: {...}}).
 * Every key inside the RoPE dict is either read or refused: a setting we ignored would silently give
 * different frequencies from Transformers. Errors are {key, message} so the caller can name the file.
 */
export type RopeFormat = 'rope_theta' | 'rope_parameters';

export interface RopeConfig {
  spec: RopeSpec;
  /** Which spelling the file used (a config is written back in the format it was read in). */
  format: RopeFormat;
}

export class RopeConfigError extends Error {
  constructor(
    readonly key: string,
    message: string,
  ) {
    super(message);
  }
}

type Dict = Record<string, unknown>;

const isDict = (v: unknown): v is Dict => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Attention-type names Transformers uses as keys of a per-layer-type rope_parameters. */
const LAYER_TYPE_KEYS = new Set(['full_attention', 'sliding_attention', 'chunked_attention', 'linear_attention']);

/** Keys each variant reads (beyond rope_type / type / rope_theta / partial_rotary_factor). */
const VARIANT_KEYS: Record<RopeSpec['type'], readonly string[]> = {
  default: [],
  linear: ['factor'],
  llama3: ['factor', 'low_freq_factor', 'high_freq_factor', 'original_max_position_embeddings'],
  yarn: [
    'factor',
    'original_max_position_embeddings',
    'beta_fast',
    'beta_slow',
    'attention_factor',
    'mscale',
    'mscale_all_dim',
    'truncate',
  ],
};

const REFUSED_TYPES: Record<string, string> = {
  dynamic: "rope_type 'dynamic' (dynamic NTK) is not supported: its frequencies change with the sequence length",
  longrope: "rope_type 'longrope' is not supported (only default, linear, llama3, yarn)",
  proportional: "rope_type 'proportional' is not supported (only default, linear, llama3, yarn)",
};

function positive(d: Dict, key: string, where: string, fallback?: number): number {
  const v = d[key] ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0) {
    throw new RopeConfigError(where, `'${key}' must be a positive number (got ${JSON.stringify(d[key])})`);
  }
  return v;
}

/** Transformers' get_mscale: 0.1 * mscale * ln(scale) + 1 for scale > 1, else 1. */
function mscaleOf(scale: number, mscale = 1): number {
  return scale <= 1 ? 1 : 0.1 * mscale * Math.log(scale) + 1;
}

/** One RoPE dict (rope_scaling of 4.x, or a rope_parameters entry of 5.x) with its base theta. */
function specOf(d: Dict, theta: number, maxPositions: number, where: string, thetaInDict: boolean): RopeSpec {
  const type = d.rope_type ?? d.type ?? 'default';
  if (typeof type !== 'string')
    throw new RopeConfigError(where, `rope_type must be a string (got ${JSON.stringify(type)})`);
  if (type in REFUSED_TYPES) throw new RopeConfigError(where, REFUSED_TYPES[type] as string);
  if (!(type in VARIANT_KEYS))
    throw new RopeConfigError(where, `rope_type '${type}' is not supported (only default, linear, llama3, yarn)`);
  const t = type as RopeSpec['type'];
  const allowed = new Set([
    'rope_type',
    'type',
    'partial_rotary_factor',
    ...(thetaInDict ? ['rope_theta'] : []),
    ...VARIANT_KEYS[t],
  ]);
  for (const k of Object.keys(d)) {
    if (!allowed.has(k))
      throw new RopeConfigError(
        where,
        `key '${k}' is not read by rope_type '${t}', and ignoring it could change the RoPE frequencies`,
      );
  }
  const prf = d.partial_rotary_factor;
  if (prf !== undefined && prf !== null && prf !== 1)
    throw new RopeConfigError(
      where,
      `partial_rotary_factor ${JSON.stringify(prf)} is not supported (only 1: RoPE over the whole head)`,
    );
  switch (t) {
    case 'default':
      return { type: t, theta };
    case 'linear':
      return { type: t, theta, factor: positive(d, 'factor', where) };
    case 'llama3': {
      const lowFreqFactor = positive(d, 'low_freq_factor', where);
      const highFreqFactor = positive(d, 'high_freq_factor', where);
      if (highFreqFactor <= lowFreqFactor)
        throw new RopeConfigError(
          where,
          `high_freq_factor (${highFreqFactor}) must exceed low_freq_factor (${lowFreqFactor})`,
        );
      return {
        type: t,
        theta,
        factor: positive(d, 'factor', where),
        lowFreqFactor,
        highFreqFactor,
        originalMaxPositions: positive(d, 'original_max_position_embeddings', where),
      };
    }
    case 'yarn': {
      const originalMaxPositions = positive(d, 'original_max_position_embeddings', where, maxPositions);
      // Transformers 5 derives a missing factor from the context extension (DeepSeek-V3 style configs).
      const factor = d.factor == null ? maxPositions / originalMaxPositions : positive(d, 'factor', where);
      let attentionFactor: number;
      if (d.attention_factor != null) attentionFactor = positive(d, 'attention_factor', where);
      else {
        const m = d.mscale == null ? undefined : positive(d, 'mscale', where);
        const mAll = d.mscale_all_dim == null ? undefined : positive(d, 'mscale_all_dim', where);
        attentionFactor =
          m !== undefined && mAll !== undefined ? mscaleOf(factor, m) / mscaleOf(factor, mAll) : mscaleOf(factor);
      }
      const truncate = d.truncate ?? true;
      if (typeof truncate !== 'boolean')
        throw new RopeConfigError(where, `'truncate' must be true or false (got ${JSON.stringify(truncate)})`);
      // `beta_fast or 32`: Transformers treats 0 like absent.
      const betaFast = d.beta_fast === 0 || d.beta_fast == null ? 32 : positive(d, 'beta_fast', where);
      const betaSlow = d.beta_slow === 0 || d.beta_slow == null ? 1 : positive(d, 'beta_slow', where);
      return { type: t, theta, factor, originalMaxPositions, betaFast, betaSlow, attentionFactor, truncate };
    }
  }
}

/** The flat RoPE dict of a 5.x rope_parameters (the full_attention entry of a per-layer-type one). */
function flatParameters(rp: Dict): Dict {
  const keys = Object.keys(rp);
  const perType = keys.length > 0 && keys.every((k) => LAYER_TYPE_KEYS.has(k) && isDict(rp[k]));
  if (!perType) return rp;
  // Every layer is full attention (layer_types is checked elsewhere), so only that entry is used.
  const full = rp.full_attention;
  if (!isDict(full))
    throw new RopeConfigError('rope_parameters', `has no 'full_attention' entry (got ${keys.join(', ')})`);
  return full;
}

/**
 * The RoPE spec of a config.json object. `maxPositions` is its max_position_embeddings (YaRN's
 * default original context).
 */
export function ropeConfigOf(cfg: Dict, maxPositions: number): RopeConfig {
  const prf = cfg.partial_rotary_factor;
  if (prf !== undefined && prf !== null && prf !== 1) {
    throw new RopeConfigError(
      'partial_rotary_factor',
      `${JSON.stringify(prf)} is not supported (only 1: RoPE over the whole head)`,
    );
  }
  const rp = cfg.rope_parameters;
  const hasV4 = cfg.rope_theta !== undefined || (cfg.rope_scaling !== undefined && cfg.rope_scaling !== null);
  if (rp !== undefined && rp !== null) {
    if (!isDict(rp)) throw new RopeConfigError('rope_parameters', `must be an object (got ${JSON.stringify(rp)})`);
    const flat = flatParameters(rp);
    const where = flat === rp ? 'rope_parameters' : 'rope_parameters.full_attention';
    const theta = positive(flat, 'rope_theta', where, DEFAULT_ROPE_THETA);
    const spec = specOf(flat, theta, maxPositions, where, true);
    if (hasV4) {
      // Both spellings: accepted only when they say the same thing, else which one wins is a guess.
      const v4 = ropeConfigOf({ rope_theta: cfg.rope_theta, rope_scaling: cfg.rope_scaling }, maxPositions).spec;
      if (JSON.stringify(v4) !== JSON.stringify(spec)) {
        throw new RopeConfigError(
          'rope_theta',
          `rope_theta/rope_scaling (${JSON.stringify(v4)}) contradict rope_parameters (${JSON.stringify(spec)}); ` +
            `keep one`,
        );
      }
    }
    return { spec, format: 'rope_parameters' };
  }
  const theta =
    cfg.rope_theta === undefined || cfg.rope_theta === null
      ? DEFAULT_ROPE_THETA
      : positive(cfg, 'rope_theta', 'rope_theta');
  const rs = cfg.rope_scaling;
  if (rs === undefined || rs === null) return { spec: { type: 'default', theta }, format: 'rope_theta' };
  if (!isDict(rs)) throw new RopeConfigError('rope_scaling', `must be null or an object (got ${JSON.stringify(rs)})`);
  return { spec: specOf(rs, theta, maxPositions, 'rope_scaling', false), format: 'rope_theta' };
}
