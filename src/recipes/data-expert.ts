/**
 * `sharp data expert --in FILE --out transcripts.jsonl`: runs the scripted expert on
 * synthetic episodes (MuSiQue-format JSONL, e.g. from `sharp data synth`) through the real engine,
 * protocol and tools, and writes its transcripts for SFT: one JSONL line per agent conversation,
 * `{"messages": [{"role", "content", "train"}]}` with train = true on assistant messages. Only
 * solved trajectories are written, "solved" by the configured success function (credit.success), the
 * transcripts and the writer being the ones `sharp train` builds its SFT data with (stages/expert-transcripts.ts).
 * Flags: src/recipes/commands.ts.
 */
import { claimOutFile, recordOutFile } from '../fs/output-guard.ts';
import type { Episode } from '../data/episode.ts';
import { readMusique } from '../data/readers/musique.ts';
import { UserError } from '../errors.ts';
import { expertTranscripts, writeTranscripts } from './stages/expert-transcripts.ts';
import type { DataExpertFlags } from './commands.ts';
import { configFrom, withRun } from './stages/run-setup.ts';

function readEpisodes(file: string): Episode[] {
  try {
    return readMusique(file);
  } catch (err) {
    if (err instanceof UserError) throw err;
    throw new UserError(`data expert: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`);
  }
}

export async function run(opts: DataExpertFlags): Promise<void> {
  const input = opts.in;
  const out = claimOutFile(opts.out, {
    command: 'data expert',
    flag: 'data expert: --out',
    force: opts.force,
    inputs: [{ path: input, what: '--in' }],
  });
  const cfg = configFrom(opts);
  const episodes = readEpisodes(input);
  const bad = episodes.find((e) => !e.decomposition || e.decomposition.length === 0);
  if (bad)
    throw new UserError(
      `data expert: ${input}: episode ${bad.id} has no question_decomposition (the expert follows it)`,
    );
  const data = await withRun({ cfg, tensors: false }, () => expertTranscripts(episodes, cfg));
  writeTranscripts(out, data.transcripts);
  recordOutFile(out, 'data expert');
  process.stdout.write(
    `data expert: solved ${data.solved}/${episodes.length} episodes; wrote ${data.transcripts.length} transcripts ` +
      `to ${out}\n`,
  );
}
