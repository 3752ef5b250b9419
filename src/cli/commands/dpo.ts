import { run as recipe } from '../../recipes/dpo.ts';

/** `sharp dpo`: DPO on the credit module's preference pairs. Flags: src/cli/main.ts; the recipe: src/recipes/dpo.ts. */
export async function run(opts: Record<string, unknown>): Promise<void> {
  await recipe(opts);
}
