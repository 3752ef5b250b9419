import { readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Transcript } from '../../rollout/transcripts.ts';

/**
 * Reads SFT transcripts: JSONL, one conversation per line, `{"messages": [{role, content, train}]}`
 * as `sharp data expert` writes them (rollout/transcripts.ts), with an optional positive loss
 * `weight` per message (default 1). A bad line is a one-line error
 * naming the file, line and field.
 */
const lineSchema = z.strictObject({
  messages: z
    .array(
      z.strictObject({
        role: z.enum(['system', 'user', 'assistant', 'tool']),
        content: z.string(),
        train: z.boolean(),
        weight: z.number().positive().finite().optional(),
      }),
    )
    .min(1),
});

export function readTranscripts(file: string): Transcript[] {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new Error(`${file}: cannot read transcripts (${String((err as Error).message).split('\n')[0]})`);
  }
  const out: Transcript[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch {
      throw new Error(`${file}:${i + 1}: not valid JSON`);
    }
    const r = lineSchema.safeParse(raw);
    if (!r.success) {
      const issue = r.error.issues[0];
      throw new Error(`${file}:${i + 1}: field '${issue?.path.join('.') ?? '?'}': ${issue?.message ?? 'invalid'}`);
    }
    out.push(r.data);
  });
  if (out.length === 0) throw new Error(`${file}: no transcripts`);
  return out;
}
