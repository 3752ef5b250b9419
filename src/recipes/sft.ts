import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { UserError } from '../errors.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import { readTranscripts } from '../train/supervised/transcripts-jsonl.ts';
import type { SftFlags } from './commands.ts';
import { inRunDir, resumableConfig, withRun } from './stages/run-setup.ts';
import { checkModelOut } from './stages/save-model.ts';
import { sftStage } from './stages/sft-on-transcripts.ts';
import { checkPositions } from './stages/positions.ts';
import { checkBf16Base } from './stages/preflight.ts';

/**
 * `sharp sft --config X`: supervised fine-tuning of the checkpoint at model.path on
 * the transcripts at train.sft.data (JSONL chat messages with per-message loss masks, as
 * `sharp data expert` writes them) for train.sft.steps steps. The result is saved atomically as a
 * complete HF folder `<run>/model/` (with the tokenizer files); per-step metrics in
 * `<run>/sft-metrics.jsonl`; checkpoints in `<run>/sft-checkpoints/` every train.sft.checkpointEvery
 * steps, from which `--resume` continues a killed run.
 * Flags: src/recipes/commands.ts.
 */
export async function run(opts: SftFlags): Promise<void> {
  const { cfg, resuming } = resumableConfig(opts);
  const s = cfg.train.sft;
  if (s.data === '') throw new UserError('sft: train.sft.data (transcripts JSONL) is required');
  if (!existsSync(s.data)) throw new UserError(`sft: train.sft.data not found: ${s.data}`);
  if (s.steps < 1) throw new UserError('sft: train.sft.steps must be >= 1');
  await checkPositions(cfg, 'sft');
  await checkBf16Base(cfg, opts.backend, 'sft');
  const from = resolve(cfg.model.path);
  if (!existsSync(join(from, 'config.json')))
    throw new UserError(`sft: no checkpoint at model.path '${cfg.model.path}' (config.json missing)`);
  let transcripts;
  try {
    transcripts = readTranscripts(s.data);
  } catch (err) {
    throw new UserError(`sft: ${(err as Error).message}`);
  }
  await inRunDir(opts, cfg, resuming, (runDir) =>
    withRun({ cfg, backendFlag: opts.backend, logDir: runDir }, async ({ log, backend }) => {
      log.info(
        { runDir, backend: backend.backend, native: backend.native, transcripts: transcripts.length, resume: resuming },
        'sft',
      );
      checkModelOut(join(runDir, 'model'), from);
      const tokenizer = await Tokenizer.load(from);
      const res = await sftStage({
        cfg,
        fromDir: from,
        toDir: join(runDir, 'model'),
        runDir,
        tokenizer,
        transcripts,
        onResume: (step, dir) => log.info({ step, dir }, 'resuming SFT from its latest checkpoint'),
        onStep: (step, st) => {
          if (step === 1 || step % 25 === 0 || step === s.steps) log.info({ step, loss: st['sft/loss'] }, 'sft');
        },
      });
      log.info(
        {
          sequences: res.sequences,
          dropped: res.dropped,
          firstLoss: res.firstLoss,
          lastLoss: res.lastLoss,
          seconds: res.seconds,
        },
        'sft done',
      );
      process.stdout.write(
        `sft: ${res.steps} steps on ${res.sequences} sequences, loss ${res.firstLoss.toFixed(3)} -> ` +
          `${res.lastLoss.toFixed(3)}; saved ${res.dir}\n`,
      );
    }),
  );
}
