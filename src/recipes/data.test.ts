import { describe, expect, it } from 'vitest';
import { configSchema } from '../config/schema.ts';
import { generateSynth } from '../data/synth/generate.ts';
import { UserError } from '../errors.ts';
import { loadTrainData } from './data.ts';

const dataCfg = (d: Record<string, unknown>) => configSchema.parse({ data: d }).data;

describe('loadTrainData', () => {
  it('synthetic: train and held-out are one generator call split in two (same world, disjoint questions)', () => {
    const { train, heldOut } = loadTrainData(dataCfg({ synthetic: { seed: 4, train: 10, heldOut: 3, minHops: 2, maxHops: 3 } }));
    expect(train).toHaveLength(10);
    expect(heldOut).toHaveLength(3);
    const all = generateSynth({ seed: 4, n: 13, minHops: 2, maxHops: 3 });
    expect(train.map((e) => e.id)).toEqual(all.slice(0, 10).map((r) => r.id));
    expect(heldOut.map((e) => e.id)).toEqual(all.slice(10).map((r) => r.id));
    const trainIds = new Set(train.map((e) => e.id));
    expect(heldOut.some((e) => trainIds.has(e.id))).toBe(false);
    // Same world: a held-out question's paragraphs are paragraphs of that world, seen in training too.
    const trainTitles = new Set(train.flatMap((e) => e.paragraphs.map((p) => p.title)));
    expect(heldOut.flatMap((e) => e.paragraphs.map((p) => p.title)).some((t) => trainTitles.has(t))).toBe(true);
  });

  it('synthetic: data.synthetic.world sizes the world', () => {
    const world = { countries: 20, cities: 90, people: 600, companies: 150 };
    const { train } = loadTrainData(dataCfg({ synthetic: { seed: 4, train: 5, heldOut: 1, minHops: 2, maxHops: 2, world } }));
    expect(train.map((e) => e.id)).toEqual(generateSynth({ seed: 4, n: 6, minHops: 2, maxHops: 2, world }).slice(0, 5).map((r) => r.id));
    expect(train.map((e) => e.id)).not.toEqual(generateSynth({ seed: 4, n: 6, minHops: 2, maxHops: 2 }).slice(0, 5).map((r) => r.id));
  });

  it('benchmark: the last data.benchmarkHeldOut answerable episodes are held out (at most half)', () => {
    const file = 'data/musique/musique_ans_v1.0_sample.jsonl'; // 20 answerable records, shipped in the repo
    const { train, heldOut } = loadTrainData(dataCfg({ source: 'musique', path: file, benchmarkHeldOut: 5 }));
    expect(train).toHaveLength(15);
    expect(heldOut).toHaveLength(5);
    const capped = loadTrainData(dataCfg({ source: 'musique', path: file, benchmarkHeldOut: 50 }));
    expect(capped.heldOut).toHaveLength(10);
    expect(capped.train).toHaveLength(10);
  });

  it('a missing benchmark file is a one-line UserError naming it', () => {
    expect(() => loadTrainData(dataCfg({ source: 'musique', path: 'nope.jsonl' }))).toThrow(new UserError('data.path not found: nope.jsonl'));
  });
});
