import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { creditSection } from '../../src/config/sections/credit.ts';
import { creditAndRecord, gameRunner, makeTrajectory } from '../credit-fixtures.ts';
import { RECORD_VERSION, creditHeader, writeStepRecord } from '../../src/credit/record.ts';
import type { Episode } from '../../src/data/episode.ts';
import { createJudge } from '../../src/credit/judges/index.ts';
import { getProtocol } from '../../src/rollout/protocol/index.ts';
import { sharp } from '../cli-helpers.ts';

/**
 * Run folders for the viewer tests, made by the real programs: a short `sharp train` (2 RL steps of
 * the shipped starting policy, Shapley credit with real replays), a `sharp eval --credit` of the
 * scripted expert on synthetic questions (real helpful workers: masking one makes the answer wrong),
 * and a folder whose trajectories carry XSS payloads in every model string, with credit computed by
 * the credit module over a known game in which worker 1 is harmful.
 */
const REPO = resolve(import.meta.dirname, '..', '..');

async function ok(root: string, args: string[]): Promise<void> {
  const r = await sharp(root, args);
  if (r.code !== 0) throw new Error(`sharp ${args.join(' ')} exited ${String(r.code)}: ${r.stderr.slice(-2000)}`);
}

/**
 * The role prompts models/sharp-tiny-sft was trained with (configs/quickstart.yaml): with others it rarely delegates.
 */
const ROLE_PROMPTS = [
  "plannerPrompt: 'You are the planner. Delegate one single-hop subtask at a time, then give the final answer.'",
  "workerPrompt: 'You are a worker. Search, then give a short final answer.'",
  "singlePrompt: 'You answer alone. Search for each hop, then give a short final answer.'",
].join(', ');

export async function trainRun(root: string): Promise<string> {
  const cfg = join(root, 'view-train.yaml');
  writeFileSync(
    cfg,
    [
      `run: {name: view, dir: ${join(root, 'runs')}, seed: 0, backend: wasm}`,
      `model: {path: ${join(REPO, 'models/sharp-tiny-sft')}}`,
      'data: {source: synthetic, synthetic: {seed: 1, train: 16, heldOut: 4, minHops: 2, maxHops: 2, worlds: fresh, ' +
        'namePool: 400, world: {people: 14, companies: 6, cities: 6, countries: 3}}}',
      `rollout: {groupSize: 2, maxNewTokens: 48, maxContext: 768, search: {snippet: 1}, ${ROLE_PROMPTS}}`,
      'credit: {method: shapley, replayMode: final, recordGroups: 2}',
      'eval: {temperature: 1, heldOutEvery: 1}',
      'train: {steps: 2, batchQuestions: 2, lr: 0.0002, microBatch: 16, checkpointEvery: 10, sft: {steps: 0}}',
      '',
    ].join('\n'),
  );
  await ok(root, ['train', '--config', cfg]);
  const runs = join(root, 'runs');
  const dirs = readdirSync(runs);
  if (dirs.length !== 1) throw new Error(`expected one run folder in ${runs}, got ${dirs.join(', ')}`);
  return join(runs, dirs[0] as string);
}

/** `sharp ablate` with two methods, one seed and one RL step each (the comparison table and plot). */
export async function ablationRun(root: string): Promise<string> {
  const out = join(root, 'ablation');
  const cfg = join(root, 'view-ablate.yaml');
  writeFileSync(
    cfg,
    [
      `run: {name: abl, dir: ${join(root, 'runs-abl')}, seed: 0, backend: wasm}`,
      `model: {path: ${join(REPO, 'models/sharp-tiny-sft')}}`,
      'data: {source: synthetic, synthetic: {seed: 1, train: 8, heldOut: 3, minHops: 2, maxHops: 2, worlds: fresh, ' +
        'namePool: 400, world: {people: 14, companies: 6, cities: 6, countries: 3}}}',
      'rollout: {groupSize: 2, maxNewTokens: 32, maxContext: 768, search: {snippet: 1}}',
      'eval: {temperature: 1}',
      'train: {steps: 1, batchQuestions: 1, lr: 0.0002, microBatch: 16, checkpointEvery: 10, sft: {steps: 0}}',
      `ablation: {methods: [broadcast, loo], seeds: [0], out: ${out}}`,
      '',
    ].join('\n'),
  );
  await ok(root, ['ablate', '--config', cfg]);
  return out;
}

export async function evalRun(root: string): Promise<string> {
  const data = join(root, 'synth.jsonl');
  await ok(root, ['data', 'synth', '--n', '4', '--seed', '3', '--min-hops', '2', '--max-hops', '3', '--out', data]);
  const out = join(root, 'eval-expert');
  await ok(root, [
    'eval',
    '--bench',
    'musique',
    '--data',
    data,
    '--policy',
    'expert',
    '--credit',
    '--set',
    'credit.recordGroups=4',
    '--out',
    out,
  ]);
  return out;
}

export const XSS = {
  question: 'Who founded <img src=x onerror="window.__xss=1">Acme?',
  subtask: '<script>window.__xss=2</script>Who founded Acme?',
  report: '<img src=x onerror="window.__xss=3">Zhobrel',
  final: '</script><script>window.__xss=4</script>yes',
};

export async function xssRun(root: string): Promise<string> {
  const dir = join(root, 'xss-run');
  mkdirSync(dir, { recursive: true });
  const episode: Episode = { id: 'xss', question: XSS.question, answers: ['yes'], paragraphs: [] };
  // Worker 1 misleads: the team is right iff worker 0 reports and worker 1 does not.
  const game = (s: number): boolean => (s & 1) === 1 && (s & 2) === 0;
  const bad = makeTrajectory({
    id: 'xss/0',
    episodeId: 'xss',
    workers: [
      { subtask: XSS.subtask, answer: 'Ada' },
      { subtask: 'Where was Ada born?', answer: XSS.report },
    ],
    finalAnswer: XSS.final,
  });
  const good = makeTrajectory({
    id: 'xss/1',
    episodeId: 'xss',
    workers: [{ subtask: 'Who founded Acme?', answer: 'Ada' }],
    finalAnswer: 'yes',
  });
  good.sample = 1;
  const cfg = creditSection.parse({ method: 'loo' });
  const { record } = await creditAndRecord([bad, good], episode, gameRunner(game), cfg);
  writeStepRecord(dir, {
    version: RECORD_VERSION,
    kind: 'train',
    step: 1,
    credit: creditHeader(cfg),
    groupsTotal: 1,
    groups: [record],
  });
  return dir;
}

/**
 * Message-level credit and the failure path on a failed trajectory (rule judge over the gold
 * decomposition): worker 0 reports 'Bob' for 'Who founded Acme?' (gold 'Ada Byron'), so its report
 * is the first error and the resampled '<answer>Ada Byron</answer>' the preferred alternative.
 */
export const BLAME = { chosen: '<answer>Ada Byron</answer>', rejected: '<answer>Bob</answer>' };

export async function blameRun(root: string): Promise<string> {
  const dir = join(root, 'blame-run');
  mkdirSync(dir, { recursive: true });
  const episode: Episode = {
    id: 'acme',
    question: 'Where was the founder of Acme born?',
    answers: ['Lima'],
    paragraphs: [],
    decomposition: [
      { id: 1, question: 'Who founded Acme?', answer: 'Ada Byron', paragraphSupportIdx: 0 },
      { id: 2, question: 'Where was #1 born?', answer: 'Lima', paragraphSupportIdx: 1 },
    ],
  };
  const traj = makeTrajectory({
    id: 'acme/0',
    episodeId: 'acme',
    workers: [
      { subtask: 'Who founded Acme?', answer: 'Bob' },
      { subtask: 'Where was Bob born?', answer: 'Paris' },
    ],
    finalAnswer: 'Paris',
  });
  const judge = createJudge({ judge: 'rule', hopMatchF1: 0.5, judgeMargin: 0 }, { protocol: getProtocol('tags') });
  const cfg = creditSection.parse({ method: 'loo', messageLevel: true, failurePairs: true });
  const { record } = await creditAndRecord(
    [traj],
    episode,
    gameRunner(() => false),
    cfg,
    {
      judge,
      contextOf: (ctx, i) =>
        ctx.traj.messages
          .filter((m) => m.agent === ctx.traj.messages[i].agent && m.index < i)
          .map((m) => ({ role: m.chatRole, content: m.text })),
      resample: (reqs) => Promise.resolve(reqs.map(() => BLAME.chosen)),
    },
  );
  writeStepRecord(dir, {
    version: RECORD_VERSION,
    kind: 'train',
    step: 1,
    credit: creditHeader(cfg),
    groupsTotal: 1,
    groups: [record],
  });
  return dir;
}
