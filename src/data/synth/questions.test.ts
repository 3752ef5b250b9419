import { describe, expect, it } from 'vitest';
import { Rng } from '../../random/rng.ts';
import { aggregationQuestion, comparisonQuestion, type GoldQuestion } from './questions.ts';
import { arithmeticExpression, comparisonAnswer, substituteRefs } from './reader.ts';
import type { RelationId } from './relations.ts';
import type { Entity, World } from './world.ts';

/**
 * A world small enough to check by hand: one country, one city, three people (born 1950, 1962,
 * 1931) and two companies (Zorvex Labs, founded 1975 by Ada Brin; Quil Works, 1990 by Bo Cade).
 * The only relation that leads to a person is `founder`, so an item reached through one more hop is
 * "the founder of Zorvex Labs" or "the founder of Quil Works".
 */
function handWorld(): World {
  const entities: Entity[] = [];
  const byKind: World['byKind'] = { person: [], company: [], city: [], country: [] };
  const add = (
    kind: Entity['kind'],
    name: string,
    aliases: string[],
    facts: Partial<Record<RelationId, number | string>>,
  ): void => {
    byKind[kind].push(entities.length);
    entities.push({ id: entities.length, kind, name, aliases, facts, text: `${name}.` });
  };
  add('country', 'Norland', [], { capital: 1, language: 'Norish' });
  add('city', 'Oskvar', [], { country: 0 });
  add('person', 'Ada Brin', ['Brin'], { birthYear: '1950', birthCity: 1, occupation: 'painter' });
  add('person', 'Bo Cade', ['Cade'], { birthYear: '1962', birthCity: 1, occupation: 'poet' });
  add('person', 'Cal Dorn', ['Dorn'], { birthYear: '1931', birthCity: 1, occupation: 'pilot' });
  add('company', 'Zorvex Labs', ['Zorvex'], { founder: 2, foundedYear: '1975', industry: 'toy', hq: 1 });
  add('company', 'Quil Works', ['Quil'], { founder: 3, foundedYear: '1990', industry: 'steel', hq: 1 });
  return { seed: 0, entities, byKind };
}

const world = handWorld();

/**
 * Every question `make` gives in 3,000 tries from one stream (most tries fail: rejection sampling), by question text.
 */
function sample(make: (rng: Rng) => GoldQuestion | null): Map<string, GoldQuestion> {
  const out = new Map<string, GoldQuestion>();
  const rng = new Rng(11);
  for (let s = 0; s < 3000; s++) {
    const q = make(rng);
    if (q) out.set(q.question, q);
  }
  return out;
}

const decomposition = (q: GoldQuestion | undefined) =>
  q?.hops.map((h) => [h.question, h.answer, h.subject?.name ?? null]);

/** The last hop's answer recomputed from the other hops' gold answers. */
function lastHopAnswer(q: GoldQuestion): string | null {
  const answers = q.hops.map((h) => h.answer);
  const last = substituteRefs((q.hops[q.hops.length - 1] as GoldQuestion['hops'][number]).question, answers);
  const expr = arithmeticExpression(last);
  if (!expr) return comparisonAnswer(last);
  const m = /^max\((\d+), (\d+), (\d+)\) - min\(\1, \2, \3\)$/.exec(expr) ?? /^(\d+) - (\d+)$/.exec(expr);
  if (!m) return null;
  const nums = m.slice(1).map(Number);
  return String(nums.length === 3 ? Math.max(...nums) - Math.min(...nums) : (nums[0] as number) - (nums[1] as number));
}

describe('comparison questions', () => {
  it('three people: independent year lookups, then the comparison hop naming them (hand-checked)', () => {
    const qs = sample((rng) => comparisonQuestion(world, rng, 3, 4));
    const q = qs.get('Who was born first, Ada Brin, Bo Cade or Cal Dorn?');
    expect(q?.shape).toBe('4hopcmp');
    expect(decomposition(q)).toEqual([
      ['In what year was Ada Brin born?', '1950', 'Ada Brin'],
      ['In what year was Bo Cade born?', '1962', 'Bo Cade'],
      ['In what year was Cal Dorn born?', '1931', 'Cal Dorn'],
      ['Who was born first, Ada Brin (born in #1), Bo Cade (born in #2) or Cal Dorn (born in #3)?', 'Cal Dorn', null],
    ]);
    expect(q?.answer).toBe('Cal Dorn');
    expect(q?.aliases).toEqual(['Dorn']);
    // Every item order and both person forms occur; each answer is the hand-checked one (two
    // companies cannot make a three-item comparison).
    const expected: Record<string, string> = { first: 'Cal Dorn', last: 'Bo Cade' };
    expect(qs.size).toBe(12);
    for (const x of qs.values()) {
      const pick = /^Who was born (first|last), /.exec(x.question)?.[1] as string;
      expect(x.answer).toBe(expected[pick]);
      expect(lastHopAnswer(x)).toBe(x.answer);
      expect(x.hops.slice(0, 3).every((h) => !/#\d/.test(h.question))).toBe(true);
    }
  });

  it('two companies: "Which company is older, A or B?" and its younger twin', () => {
    const qs = sample((rng) => comparisonQuestion(world, rng, 2, 3));
    const q = qs.get('Which company is older, Quil Works or Zorvex Labs?');
    expect(q?.shape).toBe('3hopcmp');
    expect(decomposition(q)).toEqual([
      ['In what year was Quil Works founded?', '1990', 'Quil Works'],
      ['In what year was Zorvex Labs founded?', '1975', 'Zorvex Labs'],
      ['Which company is older, Quil Works (founded in #1) or Zorvex Labs (founded in #2)?', 'Zorvex Labs', null],
    ]);
    expect(qs.get('Which company is younger, Zorvex Labs or Quil Works?')?.answer).toBe('Quil Works');
    expect(qs.get('Who was born last, Cal Dorn or Ada Brin?')?.answer).toBe('Ada Brin');
    for (const x of qs.values()) expect(lastHopAnswer(x)).toBe(x.answer);
  });

  it('an item reached through one more hop comes first and is referenced by #k', () => {
    const qs = sample((rng) => comparisonQuestion(world, rng, 2, 4));
    const q = qs.get('Who was born first, the founder of Quil Works or Cal Dorn?');
    expect(q?.shape).toBe('4hopcmp');
    expect(decomposition(q)).toEqual([
      ['Who founded Quil Works?', 'Bo Cade', 'Quil Works'],
      ['In what year was #1 born?', '1962', 'Bo Cade'],
      ['In what year was Cal Dorn born?', '1931', 'Cal Dorn'],
      ['Who was born first, #1 (born in #2) or Cal Dorn (born in #3)?', 'Cal Dorn', null],
    ]);
    expect(qs.get('Who was born last, Cal Dorn or the founder of Zorvex Labs?')?.answer).toBe('Ada Brin');
    for (const x of qs.values()) expect(lastHopAnswer(x)).toBe(x.answer);
  });

  it('rejects impossible item and hop counts', () => {
    expect(() => comparisonQuestion(world, new Rng(1), 3, 3)).toThrow('synth: no comparison of 3 items in 3 hops');
    expect(() => comparisonQuestion(world, new Rng(1), 4, 5)).toThrow('synth: no comparison of 4 items in 5 hops');
  });
});

describe('aggregation questions', () => {
  it('three independent year lookups and the span between the earliest and the latest (hand-checked)', () => {
    const qs = sample((rng) => aggregationQuestion(world, rng, 3, 4));
    const q = qs.get(
      'How many years passed between the earliest and the latest of the birth of Ada Brin, the founding of Zorvex ' +
        'Labs and the birth of Cal Dorn?',
    );
    expect(q?.shape).toBe('4hopagg');
    expect(decomposition(q)).toEqual([
      ['In what year was Ada Brin born?', '1950', 'Ada Brin'],
      ['In what year was Zorvex Labs founded?', '1975', 'Zorvex Labs'],
      ['In what year was Cal Dorn born?', '1931', 'Cal Dorn'],
      ['How many years passed between the earliest and the latest of #1, #2 and #3?', '44', null],
    ]);
    expect(q?.aliases).toEqual(['44 years']);
    expect(
      arithmeticExpression('How many years passed between the earliest and the latest of 1950, 1975 and 1931?'),
    ).toBe('max(1950, 1975, 1931) - min(1950, 1975, 1931)');
    expect(qs.size).toBeGreaterThan(20);
    for (const x of qs.values()) expect(lastHopAnswer(x)).toBe(x.answer);
  });

  it('two items: the two-sided year questions, years between and age at a founding', () => {
    const qs = sample((rng) => aggregationQuestion(world, rng, 2, 3));
    const q = qs.get('How many years passed between the birth of Cal Dorn and the founding of Quil Works?');
    expect(q?.shape).toBe('3hopagg');
    expect(decomposition(q)).toEqual([
      ['In what year was Quil Works founded?', '1990', 'Quil Works'],
      ['In what year was Cal Dorn born?', '1931', 'Cal Dorn'],
      // The question names the earlier event first, whichever hop looked it up.
      ['How many years passed between #2 and #1?', '59', null],
    ]);
    expect(qs.get('How old was Bo Cade when Zorvex Labs was founded?')?.answer).toBe('13');
    for (const x of qs.values()) expect(lastHopAnswer(x)).toBe(x.answer);
    expect(() => aggregationQuestion(world, new Rng(1), 3, 3)).toThrow('synth: no aggregation of 3 items in 3 hops');
  });
});
