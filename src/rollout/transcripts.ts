import type { ChatRole, Trajectory } from './types.ts';

/**
 * SFT transcripts from trajectories (the expert's transcripts are the SFT data of the
 * trainer issue): one conversation per agent, exactly the messages that agent saw and wrote, with a
 * per-message loss mask: `train` is true on the agent's own (assistant) messages only.
 */
interface TranscriptMessage {
  role: ChatRole;
  content: string;
  train: boolean;
  /** Loss weight of a trained message in SFT (default 1): > 1 stresses turns that are hard to learn. */
  weight?: number;
}

export interface Transcript {
  messages: TranscriptMessage[];
}

export function toTranscripts(traj: Trajectory): Transcript[] {
  return traj.agents.map((a) => ({
    messages: traj.messages
      .filter((m) => m.agent === a.id)
      .map((m) => ({ role: m.chatRole, content: m.text, train: m.chatRole === 'assistant' })),
  }));
}
