import type { Episode } from '../data/episode.ts';
import type { Trajectory } from '../rollout/types.ts';
import type { CreditConfig, PlannedReplay, RolloutConfig } from './units.ts';

/** The payloads of the two job kinds, one per generating stage (BullMQ job names 'rollout' and 'replay'). */
export type JobName = 'rollout' | 'replay';

export interface RolloutJobData {
  run: string;
  step: number;
  q: number;
  /** Folder of the policy version this job must use. */
  policy: string;
  episode: Episode;
  rollout: RolloutConfig;
  seed: number;
}

export interface ReplayJobData {
  policy: string;
  episode: Episode;
  traj: Trajectory;
  /** The replays the credit plan asks of this trajectory (masked delegations, replica, substitutes). */
  replays: PlannedReplay[];
  rollout: RolloutConfig;
  credit: CreditConfig;
  seed: number;
}
