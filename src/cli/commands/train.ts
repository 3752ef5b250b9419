import { run as recipe } from '../../recipes/train.ts';

/** `sharp train`: SHARP-GRPO from config (data, model, SFT, RL, held-out accuracy). Flags: src/cli/main.ts; the recipe: src/recipes/train.ts. */
export async function run(opts: Record<string, unknown>): Promise<void> {
  await recipe(opts);
}
