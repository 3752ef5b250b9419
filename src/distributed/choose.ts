import type { Config } from '../config/schema.ts';
import type { StepStages } from '../train/grpo/types.ts';
import type { Tokenizer } from '../tokenizer/tokenizer.ts';
import { localStages, redisStages } from './stages.ts';

/**
 * The generating stages of a training run: the in-process ones when rollout.distributed is unset,
 * queued jobs when rollout.distributed.redis is set, their in-process reference with
 * rollout.distributed.local. `close` releases the Redis connection (a no-op otherwise).
 */
export function stagesFor(
  cfg: Config,
  o: { tokenizer: Tokenizer; runDir: string; companions: readonly string[]; inProcess: () => StepStages },
): StepStages {
  const d = cfg.rollout.distributed;
  if (d.redis !== '')
    return redisStages({
      tokenizer: o.tokenizer,
      rollout: cfg.rollout,
      credit: cfg.credit,
      dist: d,
      runDir: o.runDir,
      companions: o.companions,
    });
  if (d.local) return localStages({ tokenizer: o.tokenizer, rollout: cfg.rollout, credit: cfg.credit });
  return o.inProcess();
}
