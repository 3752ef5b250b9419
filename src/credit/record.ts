import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import type { Episode } from '../data/episode.ts';
import { writeFileAtomic } from '../fs/atomic.ts';
import { MAX_TEXT_BYTES, readRegularFile } from '../fs/read-file.ts';
import type { AgentRecord, Role, Trajectory } from '../rollout/types.ts';
import { coalitionSize, fullCoalition, hasWorker, maskedDelegations } from './coalitions.ts';
import type { CreditConfig } from './config.ts';
import type { CreditedTrajectory } from './credited.ts';
import type { PreferencePair } from './first-error.ts';
import type { GroupPlan } from './plan.ts';
import type { AgentCredit } from './reward.ts';
import type { OutcomeFn } from './outcome.ts';
import { successFunction } from './success.ts';

/**
 * What `sharp view` reads: a bounded sample of each step's trajectories with their credit (SHARP's
 * per-agent split, the counterfactual coalitions v(S) with the answers the replays gave, and, when
 * on, the message-level shares and the first error with its preference pair of "Who Gets the Reward
 * & Who Gets the Blame?"). One file per step (or eval batch) under `<run>/trajectories/`, written
 * atomically so a killed run leaves only whole files; gzipped past GZIP_ABOVE bytes.
 */

const RECORD_DIR = 'trajectories';
export const RECORD_VERSION = 1;
/** JSON larger than this is stored gzipped (`.json.gz`). */
export const GZIP_ABOVE = 256 * 1024;

export interface CoalitionRecord {
  /** Bitmask: bit m set = worker m (delegation m) reports. */
  coalition: number;
  /** Delegations whose reports were kept, and those replaced by the placeholder. */
  members: number[];
  masked: number[];
  value: number;
  /**
   * Final answers of the replays behind v(S) (v(N) included; the recorded answer only when nothing was replayed), and
   * their success.
   */
  answers: { answer: string | null; success: number }[];
}

export interface MessageRecord {
  index: number;
  agent: number;
  role: Role;
  chatRole: string;
  text: string;
  finishReason?: string;
  toolCalls: { name: string; args: string; valid: boolean; error?: string; result?: string; workerAgent?: number }[];
  /** Message-level share r_t and the judge's label (credit.messageLevel). */
  share?: { label: number; reward: number };
}

export interface TrajectoryRecord {
  id: string;
  sample: number;
  finalAnswer: string | null;
  /** R(tau), the recorded outcome (the broadcast reward). */
  success: number;
  /** Mean |v_r(N) - R(tau)| over the full coalition's replays (absent in records written before). */
  noise?: number;
  /** Workers K. */
  k: number;
  agents: AgentRecord[];
  messages: MessageRecord[];
  credits: AgentCredit[];
  /** LOO Delta per delegation. */
  deltas: number[];
  phi?: number[];
  efficiencyResidual?: number;
  coalitions: CoalitionRecord[];
  firstError?: { index: number | null; agent: number | null; role: Role | null; judgeCalls: number };
  /**
   * Counterfactual repair and the oracle: per delegation, the reference report (gold sub-answer) beside the recorded
   * one.
   */
  references?: {
    delegation: number;
    reference: string | null;
    report: string | null;
    right: boolean | null;
    goldSubtask: string | null;
    delegationWrong: boolean;
  }[];
  /** Counterfactual repair: v(N) - v(N with delegation d's subtask repaired), per delegation the judge found wrong. */
  plannerRepairs?: [number, number][];
  /**
   * credit.value likelihood: coalition values are v_lik(S), the mean log-probability per token of the gold answer
   * (nats, scored, not replayed); `readThrough` is the sequential form's v_lik after j reports were read.
   */
  likelihood?: { readThrough?: number[] };
  pair?: { messageIndex: number; chosen: string; rejected: string; attempts: number };
}

export interface GroupRecord {
  episodeId: string;
  question: string;
  answers: string[];
  trajectories: TrajectoryRecord[];
}

export interface StepRecord {
  version: number;
  kind: 'train' | 'eval';
  /** RL step (train) or eval batch number, 1-based. */
  step: number;
  credit: {
    method: string;
    replayMode: string;
    counterfactual?: string;
    replays: number;
    success: string;
    placeholder: string;
    weights: CreditConfig['weights'];
  };
  /** Groups of the step in all, and how many are recorded here. */
  groupsTotal: number;
  groups: GroupRecord[];
}

const replayKey = (trajId: string, masked: readonly number[]): string =>
  `${trajId}|${[...masked].sort((a, b) => a - b).join(',')}`;

/**
 * The final answers of a group's replays, by trajectory and masked delegations: the credit stages
 * keep only the averaged v(S), the viewer shows the answers behind it. Replays of a repaired
 * delegation subtask (no coalition) are not listed.
 */
export class ReplayAnswers {
  private readonly answers = new Map<string, (string | null)[]>();
  private readonly scores = new Map<string, number[]>();
  /** Whether a user reward scored the replays (and the recorded trajectory's value is that reward). */
  readonly scored: boolean;

  /**
   * `outcome`: the user's reward (outcome.ts), which scores a replay whole, so each replay's value
   * is kept here while its trajectory is at hand; without it the viewer scores answers by credit.success.
   */
  constructor(plan: GroupPlan, replayed: readonly Trajectory[], outcome?: OutcomeFn) {
    this.scored = outcome !== undefined;
    plan.items.forEach((it, i) => {
      if (it.substitutes?.some((s) => s.subtask !== undefined)) return;
      const key = replayKey(it.traj.id, it.masked);
      const list = this.answers.get(key) ?? [];
      list.push(replayed[i]?.finalAnswer ?? null);
      this.answers.set(key, list);
      const r = replayed[i];
      if (outcome && r) this.scores.set(key, [...(this.scores.get(key) ?? []), outcome(r, plan.episode)]);
    });
  }

  answersOf(trajId: string, masked: readonly number[]): (string | null)[] {
    return this.answers.get(replayKey(trajId, masked)) ?? [];
  }

  /** The outcome reward of each replay of answersOf, when a user reward scored them. */
  scoresOf(trajId: string, masked: readonly number[]): number[] | undefined {
    return this.scores.get(replayKey(trajId, masked));
  }
}

/** The credit settings a reader needs to interpret the numbers. */
export function creditHeader(cfg: CreditConfig): StepRecord['credit'] {
  return {
    method: cfg.method,
    replayMode: cfg.replayMode,
    counterfactual: cfg.counterfactual,
    replays: cfg.replays,
    success: cfg.success,
    placeholder: cfg.placeholder,
    weights: { ...cfg.weights },
  };
}

/** One group (the trajectories of one question) with everything the credit stages found about it. */
export function groupRecord(
  episode: Episode,
  credited: readonly CreditedTrajectory[],
  replays: ReplayAnswers,
  cfg: CreditConfig,
  pairs: readonly PreferencePair[],
): GroupRecord {
  const success = successFunction(cfg.success, { f1Threshold: cfg.f1Threshold });
  const score = (answer: string | null) => ({ answer, success: success(answer, episode.answers) });
  return {
    episodeId: episode.id,
    question: episode.question,
    answers: [...episode.answers],
    trajectories: credited.map((ct) => {
      const traj = ct.trajectory;
      const tc = ct.credit;
      const shares = new Map((ct.messages ?? []).map((m) => [m.messageIndex, { label: m.label, reward: m.reward }]));
      const full = fullCoalition(tc.k);
      const values: [number, number][] = tc.values.length > 0 || tc.k > 0 ? tc.values : [[full, tc.success]];
      const coalitions: CoalitionRecord[] = [...values]
        .sort((a, b) => coalitionSize(b[0]) - coalitionSize(a[0]) || b[0] - a[0])
        .map(([s, value]) => {
          const masked = maskedDelegations(s, tc.k);
          // v(N) is replayed like every coalition; only a trajectory that replayed nothing shows its recorded answer.
          const replayed = replays.answersOf(traj.id, masked);
          // Under a user reward a replay's value is its reward (scoresOf), the number v(S) averages.
          const scores = replays.scoresOf(traj.id, masked);
          const answers =
            s === full && replayed.length === 0
              ? [replays.scored ? { answer: traj.finalAnswer, success: tc.success } : score(traj.finalAnswer)]
              : replayed.map((a, r) => (scores ? { answer: a, success: scores[r] as number } : score(a)));
          return {
            coalition: s,
            members: Array.from({ length: tc.k }, (_, m) => m).filter((m) => hasWorker(s, m)),
            masked,
            value,
            answers,
          };
        });
      const rec: TrajectoryRecord = {
        id: traj.id,
        sample: traj.sample,
        finalAnswer: traj.finalAnswer,
        success: tc.success,
        noise: tc.noise,
        k: tc.k,
        agents: traj.agents.map((a) => ({ ...a })),
        messages: traj.messages.map((m) => {
          const out: MessageRecord = {
            index: m.index,
            agent: m.agent,
            role: m.role,
            chatRole: m.chatRole,
            text: m.text,
            toolCalls: m.toolCalls.map((c) => {
              const call: MessageRecord['toolCalls'][number] = { name: c.name, args: c.args, valid: c.valid };
              if (c.error !== undefined) call.error = c.error;
              if (c.result !== undefined) call.result = c.result;
              if (c.workerAgent !== undefined) call.workerAgent = c.workerAgent;
              return call;
            }),
          };
          if (m.finishReason) out.finishReason = m.finishReason;
          const share = shares.get(m.index);
          if (share) out.share = share;
          return out;
        }),
        credits: ct.agents,
        deltas: [...tc.deltas],
        coalitions,
      };
      if (tc.phi) rec.phi = [...tc.phi];
      if (tc.efficiencyResidual !== undefined) rec.efficiencyResidual = tc.efficiencyResidual;
      if (tc.references)
        rec.references = tc.references.map((r) => ({
          delegation: r.delegation,
          reference: r.reference,
          report: r.report,
          right: r.reportRight,
          goldSubtask: r.goldSubtask,
          delegationWrong: r.delegationLabel === -1,
        }));
      if (tc.plannerRepairs) rec.plannerRepairs = tc.plannerRepairs.map(([d, x]) => [d, x]);
      if (cfg.value === 'likelihood' && tc.k > 0)
        rec.likelihood = tc.readThrough ? { readThrough: [...tc.readThrough] } : {};
      if (tc.firstError)
        rec.firstError = {
          index: tc.firstError.index,
          agent: tc.firstError.agent,
          role: tc.firstError.role,
          judgeCalls: tc.firstError.judgeCalls,
        };
      const pair = pairs.find((p) => p.metadata.trajectoryId === traj.id);
      if (pair)
        rec.pair = {
          messageIndex: pair.metadata.messageIndex,
          chosen: pair.chosen,
          rejected: pair.rejected,
          attempts: pair.metadata.attempts,
        };
      return rec;
    }),
  };
}

/** A group that shows something: a harmful worker call (Delta < 0) first, then a failed trajectory, then the rest. */
function interest(g: GroupRecord): number {
  if (g.trajectories.some((t) => t.deltas.some((d) => d < 0))) return 0;
  if (g.trajectories.some((t) => t.success === 0)) return 1;
  return 2;
}

/**
 * The `limit` groups kept of a step: the most telling ones (stable order otherwise), chosen without
 * any random draw so that recording never changes a run.
 */
export function sampleGroups(groups: readonly GroupRecord[], limit: number): GroupRecord[] {
  return groups
    .map((g, i) => ({ g, i, r: interest(g) }))
    .sort((a, b) => a.r - b.r || a.i - b.i)
    .slice(0, Math.max(0, limit))
    .sort((a, b) => a.i - b.i)
    .map((x) => x.g);
}

const stepName = (kind: StepRecord['kind'], step: number): string =>
  `${kind === 'train' ? 'step' : 'eval'}-${String(step).padStart(6, '0')}`;

/** Writes one step's record atomically; returns the file written. */
export function writeStepRecord(runDir: string, rec: StepRecord): string {
  const dir = join(runDir, RECORD_DIR);
  mkdirSync(dir, { recursive: true });
  const json = JSON.stringify(rec);
  const base = join(dir, stepName(rec.kind, rec.step));
  const big = Buffer.byteLength(json, 'utf8') > GZIP_ABOVE;
  const file = big ? `${base}.json.gz` : `${base}.json`;
  writeFileAtomic(file, big ? gzipSync(json) : json);
  return file;
}

const RECORD_NAME = /^(step|eval)-\d{6}\.json(\.gz)?$/;

/** Record files of a run folder, in step order. */
export function listStepRecords(runDir: string): string[] {
  const dir = join(runDir, RECORD_DIR);
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => RECORD_NAME.test(f))
    .sort()
    .map((f) => join(dir, f));
}

/** listStepRecords without blocking the event loop (the viewer's server). */
export async function listStepRecordsAsync(runDir: string): Promise<string[]> {
  const dir = join(runDir, RECORD_DIR);
  let names: string[];
  try {
    names = await readdir(dir);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return names
    .filter((f) => RECORD_NAME.test(f))
    .sort()
    .map((f) => join(dir, f));
}

/** The next eval batch number in a run folder (a resumed eval appends after the files already there). */
export function nextEvalStep(runDir: string): number {
  return listStepRecords(runDir).filter((f) => /eval-\d{6}/.test(f)).length + 1;
}

export function readStepRecord(file: string): StepRecord {
  const raw = readRegularFile(file, MAX_TEXT_BYTES);
  return parseStepRecord(file.endsWith('.gz') ? gunzipSync(raw).toString('utf8') : raw.toString('utf8'), file);
}

/** A record file's JSON text (decompressed), its version checked; `file` names it in errors. */
export function parseStepRecord(text: string, file: string): StepRecord {
  const rec = JSON.parse(text) as StepRecord;
  if (rec.version !== RECORD_VERSION)
    throw new Error(`${file}: record version ${String(rec.version)} (this sharp reads ${RECORD_VERSION})`);
  return rec;
}
