import { describe, expect, it } from 'vitest';
import { ftsMatch, MAX_QUERY_TERMS, queryTerms } from './fts-query.ts';

describe('ftsMatch', () => {
  it('quotes each distinct word and joins them with OR', () => {
    expect(ftsMatch('Who founded Brightwater Looms?')).toBe('"who" OR "founded" OR "brightwater" OR "looms"');
    expect(ftsMatch('NEAR(a b) OR "x" title:y')).toBe('"near" OR "b" OR "x" OR "title" OR "y"');
  });

  it('keeps stopwords when nothing else is left, and caps the terms', () => {
    expect(queryTerms('The Who')).toEqual(['who']);
    expect(queryTerms('the of')).toEqual(['the', 'of']);
    expect(queryTerms(Array.from({ length: 50 }, (_, i) => `w${i}`).join(' '))).toHaveLength(MAX_QUERY_TERMS);
    expect(ftsMatch(' ,;. ')).toBeNull();
  });

  it('reads letters of any script and digits', () => {
    expect(queryTerms('Zürich 1931 東京')).toEqual(['zürich', '1931', '東京']);
  });
});
