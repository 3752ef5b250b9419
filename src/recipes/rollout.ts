/**
 * `sharp rollout --config X --n N --out FILE`: runs the agents on N episodes of the
 * configured data (data.source) x rollout.groupSize trajectories and writes the trajectories as JSONL
 * (atomically). The policy is the checkpoint at model.path (default), or the scripted expert / the
 * random garbage policy (for data and robustness checks without a model).
 * Flags: src/recipes/commands.ts.
 */
import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Config } from '../config/schema.ts';
import type { Episode } from '../data/episode.ts';
import { exactMatch, maxOverGroundTruths } from '../data/answers/squad.ts';
import { LmPolicy } from '../rollout/lm-policy.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { Rng } from '../random/rng.ts';
import { rollout } from '../rollout/engine.ts';
import { writeTrajectories } from '../rollout/jsonl.ts';
import type { Policy } from '../rollout/policy.ts';
import { expertPolicy } from '../rollout/scripted/expert.ts';
import { garbagePolicy } from '../rollout/scripted/garbage.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import { UserError } from '../errors.ts';
import { claimOutFile, recordOutFile } from '../fs/output-guard.ts';
import { firstTrainEpisodes } from './stages/train-data.ts';
import { checkPositions } from './stages/positions.ts';
import { MAX_SYNTHETIC_EPISODES } from '../config/sections/data.ts';
import { createProgress } from '../run/progress.ts';
import type { Trajectory } from '../rollout/types.ts';
import type { RolloutFlags } from './commands.ts';
import { configFrom, startTools, withRun } from './stages/run-setup.ts';

async function lmPolicy(cfg: Config): Promise<{ policy: Policy; dispose: () => void }> {
  const dir = cfg.model.path;
  const [model, tokenizer] = await Promise.all([CausalLM.load(dir), Tokenizer.load(dir)]);
  const r = cfg.rollout;
  const policy = new LmPolicy(model, tokenizer, {
    temperature: r.temperature,
    topK: r.topK,
    topP: r.topP,
    maxContext: r.maxContext,
    rng: new Rng(cfg.run.seed),
  });
  return { policy, dispose: () => model.dispose() };
}

/** Episodes per engine run: a long rollout reports progress after each (and the decoding batch stays full). */
const CHUNK_EPISODES = 32;

/**
 * The rollout of `episodes`, CHUNK_EPISODES at a time with a progress line or bar on stderr when there is more than one
 * chunk.
 */
async function inChunks(
  policy: Policy,
  episodes: readonly Episode[],
  cfg: Config,
): Promise<{ trajectories: Trajectory[]; stats: { steps: number } }> {
  const progress =
    episodes.length > CHUNK_EPISODES
      ? createProgress({ total: episodes.length, done: 0, label: 'rollout' })
      : undefined;
  const trajectories: Trajectory[] = [];
  let steps = 0;
  try {
    for (let i = 0; i < episodes.length; i += CHUNK_EPISODES) {
      const chunk = episodes.slice(i, i + CHUNK_EPISODES);
      const r = await rollout(policy, chunk, { cfg: cfg.rollout });
      for (const t of r.trajectories) trajectories.push(t);
      steps += r.stats.steps;
      progress?.tick(chunk.length);
    }
  } finally {
    progress?.stop();
  }
  return { trajectories, stats: { steps } };
}

export async function run(opts: RolloutFlags): Promise<void> {
  const { n, policy: policyName } = opts;
  if (n < 1 || n > MAX_SYNTHETIC_EPISODES)
    throw new UserError(`rollout: --n expects an integer in 1..${MAX_SYNTHETIC_EPISODES}, got '${n}'`);
  const cfg = configFrom(opts);
  if (policyName === 'lm') await checkPositions(cfg, 'rollout');
  const inputs = [
    { path: cfg.model.path, what: 'model.path' },
    ...(cfg.data.path !== '' ? [{ path: cfg.data.path, what: 'data.path' }] : []),
  ];
  await startTools(cfg);
  const file = claimOutFile(opts.out, { command: 'rollout', flag: 'rollout: --out', force: opts.force, inputs });
  const episodes = firstTrainEpisodes(cfg.data, n, 'rollout');
  if (policyName === 'lm' && !existsSync(resolve(cfg.model.path, 'config.json'))) {
    throw new UserError(
      `rollout: no checkpoint at model.path '${cfg.model.path}' (config.json missing); run sharp init-model or ` +
        `use --policy expert`,
    );
  }
  await withRun({ cfg, backendFlag: opts.backend, tensors: policyName === 'lm' }, async () => {
    let dispose = (): void => {};
    let policy: Policy;
    switch (policyName) {
      case 'lm':
        ({ policy, dispose } = await lmPolicy(cfg));
        break;
      case 'expert':
        policy = expertPolicy();
        break;
      case 'random':
        policy = garbagePolicy(cfg.run.seed);
        break;
    }
    const t0 = performance.now();
    try {
      const { trajectories, stats } = await inChunks(policy, episodes, cfg);
      const seconds = (performance.now() - t0) / 1000;
      writeTrajectories(file, trajectories);
      recordOutFile(file, 'rollout');
      const byId = new Map(episodes.map((e) => [e.id, e]));
      const correct = trajectories.filter(
        (t) =>
          t.finalAnswer !== null &&
          maxOverGroundTruths(exactMatch, t.finalAnswer, byId.get(t.episodeId)?.answers ?? []) === 1,
      ).length;
      const tokens = trajectories.reduce((s, t) => s + t.messages.reduce((a, m) => a + m.tokenIds.length, 0), 0);
      process.stdout.write(
        `rollout: ${trajectories.length} trajectories (${episodes.length} episodes x ${cfg.rollout.groupSize}) in ` +
          `${seconds.toFixed(1)} s, ${stats.steps} decoding steps, ${tokens} generated tokens, EM ` +
          `${(correct / Math.max(1, trajectories.length)).toFixed(3)}; wrote ${file}\n`,
      );
    } finally {
      dispose();
    }
  });
}
