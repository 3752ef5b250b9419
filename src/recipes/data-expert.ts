import { prepareOutFile } from '../fs/out-dir.ts';
import { loadConfig } from '../config/load.ts';
import type { Episode } from '../data/episode.ts';
import { readMusique } from '../data/readers/musique.ts';
import { writeFileAtomic } from '../fs/atomic.ts';
import { rollout } from '../rollout/engine.ts';
import { expertPolicy } from '../rollout/scripted/expert.ts';
import { toTranscripts } from '../rollout/transcripts.ts';
import { closeCalculateWorker } from '../tools/calculate.ts';
import { closeCodeSandbox } from '../tools/code.ts';
import { UserError } from '../errors.ts';

/**
 * `sharp data expert --in FILE --out transcripts.jsonl`: runs the scripted expert on
 * synthetic episodes (MuSiQue-format JSONL, e.g. from `sharp data synth`) through the real engine,
 * protocol and tools, and writes its transcripts for SFT: one JSONL line per agent conversation,
 * `{"messages": [{"role", "content", "train"}]}` with train = true on assistant messages. Only
 * trajectories whose final answer is the gold answer are written (all of them for the expert).
 *
 * export const options = {
 *   in: '--in <file>        episodes JSONL in the MuSiQue format (required)',
 *   out: '--out <file>      transcripts JSONL (required; written atomically)',
 *   config: '-c, --config <file>  optional YAML config: rollout.protocol, prompts and limits are used',
 *   set: '--set <key=value>  optional config overrides (repeatable)',
 * }
 */

/** Episodes per engine run: bounds memory for large inputs. */
const CHUNK = 500;

function stringOption(opts: Record<string, unknown>, key: string, flag: string): string {
  const v = opts[key];
  if (typeof v !== 'string' || v.length === 0) throw new UserError(`data expert: ${flag} <file> is required`);
  return v;
}

function readEpisodes(file: string): Episode[] {
  try {
    return readMusique(file);
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError(`data expert: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`);
  }
}

export async function run(opts: Record<string, unknown>): Promise<void> {
  const input = stringOption(opts, 'in', '--in');
  const out = prepareOutFile(stringOption(opts, 'out', '--out'), 'data expert: --out');
  const cfg = loadConfig({ file: typeof opts.config === 'string' ? opts.config : undefined, sets: Array.isArray(opts.set) ? (opts.set as string[]) : [] }).rollout;
  const episodes = readEpisodes(input);
  const bad = episodes.find((e) => !e.decomposition || e.decomposition.length === 0);
  if (bad) throw new UserError(`data expert: ${input}: episode ${bad.id} has no question_decomposition (the expert follows it)`);
  const lines: string[] = [];
  let solved = 0;
  try {
    for (let i = 0; i < episodes.length; i += CHUNK) {
      const chunk = episodes.slice(i, i + CHUNK);
      const { trajectories } = await rollout(expertPolicy(), chunk, { cfg, groupSize: 1 });
      trajectories.forEach((t, j) => {
        const gold = chunk[j]?.answers ?? [];
        if (t.finalAnswer === null || !gold.includes(t.finalAnswer)) return;
        solved++;
        for (const tr of toTranscripts(t)) lines.push(JSON.stringify(tr));
      });
    }
  } finally {
    await closeCodeSandbox();
    await closeCalculateWorker();
  }
  writeFileAtomic(out, lines.length > 0 ? `${lines.join('\n')}\n` : '');
  process.stdout.write(`data expert: solved ${solved}/${episodes.length} episodes; wrote ${lines.length} transcripts to ${out}\n`);
}
