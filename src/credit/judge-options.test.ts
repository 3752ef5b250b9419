import { describe, expect, it } from 'vitest';
import { configSchema } from '../config/schema.ts';
import type { Policy } from '../rollout/policy.ts';
import { getProtocol } from '../rollout/protocol/index.ts';
import { engineContextOf } from './engine-adapters.ts';
import { judgeOptions } from './judge-options.ts';

const base = configSchema.parse({}).credit;
const protocol = getProtocol('tags');
// Building the options never calls the policy (the resampler does, per first error:
// src/train/grpo/collect-failure-pairs.test.ts).
const policy = {} as Policy;

describe('judgeOptions', () => {
  it('builds nothing when message shares and failure pairs are both off', () => {
    expect(judgeOptions(base, policy, protocol, 16)).toEqual({});
  });

  it('builds only the judge for message shares', () => {
    const o = judgeOptions({ ...base, messageLevel: true }, policy, protocol, 16);
    expect(o.judge?.name).toBe('rule');
    expect(o.contextOf).toBeUndefined();
    expect(o.resample).toBeUndefined();
  });

  it('builds judge, agent context and a resampler over the policy for failure pairs', () => {
    const o = judgeOptions({ ...base, failurePairs: true }, policy, protocol, 16);
    expect(o.judge?.name).toBe('rule');
    expect(o.contextOf).toBe(engineContextOf);
    expect(o.resample).toBeTypeOf('function');
  });

  it('the llm judge needs a scorer', () => {
    expect(() => judgeOptions({ ...base, failurePairs: true, judge: 'llm' }, policy, protocol, 16)).toThrow(
      'credit.judge=llm needs a model scorer',
    );
    const o = judgeOptions({ ...base, failurePairs: true, judge: 'llm' }, policy, protocol, 16, (_p, c) =>
      Promise.resolve(c.map(() => 0)),
    );
    expect(o.judge?.name).toBe('llm');
  });
});
