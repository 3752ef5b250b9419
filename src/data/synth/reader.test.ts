import { describe, expect, it } from 'vitest';
import { calculate } from '../../tools/calculate.ts';
import { createSearch } from '../../tools/search.ts';
import { generateSynth } from './generate.ts';
import {
  arithmeticExpression,
  comparisonExpression,
  comparisonItemWith,
  extractAnswer,
  parseHopQuestion,
  substituteRefs,
} from './reader.ts';
import { toEpisode } from './record.ts';

describe('reader: hand cases', () => {
  const person =
    'Dara Velk was a chemist by occupation. Dara Velk was born in 1950 in the city of Kozhar. Zorvex Labs employed ' +
    'Dara Velk for many years. Orin Vlask was the mentor of Dara Velk.';

  it('answers each relation the paragraph states, in either sentence variant', () => {
    expect(extractAnswer('In which city was Dara Velk born?', person)).toBe('Kozhar');
    expect(extractAnswer('In what year was Dara Velk born?', person)).toBe('1950');
    expect(extractAnswer('What was the occupation of Dara Velk?', person)).toBe('chemist');
    expect(extractAnswer('Which company employed Dara Velk?', person)).toBe('Zorvex Labs');
    // "{mentor} was the mentor of {s}." starts a sentence: the name must not run into the previous one.
    expect(extractAnswer('Who was the mentor of Dara Velk?', person)).toBe('Orin Vlask');
    expect(extractAnswer('  Who was the mentor   of Dara Velk? ', person)).toBe('Orin Vlask');
  });

  it(
    'returns null for another subject, an unsubstituted reference, an unknown question or a paragraph that does not ' +
      'say',
    () => {
      expect(extractAnswer('Who was the mentor of Orin Vlask?', person)).toBeNull();
      expect(extractAnswer('In which city was #1 born?', person)).toBeNull();
      expect(extractAnswer('Why is the sky blue?', person)).toBeNull();
      expect(extractAnswer('Who founded Zorvex Labs?', person)).toBeNull();
      expect(parseHopQuestion('Who founded Zorvex Labs?')).toEqual({ relation: 'founder', subject: 'Zorvex Labs' });
    },
  );

  it('turns arithmetic hops into mathjs expressions', () => {
    expect(arithmeticExpression('How many years passed between 1950 and 1987?')).toBe('1987 - 1950');
    expect(arithmeticExpression('How old was a person born in 1901 in the year 1950?')).toBe('1950 - 1901');
    expect(arithmeticExpression('What year is 60 years after 1950?')).toBe('1950 + 60');
    expect(arithmeticExpression('How many years passed between #1 and #2?')).toBeNull();
    expect(arithmeticExpression('Who founded Zorvex Labs?')).toBeNull();
  });

  it('substitutes #k references with earlier answers', () => {
    expect(substituteRefs('How many years passed between #2 and #1?', ['1987', '1950'])).toBe(
      'How many years passed between 1950 and 1987?',
    );
    expect(substituteRefs('Who is the mayor of #3?', ['a'])).toBe('Who is the mayor of #3?');
  });
});

describe('reader + tools on 500 generated records', () => {
  const records = generateSynth({ seed: 42, n: 500 });

  it(
    'reads every gold hop answer from its support paragraph, computes every arithmetic hop, and search finds >= 99% ' +
      'of support paragraphs at top 2',
    async () => {
      let factHops = 0;
      let arithmeticHops = 0;
      let found = 0;
      for (const r of records) {
        const episode = toEpisode(r);
        const search = createSearch(episode.paragraphs, { topK: 2, maxChars: 300 });
        const gold = r.question_decomposition.map((h) => h.answer);
        for (const hop of r.question_decomposition) {
          const q = substituteRefs(hop.question, gold);
          if (hop.paragraph_support_idx === null) {
            arithmeticHops++;
            const expr = arithmeticExpression(q);
            expect(expr, q).not.toBeNull();
            expect(calculate(expr as string), q).toBe(hop.answer);
            continue;
          }
          factHops++;
          expect(extractAnswer(q, r.paragraphs[hop.paragraph_support_idx]?.paragraph_text ?? ''), q).toBe(hop.answer);
          const hit = await search(q);
          if (hit.retrievedIdx?.includes(hop.paragraph_support_idx)) found++;
        }
      }
      expect(factHops).toBeGreaterThan(1000);
      expect(arithmeticHops).toBeGreaterThan(100);
      // Measured on seed 42: 100% (the support paragraph ranks first for every hop).
      expect(found / factHops).toBeGreaterThanOrEqual(0.99);
    },
  );

  it('reads no answer from the other paragraphs of a record (the support paragraph is the only source)', () => {
    let checked = 0;
    for (const r of records.slice(0, 100)) {
      const gold = r.question_decomposition.map((h) => h.answer);
      for (const hop of r.question_decomposition) {
        if (hop.paragraph_support_idx === null) continue;
        const q = substituteRefs(hop.question, gold);
        const answering = r.paragraphs.filter((p) => extractAnswer(q, p.paragraph_text) !== null).map((p) => p.idx);
        expect(answering, q).toEqual([hop.paragraph_support_idx]);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(200);
  });
});

describe('comparison hops decided by calculate', () => {
  it(
    'argmin for first / older, argmax for last / younger, each item labelled with its year; the item the tool ' +
      'named',
    () => {
      const first = 'Who was born first, Ada Brin (born in 1950) or Bo Cade (born in 1962)?';
      expect(comparisonExpression(first)).toBe("argmin('Ada Brin', 1950, 'Bo Cade', 1962)");
      expect(comparisonItemWith(first, 'Ada Brin')).toBe('Ada Brin');
      expect(comparisonItemWith(first, ' Bo Cade ')).toBe('Bo Cade');
      expect(comparisonItemWith(first, '1950')).toBeNull();
      expect(comparisonItemWith(first, 'Ada')).toBeNull();
      const last = 'Who was born last, Ada Brin (born in 1950), Bo Cade (born in 1962) or Cy Dorn (born in 1955)?';
      expect(comparisonExpression(last)).toBe("argmax('Ada Brin', 1950, 'Bo Cade', 1962, 'Cy Dorn', 1955)");
      expect(
        comparisonExpression('Which company is older, Velm Ltd (founded in 1901) or Oro Inc (founded in 1899)?'),
      ).toBe("argmin('Velm Ltd', 1901, 'Oro Inc', 1899)");
      expect(
        comparisonExpression('Who was born first, Ada Brin (born in unknown) or Bo Cade (born in 1962)?'),
      ).toBeNull();
      expect(comparisonExpression('In what year was Ada Brin born?')).toBeNull();
    },
  );
});
