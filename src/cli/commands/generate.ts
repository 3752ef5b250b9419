import { run as recipe } from '../../recipes/generate.ts';

/** `sharp generate`: a continuation of a prompt by a checkpoint. Flags: src/cli/main.ts; the recipe: src/recipes/generate.ts. */
export async function run(opts: Record<string, unknown>): Promise<void> {
  await recipe(opts);
}
