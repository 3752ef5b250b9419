import { z } from 'zod';
import { count, timerMs } from './bounds.ts';

/**
 * `rollout.tools`: the workers' tools, in the order their prompt lists them (the planner keeps
 * `delegate`). Absent: the built-ins search, calculate and code, exactly as before user tools. Each
 * entry is a built-in by name, a tool module (`defineTool`), or an MCP server whose tools join the
 * list; docs/extending.md ("Tools").
 */

/** A user tool's name: a plain word, so it is a tag name in the tags protocol and a function name in json. */
const TOOL_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,40}$/;

const callTimeout = timerMs(
  10_000,
  'Milliseconds one call may take; past it the call is an invalid tool call and the rollout goes on',
);
const startTimeout = timerMs(
  30_000,
  'Milliseconds the tool may take to start (and an MCP server to answer tools/list) before the command stops',
);

const moduleTool = z.strictObject({
  module: z
    .string()
    .min(1)
    .describe(
      'A TypeScript or JavaScript module (path relative to the working directory) exporting a defineTool tool.',
    ),
  export: z
    .string()
    .min(1)
    .optional()
    .describe('The export that holds the tool (default: the default export, else the only tool the module exports).'),
  timeoutMs: callTimeout,
  heapMb: count(
    16,
    65_536,
    512,
    'Heap limit in MiB of the worker thread the module runs in (a call past it is an invalid tool call)',
  ),
  startTimeoutMs: startTimeout,
});

const stringMap = z
  .record(z.string(), z.string())
  .optional()
  .describe('Values may be written ${ENV_NAME}: expanded from the environment at start, never recorded.');

const mcpServer = z.strictObject({
  mcp: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'a short name of letters, digits, _ . -')
    .describe("The server's name in messages and logs."),
  command: z.string().min(1).optional().describe('stdio: the program that serves MCP on its stdin/stdout.'),
  args: z.array(z.string()).default([]).describe('stdio: its arguments (${ENV_NAME} expanded).'),
  env: stringMap,
  cwd: z.string().optional().describe('stdio: its working directory (default: the working directory).'),
  url: z.string().url().optional().describe('Streamable HTTP: the endpoint URL, e.g. http://127.0.0.1:3000/mcp.'),
  headers: stringMap,
  allow: z
    .array(z.string().regex(TOOL_NAME, 'a tool name: letters, digits, _ and -, at most 41 characters'))
    .min(1)
    .optional()
    .describe("The server's tools the workers see (default: every tool its tools/list names)."),
  timeoutMs: callTimeout,
  startTimeoutMs: startTimeout,
});

const toolEntry = z.union([z.enum(['search', 'calculate', 'code']), moduleTool, mcpServer]);

export const toolsSection = z
  .array(toolEntry)
  .min(1)
  .optional()
  .refine(
    (list) =>
      (list ?? []).every(
        (t) => typeof t !== 'object' || !('mcp' in t) || (t.command === undefined) !== (t.url === undefined),
      ),
    { message: 'an mcp entry takes command (stdio) or url (streamable HTTP), exactly one' },
  )
  .describe(
    "The workers' tools, in prompt order: 'search', 'calculate', 'code', {module, export?} (a defineTool " +
      'module) or {mcp, command | url, ...} (an MCP server). Absent: search, calculate and code.',
  );

export type ToolEntry = z.infer<typeof toolEntry>;
export type ModuleToolEntry = z.infer<typeof moduleTool>;
export type McpServerEntry = z.infer<typeof mcpServer>;
