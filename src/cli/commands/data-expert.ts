import { run as recipe } from '../../recipes/data-expert.ts';

/** `sharp data expert`: the scripted expert's transcripts (SFT data). Flags: src/cli/main.ts; the recipe: src/recipes/data-expert.ts. */
export async function run(opts: Record<string, unknown>): Promise<void> {
  await recipe(opts);
}
