import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_LIMITS,
  parseRetrieveRequest,
  parseRetrieveResponse,
  retrieveRequestBody,
  retrieveResponse,
} from './protocol.ts';

const recorded = JSON.parse(
  readFileSync(resolve(import.meta.dirname, '../../../test/fixtures/retrieval/search-r1-retrieve.json'), 'utf8'),
) as {
  request: unknown;
  response: unknown;
  bm25Response: unknown;
  bareResponse: unknown;
};

describe('Search-R1 /retrieve protocol', () => {
  it("parses the server's request shape", () => {
    expect(parseRetrieveRequest(recorded.request)).toEqual({
      queries: ['What is Python?', 'Tell me about neural networks.'],
      topk: 3,
      returnScores: true,
    });
    // Search-R1 reads a missing, null or 0 topk as its default and return_scores as false when absent.
    expect(parseRetrieveRequest({ queries: ['q'] })).toEqual({ queries: ['q'], topk: 3, returnScores: false });
    expect(parseRetrieveRequest({ queries: ['q'], topk: 0 })).toMatchObject({ topk: 3 });
  });

  it('sends what the server parses: queries, topk, return_scores true', () => {
    const body = JSON.parse(retrieveRequestBody(['What is Python?', 'Tell me about neural networks.'], 3)) as unknown;
    expect(body).toEqual(recorded.request);
  });

  it('reads a scored response of corpus rows {id, contents}', () => {
    const hits = parseRetrieveResponse(recorded.response, 2);
    expect(hits.map((l) => l.length)).toEqual([3, 3]);
    expect(hits[0]?.[0]).toEqual({
      id: '1029384',
      title: 'Python (programming language)',
      text: 'Python is a high-level, general-purpose programming language whose design stresses readable code.',
      score: 0.8712,
    });
    expect(hits[1]?.[2]).toMatchObject({ id: '90211', title: 'Neural circuit' });
  });

  it("reads the BM25 retriever's {title, text, contents} documents and bare document lists", () => {
    const bm25 = parseRetrieveResponse(recorded.bm25Response, 2);
    expect(bm25).toEqual([
      [
        {
          id: '',
          title: 'Python (programming language)',
          text: expect.stringMatching(/^Python is a high-level/),
          score: 11.93,
        },
      ],
      [],
    ]);
    expect(parseRetrieveResponse(recorded.bareResponse, 2)).toEqual([
      [{ id: '1029384', title: 'Python (programming language)', text: 'Python is a high-level language.' }],
      [],
    ]);
  });

  it('writes what it reads: our response round-trips, scored and bare', () => {
    const hits = parseRetrieveResponse(recorded.response, 2);
    expect(retrieveResponse(hits, true)).toEqual(recorded.response);
    expect(parseRetrieveResponse(retrieveResponse(hits, false), 2)).toEqual(
      hits.map((l) => l.map(({ score: _s, ...h }) => h)),
    );
  });

  it('says in one line why a request is malformed', () => {
    expect(parseRetrieveRequest([])).toMatch(/^body: expected a JSON object/);
    expect(parseRetrieveRequest({ queries: 'q' })).toBe('queries: expected a list of strings');
    expect(parseRetrieveRequest({ queries: [1] })).toBe('queries: expected a list of strings');
    expect(parseRetrieveRequest({ queries: ['q'], topk: 101 })).toBe('topk: expected an integer 1..100');
    expect(parseRetrieveRequest({ queries: ['q'], topk: 2.5 })).toBe('topk: expected an integer 1..100');
    expect(parseRetrieveRequest({ queries: ['q'], return_scores: 'yes' })).toBe(
      'return_scores: expected true or false',
    );
    expect(parseRetrieveRequest({ queries: Array.from({ length: 257 }, () => 'q') })).toBe(
      'queries: 257 in one request, at most 256',
    );
    expect(parseRetrieveRequest({ queries: ['x'.repeat(DEFAULT_LIMITS.maxQueryChars + 1)] })).toBe(
      'queries[0]: longer than 2000 characters',
    );
  });

  it('rejects a response that is not the shape, in one line', () => {
    expect(() => parseRetrieveResponse({ results: [] }, 1)).toThrow('response: expected {"result": [[...], ...]}');
    expect(() => parseRetrieveResponse({ result: [[]] }, 2)).toThrow('response: 1 result lists for 2 queries');
    expect(() => parseRetrieveResponse({ result: [[{ document: { id: 1 } }]] }, 1)).toThrow(
      'response: result[0][0]: document has no contents string',
    );
    expect(() => parseRetrieveResponse({ result: [{}] }, 1)).toThrow('response: result[0] is not a list');
  });
});
