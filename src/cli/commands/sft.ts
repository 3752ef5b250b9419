import { run as recipe } from '../../recipes/sft.ts';

/** `sharp sft`: supervised fine-tuning on transcripts. Flags: src/cli/main.ts; the recipe: src/recipes/sft.ts. */
export async function run(opts: Record<string, unknown>): Promise<void> {
  await recipe(opts);
}
