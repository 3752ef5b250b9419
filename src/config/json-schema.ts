import { z } from 'zod';
import { configSchema } from './schema.ts';

/**
 * JSON Schema of the config files (the input side: every key optional, since YAML only overrides
 * defaults), so editors autocomplete and check configs/*.yaml (`sharp config schema`).
 */
export function configJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(configSchema, { io: 'input', target: 'draft-2020-12' }) as Record<string, unknown>;
  return { ...schema, title: 'sharp-rl config', $id: 'https://sharp-rl.dev/config.schema.json' };
}
