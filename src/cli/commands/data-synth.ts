import { run as recipe } from '../../recipes/data-synth.ts';

/** `sharp data synth`: synthetic multi-hop episodes in the MuSiQue format. Flags: src/cli/main.ts; the recipe: src/recipes/data-synth.ts. */
export async function run(opts: Record<string, unknown>): Promise<void> {
  await recipe(opts);
}
