import { run as recipe } from '../../recipes/export.ts';

/** `sharp export`: LoRA adapters out as a merged Hugging Face checkpoint or in PEFT's layout. Flags: src/cli/main.ts; the recipe: src/recipes/export.ts. */
export async function run(opts: Record<string, unknown>): Promise<void> {
  await recipe(opts);
}
