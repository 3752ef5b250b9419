import { Rng } from '../../random/rng.ts';

/**
 * The data order of SFT and DPO: items drawn in seeded epochs (shuffle all n, walk the
 * permutation, reshuffle when it runs out), from one Rng(seed). The number of items drawn so far
 * (the cursor) fixes the whole state: a resumed run replays that many draws from the seed, so it
 * sees the same batches an uninterrupted one would, and no permutation needs saving.
 */
export class EpochOrder {
  private readonly rng: Rng;
  private order: number[] = [];
  private pos = 0;
  private drawn = 0;

  constructor(
    private readonly n: number,
    seed: number,
    cursor = 0,
  ) {
    if (!(Number.isInteger(n) && n >= 1)) throw new Error(`EpochOrder: n must be an integer >= 1, got ${n}`);
    this.rng = new Rng(seed);
    for (let k = 0; k < cursor; k++) this.draw();
  }

  private draw(): number {
    if (this.pos >= this.order.length) {
      this.order = this.rng.shuffle(Array.from({ length: this.n }, (_, i) => i));
      this.pos = 0;
    }
    this.drawn += 1;
    return this.order[this.pos++] as number;
  }

  /** The next `count` item indices (they may span an epoch boundary). */
  take(count: number): number[] {
    return Array.from({ length: count }, () => this.draw());
  }

  /** Items drawn so far (trainer_state.json's dataCursor). */
  get cursor(): number {
    return this.drawn;
  }

  /** The generator state (saved beside the cursor, so a resume can check its replay). */
  rngState(): number[] {
    return this.rng.state();
  }
}
