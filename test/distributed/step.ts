import { join } from 'node:path';
import { loadConfig } from '../../src/config/load.ts';
import { configSchema, type Config } from '../../src/config/schema.ts';
import type { Episode } from '../../src/data/episode.ts';
import { generateSynth } from '../../src/data/synth/generate.ts';
import { toEpisode } from '../../src/data/synth/record.ts';

/**
 * One small distributed step for the tests and the bench: models/sharp-tiny-sft on episodes drawn
 * like those it was trained on, with its role prompts and search snippets (configs/quickstart.yaml),
 * so its planners delegate and the step has counterfactual replays (with other prompts it rarely does).
 */
const REPO = join(import.meta.dirname, '../..');
export const MODEL = join(REPO, 'models/sharp-tiny-sft');
const quickstart = loadConfig({ file: join(REPO, 'configs/quickstart.yaml'), sets: [] });

/** A step of `groupSize` trajectories per question with LOO credit; `distributed` as given. */
export function stepConfig(groupSize: number, distributed: Partial<Config['rollout']['distributed']> = {}): Config {
  const q = quickstart.rollout;
  return configSchema.parse({
    // Shorter turns than the quickstart's (24 tokens, 512 context): still long enough to delegate.
    rollout: {
      groupSize,
      maxNewTokens: 24,
      maxContext: 512,
      maxPlannerTurns: 3,
      maxDelegations: 2,
      maxWorkerTurns: 2,
      search: q.search,
      plannerPrompt: q.plannerPrompt,
      workerPrompt: q.workerPrompt,
      singlePrompt: q.singlePrompt,
      distributed,
    },
    credit: { method: 'loo' },
  });
}

export function stepEpisodes(n: number, seed = 5): Episode[] {
  const s = quickstart.data.synthetic;
  return generateSynth({
    seed,
    n,
    minHops: 2,
    maxHops: 2,
    worlds: 'fresh',
    namePool: s.namePool,
    world: s.world,
    names: 'train',
  }).map(toEpisode);
}
