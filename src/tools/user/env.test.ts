import { describe, expect, it } from 'vitest';
import { UserError } from '../../errors.ts';
import { Secrets } from './env.ts';

describe('Secrets', () => {
  it('expands ${NAME} references and scrubs the values from messages', () => {
    const s = new Secrets({ TOKEN: 'abc-123-xyz', USER: 'me' }, 'mcp server x');
    expect(s.expand('Bearer ${TOKEN}')).toBe('Bearer abc-123-xyz');
    expect(s.expandAll({ A: '${USER}:${TOKEN}', B: 'plain $HOME ${' })).toEqual({
      A: 'me:abc-123-xyz',
      B: 'plain $HOME ${',
    });
    expect(s.scrub('GET https://h/?k=abc-123-xyz failed')).toBe('GET https://h/?k=*** failed');
    // Values shorter than 4 characters are not scrubbed: they would blank ordinary words.
    expect(s.scrub('me and you')).toBe('me and you');
  });
  it('an unset variable is a one-line UserError naming it, never a value', () => {
    const s = new Secrets({}, 'mcp server x');
    expect(() => s.expand('${MISSING_KEY}')).toThrow(UserError);
    expect(() => s.expand('${MISSING_KEY}')).toThrow(
      'rollout.tools: mcp server x: environment variable MISSING_KEY is not set',
    );
  });
});
