import type { ToolEntry } from '../../config/sections/tools.ts';
import type { ArgumentsCheck, ObjectSchema } from '../../tools/user/schema.ts';
import { singleStringParam } from '../../tools/user/schema.ts';
import { startedUserTools, type UserToolSet } from '../../tools/user/user-tools.ts';
import { ACTION_NAMES, ROLE_TOOLS, TOOL_SPECS, type ToolSpec } from './tool-specs.ts';

/**
 * The tools a run's protocol knows: the built-in actions and the user tools of `rollout.tools`, with
 * the workers' tool list in its configured order. The default catalog (no list) is exactly the
 * built-in set, so the prompts, stop strings and parsing of a config without user tools stay those the
 * shipped models were trained on.
 */
export interface ToolCatalog {
  /** Every action name a message may call: the built-ins (ACTION_NAMES order), then the user tools. */
  readonly names: readonly string[];
  /** The workers' tools (and the lone agent's under `agents: single`), in the configured order. */
  readonly workerTools: readonly string[];
  spec(name: string): ToolSpec | undefined;
  /** A user tool's argument check (absent for the built-ins: one non-empty string each). */
  check(name: string): ArgumentsCheck | undefined;
}

/** What the protocols need of one user tool. */
export interface UserToolSpec {
  name: string;
  description: string;
  schema: ObjectSchema;
  check: ArgumentsCheck;
}

export const DEFAULT_CATALOG: ToolCatalog = catalog([], ROLE_TOOLS.worker);

/**
 * The catalog of a tool list. `workerTools` names built-ins and user tools alike; a user tool whose
 * schema is one required string property keeps the built-ins' one-argument form.
 */
export function catalog(user: readonly UserToolSpec[], workerTools: readonly string[]): ToolCatalog {
  const specs = new Map<string, ToolSpec>(Object.entries(TOOL_SPECS));
  const checks = new Map<string, ArgumentsCheck>();
  for (const t of user) {
    const one = singleStringParam(t.schema);
    specs.set(t.name, {
      name: t.name,
      param: one?.name ?? '',
      description: t.description,
      paramDescription: one?.description ?? '',
      schema: t.schema,
    });
    checks.set(t.name, t.check);
  }
  for (const name of workerTools) if (!specs.has(name)) throw new Error(`tool catalog: no tool named '${name}'`);
  return {
    names: [...ACTION_NAMES, ...user.map((t) => t.name)],
    workerTools: [...workerTools],
    spec: (name) => specs.get(name),
    check: (name) => checks.get(name),
  };
}

/** The catalog of a started tool set (tools/user/user-tools.ts). */
export function catalogOf(set: UserToolSet): ToolCatalog {
  return set.tools.length === 0 && set.workerTools.join() === ROLE_TOOLS.worker.join()
    ? DEFAULT_CATALOG
    : catalog(set.tools, set.workerTools);
}

/**
 * The catalog of a rollout config whose user tools are started (the command started them): what
 * reads or writes the messages of its trajectories outside the engine (the judge's resamples) knows
 * the same tools.
 */
export function configCatalog(rollout: { tools?: readonly ToolEntry[] | undefined }): ToolCatalog {
  return catalogOf(startedUserTools(rollout.tools));
}

/** Specs shown for a tool set: the tools, then `answer`. */
export function catalogSpecs(c: ToolCatalog, tools: readonly string[]): ToolSpec[] {
  return [...tools, 'answer'].map((n) => c.spec(n) as ToolSpec);
}

/** Regex-safe alternation of the catalog's names (user tool names are checked to be plain words). */
export function namePattern(c: ToolCatalog): string {
  return c.names.map((n) => n.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')).join('|');
}
