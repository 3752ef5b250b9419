import { z } from 'zod';
import { parseJsonl } from '../../fs/jsonl.ts';
import type { Transcript } from '../../rollout/transcripts.ts';
import { readTextFile } from '../../fs/read-file.ts';

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
    text = readTextFile(file);
  } catch (err) {
    throw new Error(`${file}: cannot read transcripts (${String((err as Error).message).split('\n')[0]})`);
  }
  const out: Transcript[] = parseJsonl(text, file).map(({ line, value }) => {
    const r = lineSchema.safeParse(value);
    if (!r.success) {
      const issue = r.error.issues[0];
      throw new Error(`${file}:${line}: field '${issue?.path.join('.') ?? '?'}': ${issue?.message ?? 'invalid'}`);
    }
    return r.data;
  });
  if (out.length === 0) throw new Error(`${file}: no transcripts`);
  return out;
}
