/**
 * SFT data of the quickstart: the scripted expert solves the
 * training episodes through the real engine, protocol and tools (so the transcripts show exactly the
 * prompts, tool syntax and tool results the LM will see), and every agent conversation of a solved
 * trajectory becomes one transcript. Held-out episodes are never used here.
 */
import { existsSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Config } from '../../config/schema.ts';
import type { Episode } from '../../data/episode.ts';
import { writeFileAtomic } from '../../fs/atomic.ts';
import { rollout } from '../../rollout/engine.ts';
import { expertPolicy } from '../../rollout/scripted/expert.ts';
import { toTranscripts, type Transcript } from '../../rollout/transcripts.ts';
import type { Role } from '../../rollout/types.ts';
import { readTranscripts } from '../../train/supervised/transcripts-jsonl.ts';
import { successFunction } from '../../credit/success.ts';
import { UserError } from '../../errors.ts';

/** Episodes per engine run: bounds memory for large inputs. */
const CHUNK = 500;

export interface ExpertData {
  transcripts: Transcript[];
  solved: number;
  episodes: number;
}

type ExpertSettings = Config['train']['sft']['expert'];

/** Whether the settings make the expert err at all. */
function expertErrs(e: ExpertSettings): boolean {
  return e.noSearch > 0 || e.distractor > 0 || e.redundant > 0 || e.irrelevant > 0 || e.trustPlanted > 0;
}

/**
 * The transcript with loss weight `w` on the turns that must copy a name out of a tool result
 * (train.sft.expert.copyWeight): the root agent's calls after its first (a planner's delegation or
 * a lone agent's search carries an earlier result's answer into the next hop), and every answer of
 * an agent that delegates nothing (a worker or a lone agent, which reads it out of a search result;
 * a delegating planner's final answer repeats a report, which a small model learns early). Unlike
 * the hop-1 call, which repeats words of the question right after the same words, these turns have
 * no matching context to copy from, and they are what a small model learns last.
 */
export function weighCopyTurns(t: Transcript, role: Role, w: number): Transcript {
  if (w === 1) return t;
  const delegates = t.messages.some((m) => m.train && m.content.startsWith('<delegate>'));
  const root = role === 'planner';
  let calls = 0;
  return {
    messages: t.messages.map((m) => {
      if (!m.train) return m;
      const isCall = m.content.startsWith('<delegate>') || m.content.startsWith('<search>');
      if (isCall) calls++;
      const copies = (root && isCall && calls >= 2) || (!delegates && m.content.startsWith('<answer>'));
      return copies ? { ...m, weight: w } : m;
    }),
  };
}

export async function expertTranscripts(
  episodes: readonly Episode[],
  cfg: Pick<Config, 'rollout' | 'credit'> & { expert?: ExpertSettings },
): Promise<ExpertData> {
  const bad = episodes.find((e) => !e.decomposition || e.decomposition.length === 0);
  if (bad)
    throw new Error(
      `expert transcripts: episode ${bad.id} has no question_decomposition (the scripted expert follows it)`,
    );
  const success = successFunction(cfg.credit.success, { f1Threshold: cfg.credit.f1Threshold });
  const e = cfg.expert;
  const failures =
    e && expertErrs(e)
      ? {
          noSearch: e.noSearch,
          distractor: e.distractor,
          redundant: e.redundant,
          irrelevant: e.irrelevant,
          trustPlanted: e.trustPlanted,
          seed: e.seed,
        }
      : undefined;
  const transcripts: Transcript[] = [];
  let solved = 0;
  let runs = 0;
  for (const agents of e?.agents ?? (['multi'] as const)) {
    for (let i = 0; i < episodes.length; i += CHUNK) {
      const chunk = episodes.slice(i, i + CHUNK);
      const { trajectories } = await rollout(
        expertPolicy({ failures, agents, comparisons: e?.comparisons ?? 'planner' }),
        chunk,
        { cfg: cfg.rollout, groupSize: 1, agents },
      );
      trajectories.forEach((t, j) => {
        runs++;
        const ok = success(t.finalAnswer, chunk[j]?.answers ?? []) === 1;
        if (ok) solved++;
        // A perfect expert fails only where search misses: such trajectories teach nothing. An
        // erring expert's failures are the point: the SFT policy must inherit its mistakes.
        if (ok || failures)
          transcripts.push(
            ...toTranscripts(t).map((tr, k) => weighCopyTurns(tr, t.agents[k]?.role ?? 'worker', e?.copyWeight ?? 1)),
          );
      });
    }
  }
  return { transcripts, solved, episodes: runs };
}

/** Writes transcripts as JSONL (atomically), the format `sharp sft` and `sharp data expert` share. */
export function writeTranscripts(file: string, transcripts: readonly Transcript[]): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileAtomic(file, transcripts.length > 0 ? `${transcripts.map((t) => JSON.stringify(t)).join('\n')}\n` : '');
}

/**
 * The SFT transcripts at `file`, or, when the file is missing, the expert's transcripts of `episodes`
 * written there first (so later runs and `sharp sft` reuse them).
 */
export async function ensureTranscripts(
  file: string,
  episodes: readonly Episode[],
  cfg: Pick<Config, 'rollout' | 'credit'> & { expert?: ExpertSettings },
): Promise<{ transcripts: Transcript[]; generated?: ExpertData; stale?: boolean }> {
  if (existsSync(file)) {
    let transcripts: Transcript[];
    try {
      transcripts = readTranscripts(file);
    } catch (err) {
      throw new UserError(`train.sft.data: ${(err as Error).message.split('\n')[0]}`);
    }
    return { transcripts, stale: !promptsMatch(transcripts, cfg.rollout) };
  }
  const generated = await expertTranscripts(episodes, cfg);
  if (generated.transcripts.length === 0) {
    throw new UserError(
      `expert transcripts: the scripted expert solved none of ${episodes.length} episodes (are ` +
        `rollout.maxPlannerTurns / maxDelegations / maxWorkerTurns / maxContext large enough for the hops?)`,
    );
  }
  writeTranscripts(file, generated.transcripts);
  return { transcripts: generated.transcripts, generated };
}

/**
 * Whether existing transcripts were written under the current role prompts: a file left by a run
 * with other prompts would teach the model a system prompt it never sees at rollout time.
 */
function promptsMatch(
  transcripts: readonly Transcript[],
  r: Pick<Config['rollout'], 'plannerPrompt' | 'workerPrompt' | 'singlePrompt'>,
): boolean {
  const systems = new Set(transcripts.map((t) => (t.messages[0]?.role === 'system' ? t.messages[0].content : '')));
  return [...systems].every(
    (s) => s.startsWith(r.plannerPrompt) || s.startsWith(r.workerPrompt) || s.startsWith(r.singlePrompt),
  );
}
