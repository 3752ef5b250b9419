import { configSchema } from '../../src/config/schema.ts';
import { generateSynth } from '../../src/data/synth/generate.ts';
import { toEpisode } from '../../src/data/synth/record.ts';
import { rollout, type RolloutConfig } from '../../src/rollout/engine.ts';
import type { Policy } from '../../src/rollout/policy.ts';
import { expertText } from '../../src/rollout/scripted/expert.ts';
import { createTinyLm, type TinyLm } from '../../test/tiny-lm.ts';
import type { Trajectory } from '../../src/rollout/types.ts';
import { closeCodeSandbox } from '../../src/tools/code.ts';
import type { BenchRow } from './types.ts';

/**
 * Rollout section of `npm run bench`: throughput of the multi-agent engine with the
 * real LmPolicy on a tiny random-init model (2 layers, d=128) at G=8, default rollout config.
 * Two workloads:
 * - `sampled`: the random model samples freely (garbage: most agents stop at their first message);
 * - `expert-forced`: the model is made to write the scripted expert's messages (forced token ids),
 *   so trajectories have the real multi-agent shape (planner, one worker per hop, tool calls).
 * CPU time is reported beside wall time: the cores here are shared.
 */
const G = 8;

function generatedTokens(trajs: readonly Trajectory[]): number {
  return trajs.reduce((s, t) => s + t.messages.reduce((a, m) => a + m.tokenIds.length, 0), 0);
}

async function measure(
  name: string,
  policy: Policy,
  cfg: RolloutConfig,
  episodes: ReturnType<typeof toEpisode>[],
): Promise<BenchRow[]> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  const { trajectories, stats } = await rollout(policy, episodes, { cfg, groupSize: G });
  const s = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(c0);
  const cpuS = (cpu.user + cpu.system) / 1e6;
  const tokens = generatedTokens(trajectories);
  const section = 'rollout';
  return [
    { section, metric: `${name}: trajectories/s (G=${G})`, value: trajectories.length / s, unit: 'traj/s' },
    { section, metric: `${name}: generated tokens/s`, value: tokens / s, unit: 'tok/s' },
    { section, metric: `${name}: generated tokens/s per CPU-s`, value: tokens / cpuS, unit: 'tok/cpu-s' },
    {
      section,
      metric: `${name}: messages per decoding step`,
      value: stats.requests / Math.max(1, stats.steps),
      unit: 'msg/step',
    },
  ];
}

export async function benchRollout(quick: boolean): Promise<BenchRow[]> {
  const cfg = configSchema.parse({}).rollout;
  const episodes = generateSynth({ seed: 5, n: quick ? 1 : 4 }).map(toEpisode);
  const lm: TinyLm = await createTinyLm({ seed: 1, layers: 2, hidden: 128 });
  try {
    const sampled = await measure('sampled', lm.policy({ seed: 1, maxContext: cfg.maxContext }), cfg, episodes);
    const base = lm.policy({ seed: 2, maxContext: 1 << 14 });
    const forced: Policy = {
      generate: (reqs) =>
        base.generate(
          reqs.map((r) => ({ ...r, forcedTokens: lm.tokenizer.encode(expertText(r), { addSpecialTokens: false }) })),
        ),
    };
    const expert = await measure(
      'expert-forced',
      forced,
      { ...cfg, maxContext: 1 << 14 },
      episodes.slice(0, quick ? 1 : 2),
    );
    return [...sampled, ...expert];
  } finally {
    await lm.dispose();
    await closeCodeSandbox();
  }
}
