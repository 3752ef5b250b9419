import { run as recipe } from '../../recipes/eval.ts';

/** `sharp eval`: a benchmark through the agents, official-format predictions and metrics. Flags: src/cli/main.ts; the recipe: src/recipes/eval.ts. */
export async function run(opts: Record<string, unknown>): Promise<void> {
  await recipe(opts);
}
