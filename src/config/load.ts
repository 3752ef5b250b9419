import { existsSync, readFileSync } from 'node:fs';
import { parse as parseYaml, YAMLParseError } from 'yaml';
import type { z } from 'zod';
import { UserError } from '../errors.ts';
import { checkRules } from './rules.ts';
import { configSchema, type Config } from './schema.ts';

/** Bad config input: one line naming the key path (and the file or --set that gave it). */
export class ConfigError extends UserError {
  override readonly name = 'ConfigError';
}

type Tree = Record<string, unknown>;

export interface LoadOptions {
  /** YAML file overriding the schema defaults; none = defaults only. */
  file?: string;
  /** `a.b.c=value` overrides applied last; values parsed as YAML scalars. */
  sets?: readonly string[];
}

/** Defaults <- YAML file <- --set overrides, validated by the schema and the cross-field rules. */
export function loadConfig(opts: LoadOptions = {}): Config {
  const tree = opts.file ? readYamlFile(opts.file) : {};
  const setPaths = new Map<string, string>();
  for (const assignment of opts.sets ?? []) {
    const { path, value } = parseSet(assignment);
    setAtPath(tree, path, value, assignment);
    setPaths.set(path.join('.'), assignment);
  }
  const parsed = configSchema.safeParse(tree);
  if (!parsed.success) throw new ConfigError(describeIssue(parsed.error.issues[0], opts.file, setPaths));
  const problems = checkRules(parsed.data);
  if (problems.length > 0) throw new ConfigError(`config: ${problems[0]}${problems.length > 1 ? ` (and ${problems.length - 1} more)` : ''}`);
  return parsed.data;
}

export function readYamlFile(file: string): Tree {
  if (!existsSync(file)) throw new ConfigError(`config: file not found: ${file}`);
  let doc: unknown;
  try {
    doc = parseYaml(readFileSync(file, 'utf8'));
  } catch (err) {
    if (err instanceof YAMLParseError) {
      const where = err.linePos?.[0] ? `:${err.linePos[0].line}:${err.linePos[0].col}` : '';
      throw new ConfigError(`config: cannot parse ${file}${where}: ${err.message.split('\n')[0]}`);
    }
    throw new ConfigError(`config: cannot read ${file}: ${String(err)}`);
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(`config: ${file} must hold a mapping of sections at the top level`);
  return doc as Tree;
}

export function parseSet(assignment: string): { path: string[]; value: unknown } {
  const eq = assignment.indexOf('=');
  if (eq <= 0) throw new ConfigError(`config: --set expects key.path=value, got '${assignment}'`);
  const path = assignment.slice(0, eq).trim().split('.');
  if (path.some((p) => p === '')) throw new ConfigError(`config: --set has an empty key segment in '${assignment}'`);
  const raw = assignment.slice(eq + 1);
  let value: unknown;
  try {
    value = parseYaml(raw);
  } catch {
    value = raw;
  }
  return { path, value: value === null && raw.trim() === '' ? '' : value };
}

function setAtPath(tree: Tree, path: string[], value: unknown, assignment: string): void {
  let node: Tree = tree;
  for (const [i, key] of path.slice(0, -1).entries()) {
    const next = node[key];
    if (next === undefined) node[key] = {};
    else if (typeof next !== 'object' || next === null || Array.isArray(next)) {
      throw new ConfigError(`config: --set ${assignment}: ${path.slice(0, i + 1).join('.')} is not a section`);
    }
    node = node[key] as Tree;
  }
  node[path[path.length - 1] as string] = value;
}

function describeIssue(issue: z.core.$ZodIssue | undefined, file: string | undefined, sets: Map<string, string>): string {
  if (!issue) return 'config: invalid';
  const base = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => [...base, k].join('.'));
    const from = keys.map((k) => sets.get(k)).find(Boolean);
    return `config: unknown key ${keys.join(', ')}${origin(from, file)}`;
  }
  const key = base.join('.') || '(root)';
  return `config: ${key}: ${issue.message}${origin(sets.get(key), file)}`;
}

function origin(set: string | undefined, file: string | undefined): string {
  if (set) return ` (from --set ${set})`;
  return file ? ` (in ${file})` : '';
}
