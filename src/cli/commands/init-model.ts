import { run as recipe } from '../../recipes/init-model.ts';

/** `sharp init-model`: a random-init model in Hugging Face layout. Flags: src/cli/main.ts; the recipe: src/recipes/init-model.ts. */
export async function run(opts: Record<string, unknown>): Promise<void> {
  await recipe(opts);
}
