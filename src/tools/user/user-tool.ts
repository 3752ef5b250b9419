import { UserError } from '../../errors.ts';
import type { Tool } from '../types.ts';
import { argumentsCheck, asObjectSchema, type ArgumentsCheck, type ObjectSchema } from './schema.ts';

/**
 * One user tool as the engine and the protocols see it, whatever serves it (a module in its own
 * process, an MCP server): its name, what the agents read of it, its argument schema with the check a
 * call passes before it runs, and the call itself. `run` takes the argument text the protocols hand
 * the engine (rollout/protocol/user-arguments.ts) and, like every tool, never throws.
 */
export interface UserTool {
  name: string;
  description: string;
  schema: ObjectSchema;
  check: ArgumentsCheck;
  run: Tool;
  /** Where it comes from, for messages: `module ./my-tool.ts`, `mcp server weather`. */
  origin: string;
}

/** A tool name: a plain word, a tag in the tags protocol and a function name in json. */
const TOOL_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,40}$/;

/**
 * The checked description of a tool as its server or module gave it (bad ones stop the command in
 * one line): the name a plain word, the schema an object schema, compiled once here.
 */
export function describedTool(
  info: { name: unknown; description: unknown; parameters: unknown },
  origin: string,
): { name: string; description: string; schema: ObjectSchema; check: ArgumentsCheck } {
  const name = info.name;
  if (typeof name !== 'string' || !TOOL_NAME.test(name))
    throw new UserError(
      `rollout.tools: ${origin}: tool name ${JSON.stringify(name)} is not a plain word (letters, digits, _ and -, ` +
        `at most 41 characters, not starting with a digit)`,
    );
  const description = typeof info.description === 'string' ? info.description.replace(/\s+/g, ' ').trim() : '';
  const schema = asObjectSchema(info.parameters);
  if ('error' in schema) throw new UserError(`rollout.tools: ${origin}: tool '${name}': ${schema.error}`);
  return { name, description, schema: schema.schema, check: argumentsCheck(schema.schema) };
}

/** The arguments object of a call from the engine's argument text (user-arguments.ts wrote it). */
export function argumentsOf(param: string | null, text: string): Record<string, unknown> | null {
  if (param !== null) return { [param]: text };
  try {
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

/** `promise`, or `onTimeout()`'s error after `ms` milliseconds (the timer never keeps the process up). */
export async function within<T>(promise: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
    timer.unref();
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** An error's message on one line (a server's may hold pretty-printed JSON), short enough for a tool result. */
export function firstLine(err: unknown, limit = 300): string {
  return (err instanceof Error ? err.message : String(err)).replace(/\s+/g, ' ').trim().slice(0, limit);
}
