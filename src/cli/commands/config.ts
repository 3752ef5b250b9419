import { run as printConfig, runSchema as writeSchema } from '../../recipes/config.ts';

/** `sharp config`: the resolved config; `sharp config schema`: configs/schema.json. Flags: src/cli/main.ts; the recipe: src/recipes/config.ts. */
export async function run(opts: { config?: string; set?: string[] }): Promise<void> {
  await printConfig(opts);
}

export async function runSchema(opts: { out?: string }): Promise<void> {
  await writeSchema(opts);
}
