import { stringify } from 'yaml';
import { loadConfig } from '../config/load.ts';
import { configJsonSchema } from '../config/json-schema.ts';
import { writeFileAtomic } from '../fs/atomic.ts';
import { prepareOutFile } from '../fs/out-dir.ts';
import type { ConfigFlags, ConfigSchemaFlags } from './commands.ts';

/** `sharp config --config X [--set k=v]...`: prints the resolved config as YAML. Flags: src/recipes/commands.ts. */
export async function run(opts: ConfigFlags): Promise<void> {
  const cfg = loadConfig({ file: opts.config, sets: opts.set });
  process.stdout.write(stringify(cfg));
}

/** `sharp config schema [--out F]`: writes the JSON Schema that editors use to check configs/*.yaml. */
export async function runSchema(opts: ConfigSchemaFlags): Promise<void> {
  const out = opts.out;
  prepareOutFile(out, 'config schema: --out');
  writeFileAtomic(out, JSON.stringify(configJsonSchema(), null, 2) + '\n');
  process.stdout.write(`wrote ${out}\n`);
}
