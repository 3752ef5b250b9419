import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { UserError } from '../errors.ts';
import { writeFileAtomic } from '../fs/atomic.ts';
import { parseJsonl } from '../fs/jsonl.ts';
import type { Trajectory } from './types.ts';

/**
 * Trajectories as JSONL (one trajectory per line), written atomically and read back with validation,
 * so a trajectory file from another run (or hand-edited) fails with one line naming file, line and
 * field instead of failing somewhere in the credit module.
 */

const toolCallSchema = z.strictObject({
  name: z.string(),
  args: z.string(),
  valid: z.boolean(),
  error: z.string().optional(),
  result: z.string().optional(),
  retrievedIdx: z.array(z.number().int()).optional(),
  retrievedIds: z.array(z.string()).optional(),
  workerAgent: z.number().int().nonnegative().optional(),
  masked: z.boolean().optional(),
});

const messageSchema = z.strictObject({
  index: z.number().int().nonnegative(),
  agent: z.number().int().nonnegative(),
  role: z.enum(['planner', 'worker']),
  chatRole: z.enum(['system', 'user', 'assistant', 'tool']),
  text: z.string(),
  tokenIds: z.array(z.number().int().nonnegative()),
  logprobs: z.array(z.number()),
  toolCalls: z.array(toolCallSchema),
  finishReason: z.enum(['stop', 'eos', 'length']).optional(),
});

const agentSchema = z.strictObject({
  id: z.number().int().nonnegative(),
  role: z.enum(['planner', 'worker']),
  delegation: z.number().int().nonnegative().nullable(),
  subtask: z.string().optional(),
  answer: z.string().nullable(),
  endReason: z.enum(['answer', 'max_turns', 'max_delegations', 'max_context', 'max_new_tokens', 'no_action', 'error']),
});

const trajectorySchema = z.strictObject({
  id: z.string(),
  episodeId: z.string(),
  sample: z.number().int().nonnegative(),
  messages: z.array(messageSchema),
  agents: z.array(agentSchema),
  finalAnswer: z.string().nullable(),
});

/** Cross-field checks the schema cannot express; returns the first problem or null. */
function consistency(t: Trajectory): string | null {
  for (const [i, m] of t.messages.entries()) {
    if (m.index !== i) return `messages.${i}.index: is ${m.index}, expected ${i}`;
    if (m.agent >= t.agents.length) return `messages.${i}.agent: no agent ${m.agent}`;
    if (m.tokenIds.length !== m.logprobs.length)
      return `messages.${i}.logprobs: ${m.logprobs.length} values for ${m.tokenIds.length} token ids`;
  }
  for (const [i, a] of t.agents.entries()) if (a.id !== i) return `agents.${i}.id: is ${a.id}, expected ${i}`;
  return null;
}

export function serializeTrajectories(trajs: readonly Trajectory[]): string {
  return trajs.map((t) => JSON.stringify(t)).join('\n') + (trajs.length > 0 ? '\n' : '');
}

export function writeTrajectories(file: string, trajs: readonly Trajectory[]): void {
  writeFileAtomic(file, serializeTrajectories(trajs));
}

export function parseTrajectories(text: string, file = '<input>'): Trajectory[] {
  return parseJsonl(text, file, { error: UserError }).map(({ line, value: raw }) => {
    const where = `${file}:${line}`;
    const parsed = trajectorySchema.safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new UserError(`${where}: ${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid trajectory'}`);
    }
    const problem = consistency(parsed.data);
    if (problem) throw new UserError(`${where}: ${problem}`);
    return parsed.data;
  });
}

export function readTrajectories(file: string): Trajectory[] {
  if (!existsSync(file)) throw new UserError(`trajectories: file not found: ${file}`);
  return parseTrajectories(readFileSync(file, 'utf8'), file);
}
