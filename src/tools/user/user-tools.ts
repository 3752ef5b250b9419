import type { ToolEntry } from '../../config/sections/tools.ts';
import { UserError } from '../../errors.ts';
import { startMcpServer } from './mcp.ts';
import { startModuleTool, type StartedTools } from './module-tool.ts';
import type { UserTool } from './user-tool.ts';

/**
 * The user tools of a `rollout.tools` list, started once per process and shared by every rollout,
 * replay and evaluation that runs with that list: a command starts them before its run folder exists
 * (so bad input is one line and no folder), the engine finds them started (or starts them itself, as
 * a `sharp worker` does for the first job of a run), and the command's end closes them all.
 */
export interface UserToolSet {
  /** The user tools, in list order (an MCP server's in its allow order, else its tools/list order). */
  tools: readonly UserTool[];
  /** Every worker tool's name, built-ins included, in list order. */
  workerTools: readonly string[];
}

/** The built-ins: what a config without a tool list gives the workers. */
const BUILTIN_TOOLS = ['search', 'calculate', 'code'] as const;

/** Names no user tool may take: the built-ins (listed or not, the parsers know them) and the engine's actions. */
const RESERVED = new Set<string>([...BUILTIN_TOOLS, 'delegate', 'answer']);

const DEFAULT_SET: UserToolSet = { tools: [], workerTools: BUILTIN_TOOLS };

interface Started {
  promise: Promise<UserToolSet>;
  set?: UserToolSet;
  closers: StartedTools[];
}

const started = new Map<string, Started>();

/** A list's identity: the same list from the same working directory (relative module paths) is started once. */
const keyOf = (entries: readonly ToolEntry[]): string => `${process.cwd()}\u0000${JSON.stringify(entries)}`;

/** Starts the tools of `entries` (or finds them started); a bad entry is a UserError after what started is closed. */
export function startUserTools(entries: readonly ToolEntry[] | undefined): Promise<UserToolSet> {
  if (!entries) return Promise.resolve(DEFAULT_SET);
  const key = keyOf(entries);
  const had = started.get(key);
  if (had) return had.promise;
  const s: Started = { promise: Promise.resolve(DEFAULT_SET), closers: [] };
  s.promise = startAll(entries, s.closers).then(
    (set) => (s.set = set),
    async (err: unknown) => {
      started.delete(key);
      await Promise.all(s.closers.map((c) => c.close()));
      throw err;
    },
  );
  started.set(key, s);
  return s.promise;
}

/** The started tools of `entries` (sync, for tool factories); startUserTools must have finished first. */
export function startedUserTools(entries: readonly ToolEntry[] | undefined): UserToolSet {
  if (!entries) return DEFAULT_SET;
  const set = started.get(keyOf(entries))?.set;
  if (!set) throw new Error('rollout.tools: the user tools were used before startUserTools finished');
  return set;
}

/** Stops every started tool process and server connection (the end of a command). */
export async function closeUserTools(): Promise<void> {
  const all = [...started.values()];
  started.clear();
  await Promise.all(all.map((s) => s.promise.catch(() => undefined)));
  await Promise.all(all.flatMap((s) => s.closers.map((c) => c.close())));
}

async function startAll(entries: readonly ToolEntry[], closers: StartedTools[]): Promise<UserToolSet> {
  const tools: UserTool[] = [];
  const workerTools: string[] = [];
  const origins = new Map<string, string>();
  const claim = (name: string, origin: string): void => {
    const other = origins.get(name);
    if (other !== undefined)
      throw new UserError(`rollout.tools: two tools are named '${name}' (${other} and ${origin})`);
    origins.set(name, origin);
    workerTools.push(name);
  };
  // One after another: a server that fails stops the list there, with the ones started before it closed.
  for (const entry of entries) {
    if (typeof entry === 'string') {
      claim(entry, `the built-in ${entry}`);
      continue;
    }
    const s = 'module' in entry ? await startModuleTool(entry) : await startMcpServer(entry);
    closers.push(s);
    for (const t of s.tools) {
      if (RESERVED.has(t.name))
        throw new UserError(
          `rollout.tools: ${t.origin}: tool '${t.name}' takes the name of a built-in (${[...RESERVED].join(', ')})`,
        );
      claim(t.name, t.origin);
      tools.push(t);
    }
  }
  return { tools, workerTools };
}
