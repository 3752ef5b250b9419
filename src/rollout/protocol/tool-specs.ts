import type { ObjectSchema } from '../../tools/user/schema.ts';
import type { Role } from '../types.ts';

/**
 * The built-in actions agents can take, with the one string argument each takes. Both protocols render
 * these (tags: `<name>arg</name>`; json: a function schema with one required string property); user
 * tools (rollout.tools) add specs with their own JSON Schema (tool-catalog.ts).
 */
export type ActionName = 'delegate' | 'search' | 'calculate' | 'code' | 'answer';

export interface ToolSpec {
  /** An ActionName for the built-ins; a user tool's own name otherwise. */
  name: string;
  /**
   * Name of the single string argument (json protocol `arguments` key); for a user tool with several
   * arguments, '' (the tags protocol then takes a JSON object inside the tag).
   */
  param: string;
  description: string;
  paramDescription: string;
  /**
   * A user tool's arguments schema, rendered as given in the json protocol. Absent for the built-ins,
   * whose prompts stay byte-identical to those the shipped models were trained on.
   */
  schema?: ObjectSchema;
}

export const TOOL_SPECS: Readonly<Record<ActionName, ToolSpec>> = {
  delegate: {
    name: 'delegate',
    param: 'subtask',
    description: 'Give one single-hop subtask to a worker. Returns the worker report.',
    paramDescription: 'A self-contained question a worker can answer with search.',
  },
  search: {
    name: 'search',
    param: 'query',
    description: 'Search the paragraphs. Returns the best matching paragraphs as [idx] Title: text.',
    paramDescription: 'Search words.',
  },
  calculate: {
    name: 'calculate',
    param: 'expression',
    description: 'Evaluate an arithmetic expression, e.g. 1987 - 1950.',
    paramDescription: 'A math expression.',
  },
  code: {
    name: 'code',
    param: 'code',
    description: 'Run a JavaScript program in a sandbox. Returns what it prints with console.log.',
    paramDescription: 'JavaScript source.',
  },
  answer: {
    name: 'answer',
    param: 'answer',
    description: 'Give your final answer and stop.',
    paramDescription: 'The short final answer.',
  },
};

export const ACTION_NAMES: readonly ActionName[] = ['delegate', 'search', 'calculate', 'code', 'answer'];

/**
 * Tools each role may call (the planner only delegates). `answer` is always allowed. The workers' are
 * the default of rollout.tools; a tool list replaces them (tool-catalog.ts).
 */
export const ROLE_TOOLS: Readonly<Record<Role, readonly Exclude<ActionName, 'answer'>[]>> = {
  planner: ['delegate'],
  worker: ['search', 'calculate', 'code'],
};

/**
 * The agent system a trajectory runs (`sharp eval --agents`): multi = planner +
 * workers; single = one agent with the worker tools on the whole question; direct = one agent that
 * answers at once, no tools. The root agent (agent 0, role planner: it gets the question and gives
 * the final answer) has these tools; workers exist only under multi.
 */
export type AgentsMode = 'multi' | 'single' | 'direct';

export const ROOT_TOOLS: Readonly<Record<AgentsMode, readonly Exclude<ActionName, 'answer'>[]>> = {
  multi: ROLE_TOOLS.planner,
  single: ROLE_TOOLS.worker,
  direct: [],
};

/** Specs shown for a tool set: the tools, then `answer`. */
function toolSpecs(tools: readonly Exclude<ActionName, 'answer'>[]): ToolSpec[] {
  return [...tools.map((n) => TOOL_SPECS[n]), TOOL_SPECS.answer];
}

/** Specs shown to a role: its tools, then `answer`. */
export function roleSpecs(role: Role): ToolSpec[] {
  return toolSpecs(ROLE_TOOLS[role]);
}
