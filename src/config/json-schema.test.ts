import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { configJsonSchema } from './json-schema.ts';

const configsDir = join(import.meta.dirname, '../../configs');

describe('configs/schema.json', () => {
  const committed = JSON.parse(readFileSync(join(configsDir, 'schema.json'), 'utf8')) as Record<string, unknown>;

  it('is up to date with the zod schema (run `sharp config schema` after changing it)', () => {
    expect(committed).toEqual(configJsonSchema());
  });

  const ajv = new Ajv2020({ strict: false, allErrors: true });
  const validate = ajv.compile(committed);
  const yamls = readdirSync(configsDir).filter((f) => f.endsWith('.yaml'));

  it('finds the shipped configs', () => {
    expect(yamls).toContain('quickstart.yaml');
  });

  it.each(yamls)('validates configs/%s', (file) => {
    const doc = parse(readFileSync(join(configsDir, file), 'utf8')) as unknown;
    const ok = validate(doc);
    expect(validate.errors ?? []).toEqual([]);
    expect(ok).toBe(true);
  });

  it('rejects an unknown key and a wrong type', () => {
    expect(validate({ train: { lrr: 1 } })).toBe(false);
    expect(validate({ train: { lr: 'abc' } })).toBe(false);
  });
});
