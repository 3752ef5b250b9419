import { run as recipe, type ViewOptions } from '../../recipes/view.ts';

/** `sharp view RUN_DIR`: the run viewer, served locally or exported to one HTML file. Flags: src/cli/main.ts; the recipe: src/recipes/view.ts. */
export async function run(opts: ViewOptions): Promise<void> {
  await recipe(opts);
}
