import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ModuleToolEntry } from '../../config/sections/tools.ts';
import { UserError } from '../../errors.ts';
import { MAX_TOOL_RESULT_CHARS } from '../result-cap.ts';
import type { ToolOutcome } from '../types.ts';
import { WorkerHost, type WorkerHostOptions } from '../worker-host.ts';
import { singleStringParam } from './schema.ts';
import { argumentsOf, describedTool, firstLine, within, type UserTool } from './user-tool.ts';

/**
 * A `{ module }` entry of rollout.tools: the user's defineTool module loaded in a child process of its
 * own (module-worker.mjs) under WorkerHost, the host of the built-in sandboxes. Each call has the
 * entry's deadline and the process its heap limit; a call past either, or one that crashes or exits
 * the process, is an error result and a fresh process starts for the next call. A child process, not
 * a thread: V8 ends the whole process when one allocation fails in a thread, and a thread's
 * process.exit() or process.abort() would end the rollout.
 */
export interface StartedTools {
  tools: UserTool[];
  close(): Promise<void>;
}

interface Request {
  args: Record<string, unknown>;
  deadline: number;
}

const WORKER_ENTRY = new URL('./module-worker.mjs', import.meta.url);

export async function startModuleTool(entry: ModuleToolEntry, cwd = process.cwd()): Promise<StartedTools> {
  const file = resolve(cwd, entry.module);
  const origin = `module ${entry.module}${entry.export ? ` (export ${entry.export})` : ''}`;
  if (!existsSync(file)) throw new UserError(`rollout.tools: ${origin}: no such file ${file}`);
  // The prefix names the tool once it is known; WorkerHost reads it at each call.
  const opts: WorkerHostOptions = {
    entry: WORKER_ENTRY,
    errorPrefix: `${entry.module} error`,
    isolation: {
      kind: 'process',
      heapMb: entry.heapMb,
      args: [pathToFileURL(file).href, entry.export ?? '', String(MAX_TOOL_RESULT_CHARS)],
    },
  };
  const host = new WorkerHost<Request>(opts);
  let info: unknown;
  try {
    info = await within(
      host.ready(),
      entry.startTimeoutMs,
      () => new UserError(`rollout.tools: ${origin} did not load within ${entry.startTimeoutMs} ms (startTimeoutMs)`),
    );
  } catch (err) {
    await host.close();
    throw err instanceof UserError ? err : new UserError(`rollout.tools: ${origin} failed to start: ${firstLine(err)}`);
  }
  const reported = (info ?? {}) as { error?: string; name?: unknown; description?: unknown; parameters?: unknown };
  if (typeof reported.error === 'string') {
    await host.close();
    throw new UserError(`rollout.tools: ${origin} ${reported.error}`);
  }
  let tool: ReturnType<typeof describedTool>;
  try {
    tool = describedTool(
      { name: reported.name, description: reported.description, parameters: reported.parameters },
      origin,
    );
  } catch (err) {
    await host.close();
    throw err;
  }
  opts.errorPrefix = `${tool.name} error`;
  const param = singleStringParam(tool.schema)?.name ?? null;
  const timeout = `${tool.name} error: no answer within ${entry.timeoutMs} ms (timeoutMs)`;
  const run = async (text: string): Promise<ToolOutcome> => {
    const args = argumentsOf(param, text);
    if (!args) return { ok: false, output: `${tool.name} error: arguments are not a JSON object` };
    return host.run({ args, deadline: Date.now() + entry.timeoutMs }, entry.timeoutMs, timeout);
  };
  return { tools: [{ ...tool, run, origin }], close: () => host.close() };
}
