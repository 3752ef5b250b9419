import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { ChildProcess } from 'node:child_process';
import type { McpServerEntry } from '../../config/sections/tools.ts';
import { UserError } from '../../errors.ts';
import { MAX_TOOL_RESULT_CHARS } from '../result-cap.ts';
import type { ToolOutcome } from '../types.ts';
import { Secrets } from './env.ts';
import type { StartedTools } from './module-tool.ts';
import { singleStringParam } from './schema.ts';
import { argumentsOf, describedTool, firstLine, within, type UserTool } from './user-tool.ts';

/**
 * An `{ mcp }` entry of rollout.tools: an MCP server reached through the official SDK, over stdio
 * (`command`, spawned here) or streamable HTTP (`url`). Its tools are listed once at start
 * (tools/list) and `allow` picks those the workers see. A call is bounded by the entry's timeoutMs;
 * a server that is slow, crashes, exits or answers something that is not a tool result gives the
 * call an error result (the SDK checks every answer against the protocol's schema, and the tool's
 * outputSchema when it declares one), and the rollout goes on.
 */

/** tools/list pages read at most: a server that keeps answering with a next cursor is not listed forever. */
const MAX_LIST_PAGES = 50;

function transportFor(entry: McpServerEntry, secrets: Secrets): Transport {
  if (entry.url !== undefined)
    return new StreamableHTTPClientTransport(new URL(secrets.expand(entry.url)), {
      requestInit: { headers: secrets.expandAll(entry.headers) },
    });
  return new StdioClientTransport({
    command: secrets.expand(entry.command ?? ''),
    args: entry.args.map((a) => secrets.expand(a)),
    env: { ...getDefaultEnvironment(), ...secrets.expandAll(entry.env) },
    ...(entry.cwd !== undefined ? { cwd: entry.cwd } : {}),
    // The server's stderr may echo its settings, secrets among them: it goes nowhere.
    stderr: 'ignore',
  });
}

/**
 * Holds the process open only while a call waits on the server: an idle server must not keep a
 * command from exiting (as the built-ins' workers do not, worker-host.ts), whatever error ends the
 * command before it closes its tools. The SDK keeps its spawned child in `_process`; absent (HTTP, or
 * another SDK layout) there is nothing to hold.
 */
function keepAlive(transport: Transport): (on: boolean) => void {
  const child = (transport as unknown as { _process?: ChildProcess })._process;
  const handles = [child, child?.stdin, child?.stdout] as ({ ref?: () => void; unref?: () => void } | undefined)[];
  let calls = 0;
  const set = (on: boolean): void => {
    for (const h of handles) (on ? h?.ref : h?.unref)?.call(h);
  };
  set(false);
  return (on) => {
    calls += on ? 1 : -1;
    set(calls > 0);
  };
}

/** The text of a tool result: its text parts, other parts named by their type. */
function resultText(content: readonly { type: string; text?: unknown }[]): string {
  let out = '';
  for (const part of content) {
    const piece = part.type === 'text' && typeof part.text === 'string' ? part.text : `[${part.type}]`;
    out += (out === '' ? '' : '\n') + piece;
    // Past the cap the rest would only be cut (result-cap.ts).
    if (out.length > MAX_TOOL_RESULT_CHARS) break;
  }
  return out;
}

export async function startMcpServer(
  entry: McpServerEntry,
  env: NodeJS.ProcessEnv = process.env,
): Promise<StartedTools> {
  const origin = `mcp server ${entry.mcp}`;
  const secrets = new Secrets(env, origin);
  const transport = transportFor(entry, secrets);
  const client = new Client({ name: 'sharp-rl', version: '0.1.0' }, { capabilities: {} });
  let down: string | null = null;
  // Transport errors come back through the calls they break; none may become an unhandled error.
  client.onerror = () => undefined;
  client.onclose = () => {
    down ??= 'the server closed the connection';
  };
  const timeout = entry.startTimeoutMs;
  const listed: { name: string; description?: string; inputSchema: unknown }[] = [];
  try {
    await within(
      (async () => {
        await client.connect(transport, { timeout });
        let cursor: string | undefined;
        for (let page = 0; page < MAX_LIST_PAGES; page++) {
          const r = await client.listTools(cursor === undefined ? {} : { cursor }, { timeout });
          listed.push(...r.tools);
          cursor = r.nextCursor;
          if (cursor === undefined) break;
        }
      })(),
      timeout,
      () => new Error(`no answer to initialize and tools/list within ${timeout} ms (startTimeoutMs)`),
    );
  } catch (err) {
    await client.close().catch(() => undefined);
    if (err instanceof UserError) throw err;
    throw new UserError(`rollout.tools: ${origin} did not start: ${secrets.scrub(firstLine(err))}`);
  }
  const hold = keepAlive(transport);
  const offered = new Map(listed.map((t) => [t.name, t]));
  for (const name of entry.allow ?? [])
    if (!offered.has(name)) {
      await client.close().catch(() => undefined);
      throw new UserError(
        `rollout.tools: ${origin} has no tool '${name}' (allow); it offers: ` +
          `${[...offered.keys()].join(', ') || 'none'}`,
      );
    }
  const chosen = entry.allow ? entry.allow.map((n) => offered.get(n) as (typeof listed)[number]) : listed;
  let tools: UserTool[];
  try {
    tools = chosen.map((t) => userTool(t, { entry, origin, client, secrets, hold, down: () => down }));
  } catch (err) {
    await client.close().catch(() => undefined);
    throw err;
  }
  return {
    tools,
    close: async () => {
      down = 'the run ended';
      await client.close().catch(() => undefined);
    },
  };
}

interface Server {
  entry: McpServerEntry;
  origin: string;
  client: Client;
  secrets: Secrets;
  hold: (on: boolean) => void;
  down: () => string | null;
}

function userTool(
  listed: { name: string; description?: string; inputSchema: unknown },
  { entry, origin, client, secrets, hold, down }: Server,
): UserTool {
  const tool = describedTool(
    { name: listed.name, description: listed.description ?? '', parameters: listed.inputSchema },
    origin,
  );
  const param = singleStringParam(tool.schema)?.name ?? null;
  const fail = (why: string): ToolOutcome => ({ ok: false, output: `${tool.name} error: ${secrets.scrub(why)}` });
  const run = async (text: string): Promise<ToolOutcome> => {
    const gone = down();
    if (gone !== null) return fail(`${origin} is not available (${gone})`);
    const args = argumentsOf(param, text);
    if (!args) return fail('arguments are not a JSON object');
    const ms = entry.timeoutMs;
    hold(true);
    try {
      const r = await within(
        client.callTool({ name: tool.name, arguments: args }, undefined, { timeout: ms, maxTotalTimeout: ms }),
        // The SDK's own timeout answers first; this one bounds a call whatever the transport does.
        ms + 1000,
        () => new Error(`no answer within ${ms} ms`),
      );
      if (!Array.isArray(r.content)) return fail('the server answered without a content list');
      const output = resultText(r.content as { type: string; text?: unknown }[]);
      return r.isError === true ? fail(output || 'the tool reported an error') : { ok: true, output };
    } catch (err) {
      const msg = firstLine(err);
      return fail(/timed out|no answer within/i.test(msg) ? `no answer within ${ms} ms (timeoutMs)` : msg);
    } finally {
      hold(false);
    }
  };
  return { ...tool, run, origin };
}
