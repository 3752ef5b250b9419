import { expect } from 'vitest';

/**
 * Test helper: awaits a promise that must reject and returns its message, asserting that the message
 * is one line (bad input gets a one-line error naming the problem).
 */
export async function errorOf(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    const msg = (err as Error).message;
    expect(msg).not.toContain('\n');
    return msg;
  }
  throw new Error('expected a rejection');
}
