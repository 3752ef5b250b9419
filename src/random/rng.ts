import { xoroshiro128plus, unsafeUniformIntDistribution, type RandomGenerator } from 'pure-rand';

/**
 * The only source of randomness in sharp-rl (lint bans Math.random elsewhere). A seeded
 * xoroshiro128+ from pure-rand whose state can be saved in trainer_state.json and restored, so a
 * resumed run draws the same numbers as an uninterrupted one.
 */
export class Rng {
  private gen: RandomGenerator;

  constructor(seed: number) {
    this.gen = xoroshiro128plus(seed | 0);
  }

  static fromState(state: readonly number[]): Rng {
    const rng = new Rng(0);
    rng.gen = xoroshiro128plus.fromState(state);
    return rng;
  }

  /** Serialisable generator state (for checkpoints). */
  state(): number[] {
    const s = this.gen.getState?.();
    if (!s) throw new Error('rng: generator state is not serialisable');
    return [...s];
  }

  /** Uniform integer in [min, max] (inclusive). */
  int(min: number, max: number): number {
    return unsafeUniformIntDistribution(min, max, this.gen);
  }

  /** Uniform float in [0, 1) with 53 random bits. */
  float(): number {
    const hi = unsafeUniformIntDistribution(0, (1 << 26) - 1, this.gen);
    const lo = unsafeUniformIntDistribution(0, (1 << 27) - 1, this.gen);
    return (hi * 134217728 + lo) / 9007199254740992;
  }

  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('rng.pick: empty array');
    return items[this.int(0, items.length - 1)] as T;
  }

  /** Fisher-Yates shuffle into a new array. */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = this.int(0, i);
      [out[i], out[j]] = [out[j] as T, out[i] as T];
    }
    return out;
  }

  /** An independent child generator (e.g. one per trajectory) derived from this one. */
  fork(): Rng {
    return new Rng(this.int(0, 0x7fffffff));
  }
}
