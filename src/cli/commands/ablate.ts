import { run as recipe } from '../../recipes/ablate.ts';

/** `sharp ablate`: the SHARP ablation. Flags: src/cli/main.ts; the recipe: src/recipes/ablate-command.ts (the ablation itself: src/recipes/ablate.ts). */
export async function run(opts: Record<string, unknown>): Promise<void> {
  await recipe(opts);
}
