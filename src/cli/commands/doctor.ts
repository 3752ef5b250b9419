import { run as recipe } from '../../recipes/doctor.ts';

/** `sharp doctor`: versions, backend choice, GPU libraries, a measured matmul rate. Flags: src/cli/main.ts; the recipe: src/recipes/doctor.ts. */
export async function run(opts: { backend?: string; threads?: number }): Promise<void> {
  await recipe(opts);
}
