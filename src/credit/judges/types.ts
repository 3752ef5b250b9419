import type { Episode } from '../../data/episode.ts';
import type { Trajectory } from '../../rollout/types.ts';
import type { Label } from '../message-shares.ts';

/**
 * Judges: small interface, two implementations (rule.ts with
 * gold sub-answers, llm.ts with a yes/no question to a model). The failure path and the message
 * shares only talk to this interface.
 */
export interface JudgeContext {
  traj: Trajectory;
  episode: Episode;
}

export interface Judge {
  readonly name: string;
  /**
   * True when the prefix messages[0..end] (inclusive) already contains an error. Must be monotone in
   * `end` (once failed, every longer prefix has failed): first-error.ts binary-searches on it.
   */
  prefixFailed(ctx: JudgeContext, end: number): Promise<boolean>;
  /** s in {-1, 0, +1} for generated messages, by message index; absent = not judged (it keeps its even share). */
  labelMessages(ctx: JudgeContext): Promise<Map<number, Label>>;
  /** Whether `text` would be an acceptable message at position `index` (after the same prefix). */
  acceptsAlternative(ctx: JudgeContext, index: number, text: string): Promise<boolean>;
}
