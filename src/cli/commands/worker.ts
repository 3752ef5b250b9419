import { run as recipe } from '../../recipes/worker.ts';

/** `sharp worker --redis URL`: serves the rollout and replay jobs of distributed training runs. Flags: src/cli/main.ts; the recipe: src/recipes/worker.ts. */
export async function run(opts: Record<string, unknown>): Promise<void> {
  await recipe(opts);
}
