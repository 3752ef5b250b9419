import { existsSync, statSync } from 'node:fs';
import {
  isMap,
  isScalar,
  isSeq,
  LineCounter,
  parse as parseYaml,
  parseDocument,
  YAMLParseError,
  type Node as YamlNode,
} from 'yaml';
import type { z } from 'zod';
import { UserError } from '../errors.ts';
import { checkRules } from './rules.ts';
import { configSchema, type Config } from './schema.ts';
import { readTextFile } from '../fs/read-file.ts';

/** Bad config input: one line naming the key path (and the file or --set that gave it). */
export class ConfigError extends UserError {
  override readonly name = 'ConfigError';
}

type Tree = Record<string, unknown>;

export interface LoadOptions {
  /** YAML file overriding the schema defaults; none = defaults only. */
  file?: string;
  /**
   * The same as an object, instead of a file (the library's loadConfig): copied, never changed; it
   * must hold data only, as parsed YAML would.
   */
  tree?: Readonly<Record<string, unknown>>;
  /** `a.b.c=value` overrides applied last; values parsed as YAML scalars. */
  sets?: readonly string[];
}

/** Defaults <- YAML file <- --set overrides, validated by the schema and the cross-field rules. */
export function loadConfig(opts: LoadOptions = {}): Config {
  const tree = opts.file ? readYamlFile(opts.file) : opts.tree !== undefined ? copyTree(opts.tree) : {};
  // Key paths each --set gave a value to (every leaf of a mapping value), the last --set winning.
  const setPaths = new Map<string, string>();
  for (const assignment of opts.sets ?? []) {
    const { path, value } = parseSet(assignment);
    setAtPath(tree, path, value, assignment);
    for (const leaf of leafPaths(value, path)) setPaths.set(leaf, assignment);
  }
  const parsed = configSchema.safeParse(tree);
  if (!parsed.success) throw new ConfigError(describeIssue(parsed.error.issues[0], opts.file, setPaths));
  const problems = checkRules(parsed.data);
  if (problems.length > 0)
    throw new ConfigError(`config: ${problems[0]}${problems.length > 1 ? ` (and ${problems.length - 1} more)` : ''}`);
  return parsed.data;
}

/**
 * A config object handed to a recipe, checked again as loadConfig checks a file: the library's
 * callers may build one by hand or change a loaded one (`{ ...cfg, train: { ...cfg.train, steps } }`).
 * A config loadConfig returned comes back equal (the schema's output parses to itself).
 */
export function checkedConfig(cfg: unknown): Config {
  if (!isMapping(cfg)) throw new ConfigError('config: the config object must be a mapping of sections (loadConfig)');
  return loadConfig({ tree: cfg });
}

/**
 * Largest config file read (bytes). Real configs are a few KiB; the bound keeps a pasted data file or
 * a generated monster from tying up the parser (parsing is linear, about 1 s per MiB here).
 */
export const MAX_CONFIG_BYTES = 1024 * 1024;

/** A config given as an object: checked as a file's tree is, then deep-copied (the --set overrides write into it). */
function copyTree(given: unknown): Tree {
  if (!isMapping(given)) throw new ConfigError('config: the config object must be a mapping of sections');
  const bad = badKeyIn(given, []);
  if (bad) throw new ConfigError(`config: ${bad}`);
  try {
    return structuredClone(given);
  } catch (err) {
    // A function, class instance with private state, symbol, ...: nothing a YAML file can hold.
    throw new ConfigError(`config: the config object holds a value that is not data (${firstLine(err)})`);
  }
}

const firstLine = (err: unknown): string => String(err instanceof Error ? err.message : err).split('\n')[0] ?? '';

function readYamlFile(file: string): Tree {
  if (!existsSync(file)) throw new ConfigError(`config: file not found: ${file}`);
  let text: string;
  try {
    const size = statSync(file).size;
    if (size > MAX_CONFIG_BYTES)
      throw new ConfigError(
        `config: ${file} is ${size} bytes; a config file may hold at most ${MAX_CONFIG_BYTES} bytes (1 MiB)`,
      );
    text = readTextFile(file, MAX_CONFIG_BYTES);
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`config: cannot read ${file}: ${String((err as Error).message).split('\n')[0]}`);
  }
  let doc: unknown;
  try {
    // The yaml package's own duplicate-key check compares each key with every earlier key of its
    // mapping (quadratic: 90k keys took minutes); it is off here and `duplicateKey` does it with a Set.
    const lineCounter = new LineCounter();
    const d = parseDocument(text, { uniqueKeys: false, lineCounter });
    if (d.errors.length > 0) throw d.errors[0];
    const dup = duplicateKey(d.contents);
    if (dup) {
      const pos = lineCounter.linePos(dup.offset);
      throw new ConfigError(
        `config: cannot parse ${file}:${pos.line}:${pos.col}: duplicate key '${dup.key}' (map keys must be unique)`,
      );
    }
    doc = d.toJS();
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    if (err instanceof YAMLParseError) {
      const where = err.linePos?.[0] ? `:${err.linePos[0].line}:${err.linePos[0].col}` : '';
      throw new ConfigError(`config: cannot parse ${file}${where}: ${err.message.split('\n')[0]}`);
    }
    throw new ConfigError(
      `config: cannot read ${file}: ${String(err instanceof Error ? err.message : err).split('\n')[0]}`,
    );
  }
  if (doc === null || doc === undefined) return {};
  if (typeof doc !== 'object' || Array.isArray(doc))
    throw new ConfigError(`config: ${file} must hold a mapping of sections at the top level`);
  const bad = badKeyIn(doc, []);
  if (bad) throw new ConfigError(`config: ${file}: ${bad}`);
  return doc as Tree;
}

/**
 * The first key that occurs twice in one mapping of the document, with its offset, or undefined. One
 * pass over the nodes with a Set per mapping (iterative: a deeply nested document cannot overflow the
 * stack here). Keys compare as the property names they become, so `1` and `'1'` collide.
 */
function duplicateKey(root: YamlNode | null): { key: string; offset: number } | undefined {
  const todo: unknown[] = [root];
  while (todo.length > 0) {
    const node = todo.pop();
    if (isMap(node)) {
      const seen = new Set<string>();
      for (const pair of node.items) {
        const k = pair.key;
        const name = isScalar(k) ? String(k.value) : String(k);
        if (seen.has(name))
          return {
            key: name.length > 80 ? `${name.slice(0, 80)}...` : name,
            offset: (k as YamlNode | null)?.range?.[0] ?? 0,
          };
        seen.add(name);
        todo.push(pair.value);
      }
    } else if (isSeq(node)) {
      for (const item of node.items) todo.push(item);
    }
  }
  return undefined;
}

export function parseSet(assignment: string): { path: string[]; value: unknown } {
  const eq = assignment.indexOf('=');
  if (eq <= 0) throw new ConfigError(`config: --set expects key.path=value, got '${assignment}'`);
  const path = assignment.slice(0, eq).trim().split('.');
  if (path.some((p) => p === '')) throw new ConfigError(`config: --set has an empty key segment in '${assignment}'`);
  const badKey = path.find((p) => PROTOTYPE_KEYS.has(p));
  if (badKey)
    throw new ConfigError(
      `config: --set ${assignment}: key '${badKey}' is not allowed (it would reach Object.prototype)`,
    );
  const raw = assignment.slice(eq + 1);
  let value: unknown;
  try {
    value = parseYaml(raw);
  } catch {
    value = raw;
  }
  const badInValue = badKeyIn(value, path);
  if (badInValue) throw new ConfigError(`config: --set ${assignment}: ${badInValue}`);
  return { path, value: value === null && raw.trim() === '' ? '' : value };
}

/**
 * Keys that would write through to Object.prototype (or a constructor) when merged with `obj[key]`:
 * refused in every user-given tree (YAML file, --set path, --set mapping value).
 */
const PROTOTYPE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

function isMapping(v: unknown): v is Tree {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * What is wrong with a user-given tree, or undefined: the first prototype key anywhere in it, or a
 * YAML alias that contains itself (`&a [*a]`), which would send every later walk round forever.
 */
function badKeyIn(value: unknown, at: string[], ancestors: Set<unknown> = new Set()): string | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  if (ancestors.has(value)) return `'${at.join('.') || '(root)'}' refers to itself (a YAML alias cycle)`;
  ancestors.add(value);
  try {
    // Own keys only: YAML and JSON parsers create `__proto__` as an own property.
    const entries: Array<[string, unknown]> = Array.isArray(value)
      ? value.map((v, i) => [String(i), v])
      : Object.entries(value);
    for (const [key, v] of entries) {
      if (!Array.isArray(value) && PROTOTYPE_KEYS.has(key))
        return `key '${[...at, key].join('.')}' is not allowed (it would reach Object.prototype)`;
      const bad = badKeyIn(v, [...at, key], ancestors);
      if (bad) return bad;
    }
    return undefined;
  } finally {
    ancestors.delete(value);
  }
}

/** Dotted paths of the leaves of `value` under `at` (a scalar or array is one leaf). */
function leafPaths(value: unknown, at: string[]): string[] {
  if (!isMapping(value) || Object.keys(value).length === 0) return [at.join('.')];
  return Object.entries(value).flatMap(([k, v]) => leafPaths(v, [...at, k]));
}

/** `over` merged into `base` key by key (mappings recursively; scalars and arrays replace). */
function mergeInto(base: Tree, over: Tree): void {
  for (const [k, v] of Object.entries(over)) {
    const cur = Object.hasOwn(base, k) ? base[k] : undefined;
    if (isMapping(cur) && isMapping(v)) mergeInto(cur, v);
    else base[k] = v;
  }
}

function setAtPath(tree: Tree, path: string[], value: unknown, assignment: string): void {
  let node: Tree = tree;
  for (const [i, key] of path.slice(0, -1).entries()) {
    const next = Object.hasOwn(node, key) ? node[key] : undefined;
    if (next === undefined) node[key] = {};
    else if (typeof next !== 'object' || next === null || Array.isArray(next)) {
      throw new ConfigError(`config: --set ${assignment}: ${path.slice(0, i + 1).join('.')} is not a section`);
    }
    node = node[key] as Tree;
  }
  const last = path[path.length - 1] as string;
  const cur = Object.hasOwn(node, last) ? node[last] : undefined;
  // `--set train={steps: 5}` changes train.steps and keeps the rest of the section (file or defaults).
  if (isMapping(cur) && isMapping(value)) mergeInto(cur, value);
  else node[last] = value;
}

function describeIssue(
  issue: z.core.$ZodIssue | undefined,
  file: string | undefined,
  sets: Map<string, string>,
): string {
  if (!issue) return 'config: invalid';
  const base = issue.path.map(String);
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => [...base, k].join('.'));
    // A --set whose path runs through the unknown key (`--set a.b=1` with no section `a`) gave it too.
    const from = keys.map((k) => setOrigin(k, sets)).find(Boolean);
    const shown = keys.length > 5 ? `${keys.slice(0, 5).join(', ')} (and ${keys.length - 5} more)` : keys.join(', ');
    return `config: unknown key ${shown}${origin(from, file)}`;
  }
  const key = base.join('.') || '(root)';
  return `config: ${key}: ${issue.message}${origin(setOrigin(key, sets), file)}`;
}

/**
 * The --set that gave `key` its value: one whose leaf is the key, lies above it (an array or a
 * scalar where a section was expected) or below it (a section-level issue such as a cross-field
 * refinement of a mapping value).
 */
function setOrigin(key: string, sets: Map<string, string>): string | undefined {
  const exact = sets.get(key);
  if (exact) return exact;
  for (const [leaf, assignment] of [...sets].reverse()) {
    if (key.startsWith(`${leaf}.`) || leaf.startsWith(`${key}.`)) return assignment;
  }
  return undefined;
}

function origin(set: string | undefined, file: string | undefined): string {
  if (set) return ` (from --set ${set})`;
  return file ? ` (in ${file})` : '';
}
