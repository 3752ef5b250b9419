import { describe, expect, it } from 'vitest';
import { configJsonSchema } from '../json-schema.ts';
import { ConfigError, loadConfig } from '../load.ts';
import { count, MAX_TIMER_MS, MAX_TIMER_S, timerMs, timerSeconds } from './bounds.ts';

interface Leaf {
  path: string;
  type: string;
  maximum?: number;
}

/** Every number and integer key of the config's JSON Schema, with its path and upper bound. */
function numericKeys(node: unknown, path: string[] = []): Leaf[] {
  if (node === null || typeof node !== 'object') return [];
  const n = node as Record<string, unknown>;
  const here: Leaf[] =
    n.type === 'integer' || n.type === 'number'
      ? [{ path: path.join('.'), type: n.type, maximum: n.maximum as number | undefined }]
      : [];
  const props = (n.properties ?? {}) as Record<string, unknown>;
  const items = n.items === undefined ? [] : numericKeys(n.items, [...path, '[]']);
  const anyOf = Array.isArray(n.anyOf) ? n.anyOf.flatMap((a) => numericKeys(a, path)) : [];
  return [...here, ...Object.entries(props).flatMap(([k, v]) => numericKeys(v, [...path, k])), ...items, ...anyOf];
}

describe('timer and count helpers', () => {
  it('timerMs takes 1..2^31 - 1 ms and refuses what a Node timer would fire at once', () => {
    const t = timerMs(1000, 'A limit.');
    expect(t.parse(undefined)).toBe(1000);
    expect(t.parse(MAX_TIMER_MS)).toBe(2 ** 31 - 1);
    expect(t.safeParse(2 ** 31).success).toBe(false);
    expect(t.safeParse(0).success).toBe(false);
    expect(t.safeParse(1.5).success).toBe(false);
    expect(t.description).toBe('A limit (at most 2^31 - 1 ms, the longest delay a Node timer holds).');
  });

  it('timerSeconds keeps seconds x 1000 within a timer', () => {
    const t = timerSeconds(900, 'Seconds.');
    expect(MAX_TIMER_S * 1000).toBeLessThanOrEqual(MAX_TIMER_MS);
    expect(t.parse(MAX_TIMER_S)).toBe(MAX_TIMER_S);
    expect(t.safeParse(MAX_TIMER_S + 1).success).toBe(false);
    expect(t.safeParse(0).success).toBe(false);
  });

  it('count is an integer in min..max and names the range in its help', () => {
    const c = count(1, 64, 2, 'Replays.');
    expect(c.parse(undefined)).toBe(2);
    expect(c.safeParse(0).success).toBe(false);
    expect(c.safeParse(65).success).toBe(false);
    expect(c.safeParse(2.5).success).toBe(false);
    expect(c.description).toBe('Replays (1..64).');
  });
});

describe('every count of the config is bounded', () => {
  const keys = numericKeys(configJsonSchema());

  it('every integer key has an upper bound far below 2^53 (seeds are identifiers, not counts)', () => {
    const integers = keys.filter((k) => k.type === 'integer');
    expect(integers.length).toBeGreaterThan(60);
    const seeds = integers.filter((k) => /(^|\.)seeds?(\.\[\])?$/.test(k.path)).map((k) => k.path);
    expect(seeds.sort()).toEqual([
      'ablation.seeds.[]',
      'data.synthetic.seed',
      'eval.seed',
      'run.seed',
      'train.sft.expert.seed',
    ]);
    const unbounded = integers.filter((k) => !seeds.includes(k.path) && !(k.maximum! <= 2 ** 32));
    expect(unbounded.map((k) => k.path)).toEqual([]);
  });

  it('every millisecond key is at most 2^31 - 1, every seconds key at most (2^31 - 1) / 1000', () => {
    const ms = keys.filter((k) => /Ms$/.test(k.path));
    // rollout.tools' timers twice: a module entry's and an MCP server entry's.
    expect(ms.map((k) => k.path).sort()).toEqual([
      'rollout.code.timeoutMs',
      'rollout.search.timeoutMs',
      'rollout.tools.[].startTimeoutMs',
      'rollout.tools.[].startTimeoutMs',
      'rollout.tools.[].timeoutMs',
      'rollout.tools.[].timeoutMs',
    ]);
    for (const k of ms) expect(k.maximum, k.path).toBe(MAX_TIMER_MS);
    const s = keys.filter((k) => /S$/.test(k.path));
    expect(s.map((k) => k.path)).toEqual(['rollout.distributed.jobTimeoutS']);
    for (const k of s) expect(k.maximum, k.path).toBe(MAX_TIMER_S);
  });

  it.each([
    ['credit.replays=1e9', /^config: credit\.replays: Too big: expected number to be <=64 /],
    ['credit.shapleyPermutations=1e9', /credit\.shapleyPermutations: Too big/],
    ['rollout.groupSize=1e9', /rollout\.groupSize: Too big/],
    ['train.microBatch=1e9', /train\.microBatch: Too big/],
    ['rollout.search.timeoutMs=2147483648', /rollout\.search\.timeoutMs: at most 2147483647 ms/],
    ['rollout.code.timeoutMs=1e10', /rollout\.code\.timeoutMs: at most 2147483647 ms/],
    ['rollout.distributed.jobTimeoutS=1e7', /rollout\.distributed\.jobTimeoutS: at most 2147483 s/],
    ['run.threads=5000', /run\.threads: Too big: expected number to be <=1024/],
  ])('--set %s is one config error', (set, message) => {
    expect(() => loadConfig({ sets: [set] })).toThrow(ConfigError);
    expect(() => loadConfig({ sets: [set] })).toThrow(message);
  });
});
