import type { Episode } from '../data/episode.ts';
import type { Trajectory } from '../rollout/types.ts';
import type { CreditConfig, GroupRollout, PlannedReplay, RolloutConfig } from './units.ts';

/** The payloads of the two job kinds (BullMQ job names 'group' and 'replay'). */
export interface GroupJobData {
  run: string;
  step: number;
  q: number;
  /** Folder of the policy version this job must use. */
  policy: string;
  episode: Episode;
  rollout: RolloutConfig;
  credit: CreditConfig;
  seed: number;
  /** Attempts of each replay child (rollout.distributed.retries + 1). */
  attempts: number;
  /** Set once the rollout is done and the replay children are enqueued. */
  rolled?: GroupRollout;
}

export interface ReplayJobData {
  policy: string;
  episode: Episode;
  traj: Trajectory;
  /** The replays the credit module asked of this trajectory (masked delegations and replica each). */
  replays: PlannedReplay[];
  rollout: RolloutConfig;
  credit: CreditConfig;
  seed: number;
}
