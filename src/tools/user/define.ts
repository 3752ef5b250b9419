import type { z } from 'zod';
import type { ObjectSchema } from './schema.ts';

/**
 * A tool of the user's own, written in a TypeScript or JavaScript module and listed in
 * `rollout.tools` as `{ module: './my-tool.ts' }` (docs/extending.md, "Tools"). The module runs in a
 * child process of its own (module-tool.ts), so what it can reach is what any Node program can: it is
 * the user's code, bounded in time and heap, not sandboxed.
 */
export interface ToolContext {
  /** The tool's name, as the agents call it. */
  readonly tool: string;
  /** Epoch milliseconds at which this call is cut off (the tool's `timeoutMs` from its start). */
  readonly deadline: number;
}

/** The arguments `run` receives: the zod schema's output type, or a JSON object for a JSON Schema. */
export type ToolArgs<P> = P extends z.ZodType ? z.output<P> : Record<string, unknown>;

export interface ToolDefinition<P extends z.ZodType | ObjectSchema = z.ZodType | ObjectSchema> {
  /** How agents call it: letters, digits, _ and -; not a built-in's name, `delegate` or `answer`. */
  readonly name: string;
  /** One or two sentences the agents read in their tool list. */
  readonly description: string;
  /** A zod object schema or a JSON Schema of type object: the call's arguments are checked against it. */
  readonly parameters: P;
  /** The tool's answer as text (what the agent reads inside the result wrapper); a throw is an error result. */
  run(args: ToolArgs<P>, ctx: ToolContext): string | Promise<string>;
}

/**
 * Types a tool for a module's export: `export default defineTool({ name, description, parameters,
 * run })`. It returns the definition unchanged; the checks happen when the run starts, in the tool's
 * own process, and a module that exports no tool, or a schema that is not an object, stops the
 * command with one line before any run folder exists.
 */
export function defineTool<const P extends z.ZodType | ObjectSchema>(def: ToolDefinition<P>): ToolDefinition<P> {
  return def;
}
