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

/**
 * The client session with one server. A stdio server that exits (or crashes) is spawned again by the
 * next call, within that call's timeout, so one bad call does not take a tool away for the rest of
 * a training run; calls that find it down while it restarts wait for the same restart.
 */
class Connection {
  private client: Client | undefined;
  private hold: (on: boolean) => void = () => undefined;
  private live = false;
  private ended = false;
  private restarting: Promise<void> | undefined;

  constructor(
    private readonly entry: McpServerEntry,
    readonly origin: string,
    readonly secrets: Secrets,
  ) {}

  /** Connects (initialize) within `ms`; a failure closes what it opened and throws. */
  async open(ms: number): Promise<Client> {
    const transport = transportFor(this.entry, this.secrets);
    const client = new Client({ name: 'sharp-rl', version: '0.1.0' }, { capabilities: {} });
    // Transport errors come back through the calls they break; none may become an unhandled error.
    client.onerror = () => undefined;
    client.onclose = () => {
      if (this.client === client) this.live = false;
    };
    try {
      await within(
        client.connect(transport, { timeout: ms }),
        ms,
        () => new Error(`no answer to initialize within ${ms} ms`),
      );
    } catch (err) {
      await client.close().catch(() => undefined);
      throw err;
    }
    this.client = client;
    this.hold = keepAlive(transport);
    this.live = true;
    return client;
  }

  /** The live session, restarted within `ms` when the server went away; null once the run ended. */
  async session(ms: number): Promise<Client | null> {
    if (this.ended) return null;
    if (this.live && this.client) return this.client;
    this.restarting ??= this.open(ms)
      .then(() => undefined)
      .finally(() => {
        this.restarting = undefined;
      });
    await this.restarting;
    return this.client ?? null;
  }

  /** Keeps the process up while a call waits (keepAlive). */
  holding(on: boolean): void {
    this.hold(on);
  }

  async close(): Promise<void> {
    this.ended = true;
    this.live = false;
    await this.client?.close().catch(() => undefined);
  }
}

export async function startMcpServer(
  entry: McpServerEntry,
  env: NodeJS.ProcessEnv = process.env,
): Promise<StartedTools> {
  const origin = `mcp server ${entry.mcp}`;
  const conn = new Connection(entry, origin, new Secrets(env, origin));
  const timeout = entry.startTimeoutMs;
  const listed: { name: string; description?: string; inputSchema: unknown }[] = [];
  try {
    await within(
      (async () => {
        const client = await conn.open(timeout);
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
    await conn.close();
    if (err instanceof UserError) throw err;
    throw new UserError(`rollout.tools: ${origin} did not start: ${conn.secrets.scrub(firstLine(err))}`);
  }
  const offered = new Map(listed.map((t) => [t.name, t]));
  for (const name of entry.allow ?? [])
    if (!offered.has(name)) {
      await conn.close();
      throw new UserError(
        `rollout.tools: ${origin} has no tool '${name}' (allow); it offers: ` +
          `${[...offered.keys()].join(', ') || 'none'}`,
      );
    }
  const chosen = entry.allow ? entry.allow.map((n) => offered.get(n) as (typeof listed)[number]) : listed;
  let tools: UserTool[];
  try {
    tools = chosen.map((t) => userTool(t, entry, conn));
  } catch (err) {
    await conn.close();
    throw err;
  }
  return { tools, close: () => conn.close() };
}

function userTool(
  listed: { name: string; description?: string; inputSchema: unknown },
  entry: McpServerEntry,
  conn: Connection,
): UserTool {
  const { origin, secrets } = conn;
  const tool = describedTool(
    { name: listed.name, description: listed.description ?? '', parameters: listed.inputSchema },
    origin,
  );
  const param = singleStringParam(tool.schema)?.name ?? null;
  const fail = (why: string): ToolOutcome => ({ ok: false, output: `${tool.name} error: ${secrets.scrub(why)}` });
  const run = async (text: string): Promise<ToolOutcome> => {
    const args = argumentsOf(param, text);
    if (!args) return fail('arguments are not a JSON object');
    const ms = entry.timeoutMs;
    let client: Client | null;
    try {
      client = await conn.session(ms);
    } catch (err) {
      return fail(`${origin} is down and did not start again: ${firstLine(err)}`);
    }
    if (!client) return fail(`${origin} is not available (the run ended)`);
    conn.holding(true);
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
      conn.holding(false);
    }
  };
  return { ...tool, run, origin };
}
