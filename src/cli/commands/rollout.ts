import { run as recipe } from '../../recipes/rollout.ts';

/** `sharp rollout`: trajectories of the configured data as JSONL. Flags: src/cli/main.ts; the recipe: src/recipes/rollout.ts. */
export async function run(opts: Record<string, unknown>): Promise<void> {
  await recipe(opts);
}
