import { describe, expect, it } from 'vitest';
import { isLoopback, loopbackHostAllowed } from './loopback.ts';

describe('loopback', () => {
  it('loopbackHostAllowed: a loopback name with the listening port, nothing else', () => {
    expect(loopbackHostAllowed('127.0.0.1:8000', 8000)).toBe(true);
    expect(loopbackHostAllowed('LOCALHOST:8000', 8000)).toBe(true);
    expect(loopbackHostAllowed('[::1]:8000', 8000)).toBe(true);
    expect(loopbackHostAllowed('localhost', 80)).toBe(true);
    expect(loopbackHostAllowed('localhost', 8000)).toBe(false);
    expect(loopbackHostAllowed('127.0.0.1:8001', 8000)).toBe(false);
    expect(loopbackHostAllowed('evil.example:8000', 8000)).toBe(false);
    expect(loopbackHostAllowed('127.0.0.1.evil.example:8000', 8000)).toBe(false);
    expect(loopbackHostAllowed(undefined, 8000)).toBe(false);
    expect(loopbackHostAllowed('', 8000)).toBe(false);
    expect(loopbackHostAllowed('127.0.0.1:8000:1', 8000)).toBe(false);
  });

  it('isLoopback: the loopback names and 127/8, nothing else', () => {
    for (const h of ['127.0.0.1', 'localhost', '::1', '[::1]', '127.1.2.3']) expect(isLoopback(h)).toBe(true);
    for (const h of ['0.0.0.0', '10.0.0.1', 'example.org', '128.0.0.1']) expect(isLoopback(h)).toBe(false);
  });
});
