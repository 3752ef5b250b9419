import type { Config } from '../config/schema.ts';
import type { Episode } from '../data/episode.ts';
import type { Tokenizer } from '../tokenizer/tokenizer.ts';
import type { GrpoRunOptions } from '../train/grpo/loop.ts';
import { makeDistributedCollect } from './coordinator.ts';
import { makeLocalCollect } from './local.ts';

/**
 * The collect of a training run: the in-process one when rollout.distributed is unset, the
 * distributed one when rollout.distributed.redis is set, its in-process reference with
 * rollout.distributed.local. `close` releases the Redis connection (a no-op otherwise).
 */
type Collect = GrpoRunOptions<Episode>['collect'];

export function collectFor(cfg: Config, o: { tokenizer: Tokenizer; runDir: string; companions: readonly string[]; inProcess: () => Collect }): { collect: Collect; close: () => Promise<void> } {
  const d = cfg.rollout.distributed;
  if (d.redis !== '') {
    const dc = makeDistributedCollect({ tokenizer: o.tokenizer, rollout: cfg.rollout, credit: cfg.credit, dist: d, runDir: o.runDir, companions: o.companions });
    return { collect: dc.collect, close: dc.close };
  }
  if (d.local) return { collect: makeLocalCollect({ tokenizer: o.tokenizer, rollout: cfg.rollout, credit: cfg.credit }), close: () => Promise.resolve() };
  return { collect: o.inProcess(), close: () => Promise.resolve() };
}
