import { describe, it, expect } from 'vitest';
import { createProgress } from './progress.ts';

describe('createProgress', () => {
  it('writes plain lines when the stream is not a TTY, starting from the resumed count', () => {
    const out: string[] = [];
    const stream = { isTTY: false, write: (s: string) => out.push(s) > 0 };
    const p = createProgress({ total: 20, done: 4, stream, label: 'eval musique' });
    p.tick(8);
    p.tick(8);
    p.stop();
    expect(out[0]).toBe('eval musique: resuming, 4/20 episodes already predicted\n');
    expect(out[1]).toMatch(/^eval musique: 12\/20 episodes \(\d+\.\d s\)\n$/);
    expect(out[2]).toMatch(/^eval musique: 20\/20 episodes/);
    expect(out).toHaveLength(3);
  });
});
