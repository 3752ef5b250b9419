import { describe, expect, it } from 'vitest';
import { generateSynth } from '../data/synth/generate.ts';
import { questionShape } from './shapes.ts';

describe('questionShape', () => {
  it('reads the shape off the id prefix', () => {
    expect(questionShape('3hopcmp__1_2_3')).toBe('comparison');
    expect(questionShape('4hopagg__1_2_3_4')).toBe('aggregation');
    expect(questionShape('3hop2__1_2_3')).toBe('chain');
    expect(questionShape('2hop__5_6')).toBe('chain');
    expect(questionShape('hopcmp-like-but-not')).toBe('chain');
  });

  it('gives every generated record the shape it was drawn as', () => {
    const only = (shape: 'chain' | 'comparison' | 'aggregation') =>
      generateSynth({ seed: 3, n: 40, maxHops: 4, shapes: { [shape]: 1 } }).map((r) => questionShape(r.id));
    expect(new Set(only('comparison'))).toEqual(new Set(['comparison']));
    expect(new Set(only('aggregation'))).toEqual(new Set(['aggregation']));
    expect(new Set(only('chain'))).toEqual(new Set(['chain']));
  });
});
