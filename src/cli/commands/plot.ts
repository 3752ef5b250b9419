import { run as recipe } from '../../recipes/plot.ts';

/** `sharp plot`: the curves of a run as PNG. Flags: src/cli/main.ts; the recipe: src/recipes/plot.ts. */
export async function run(opts: Record<string, unknown>): Promise<void> {
  await recipe(opts);
}
