import { describe, it, expect } from 'vitest';
import { PassThrough } from 'node:stream';
import { Progress, formatDuration } from './progress.ts';

function capture(isTTY: boolean): { stream: PassThrough & { isTTY: boolean }; text: () => string } {
  const stream = Object.assign(new PassThrough(), { isTTY });
  const chunks: string[] = [];
  stream.on('data', (c: Buffer) => chunks.push(c.toString()));
  return { stream, text: () => chunks.join('') };
}

describe('Progress', () => {
  it('writes plain lines with an ETA off a TTY', () => {
    const { stream, text } = capture(false);
    let t = 1_000_000;
    const p = new Progress({ total: 10, startStep: 2, stream, now: () => t });
    t += 4000; // 2 steps in 4 s -> 2 s per step, 6 steps left -> 12 s
    p.update(4, { reward: 0.41234, accuracy: 0.25, tokensPerSec: 1234.4 });
    p.update(5, {});
    p.stop();
    // step 5: 3 steps in 4 s, 5 left -> 6.67 s -> 7s
    expect(text()).toBe(
      'step 4/10 reward 0.412 acc 0.250 1234 tok/s eta 12s\nstep 5/10 reward - acc - - tok/s eta 7s\n',
    );
  });

  it('draws a bar on a TTY', () => {
    const { stream, text } = capture(true);
    const p = new Progress({ total: 4, stream, tty: true });
    p.update(2, { reward: 0.5, accuracy: 1, tokensPerSec: 99 });
    p.stop();
    expect(text()).toContain('step 2/4');
    expect(text()).toContain('reward 0.500 acc 1.000 99 tok/s');
  });

  it('formats durations', () => {
    expect([5, 65, 3725, Number.NaN].map(formatDuration)).toEqual(['5s', '1m05s', '1h02m', '?']);
  });
});
