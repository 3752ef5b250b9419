import { describe, it, expect } from 'vitest';
import { UserError } from '../errors.ts';
import { parseJsonAt, parseJsonl } from './jsonl.ts';

describe('parseJsonl', () => {
  it('numbers the non-blank lines from 1 and skips blank ones', () => {
    expect(parseJsonl('{"a":1}\n\n  \n[2]\r\n"x"\n', 'f.jsonl')).toEqual([
      { line: 1, value: { a: 1 } },
      { line: 4, value: [2] },
      { line: 5, value: 'x' },
    ]);
    expect(parseJsonl('', 'f.jsonl')).toEqual([]);
  });

  it('names file and line of a line that is not JSON, with the error class asked for', () => {
    expect(() => parseJsonl('{"a":1}\n{oops\n', 'f.jsonl')).toThrow(/^f\.jsonl:2: not valid JSON \(.+\)$/);
    expect(() => parseJsonl('{oops', 'f.jsonl', { error: UserError })).toThrow(UserError);
    expect(() => parseJsonl('{"a":1}\n{"a":', 'f.jsonl')).toThrow(/^f\.jsonl:2: not valid JSON/);
  });

  it('with tornTail drops a torn last line only', () => {
    expect(parseJsonl('{"a":1}\n{"a":\n\n', 'f.jsonl', { tornTail: true })).toEqual([{ line: 1, value: { a: 1 } }]);
    expect(() => parseJsonl('{"a":\n{"a":1}\n', 'f.jsonl', { tornTail: true })).toThrow(
      'f.jsonl:1: not valid JSON (only the last line may be torn)',
    );
  });
});

describe('parseJsonAt', () => {
  it('parses, or throws one line naming where', () => {
    expect(parseJsonAt(' {"a":[1]} ', 'x:3')).toEqual({ a: [1] });
    expect(() => parseJsonAt('[1,', 'x:3')).toThrow(/^x:3: not valid JSON \([^\n]+\)$/);
  });
});
