import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readPreferencePairs } from '../credit/pairs-jsonl.ts';
import { UserError } from '../errors.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import { configHash, DPO_CHECKPOINTS_DIR } from '../train/checkpoints/checkpoint.ts';
import { runDpo } from '../train/supervised/dpo-loop.ts';
import { phaseResumePoint } from '../train/checkpoints/phase-checkpoints.ts';
import { checkModelOut, companionFiles, saveModelAtomic } from './stages/save-model.ts';
import type { DpoFlags } from './commands.ts';
import { inRunDir, resumableConfig, withRun } from './stages/run-setup.ts';
import { optimizerSettings } from '../train/optim/optimizer.ts';
import { trainingSetup } from '../train/optim/trainable.ts';
import { checkPositions } from './stages/positions.ts';
import { checkBf16Base } from './stages/preflight.ts';

/**
 * `sharp dpo --config X`: DPO of the checkpoint at model.path on the preference
 * pairs at train.dpo.data (the credit module's failure-path pairs, credit/pairs-jsonl.ts), against a
 * frozen reference (a second copy of the same checkpoint; with train.lora the base with its adapters
 * disabled, and the adapters also saved apart in `<run>/adapter/`), for train.dpo.steps steps with
 * beta = train.dpoBeta. The result is saved atomically as `<run>/model/`; metrics in
 * `<run>/dpo-metrics.jsonl`; checkpoints in `<run>/dpo-checkpoints/` every train.dpo.checkpointEvery
 * steps, from which `--resume` continues a killed run (the reference stays model.path).
 * Flags: src/recipes/commands.ts.
 */
export async function run(opts: DpoFlags): Promise<void> {
  const { cfg, resuming } = resumableConfig(opts);
  const d = cfg.train.dpo;
  if (d.data === '') throw new UserError('dpo: train.dpo.data (preference pairs JSONL) is required');
  if (!existsSync(d.data)) throw new UserError(`dpo: train.dpo.data not found: ${d.data}`);
  if (d.steps < 1) throw new UserError('dpo: train.dpo.steps must be >= 1');
  await checkPositions(cfg, 'dpo');
  await checkBf16Base(cfg, opts.backend, 'dpo');
  const from = resolve(cfg.model.path);
  if (!existsSync(join(from, 'config.json')))
    throw new UserError(`dpo: no checkpoint at model.path '${cfg.model.path}' (config.json missing)`);
  let pairs;
  try {
    pairs = readPreferencePairs(d.data);
  } catch (err) {
    throw new UserError(`dpo: ${(err as Error).message.split('\n')[0]}`);
  }
  if (pairs.length === 0) throw new UserError(`dpo: ${d.data} holds no preference pairs`);
  await inRunDir(opts, cfg, resuming, (runDir) =>
    withRun({ cfg, backendFlag: opts.backend, logDir: runDir }, async ({ log, backend }) => {
      log.info(
        { runDir, backend: backend.backend, native: backend.native, pairs: pairs.length, resume: resuming },
        'dpo',
      );
      checkModelOut(join(runDir, 'model'), from, 'dpo');
      const tokenizer = await Tokenizer.load(from);
      const hash = configHash(cfg);
      const resume = await phaseResumePoint(runDir, DPO_CHECKPOINTS_DIR, hash);
      if (resume) log.info({ step: resume.state.step, dir: resume.dir }, 'resuming DPO from its latest checkpoint');
      const model = await CausalLM.load(resume?.dir ?? from);
      // With LoRA the reference is the base with adapters disabled (runDpo's default): no second copy.
      const ref =
        cfg.train.lora.rank > 0
          ? undefined
          : await CausalLM.load(from).catch((err: unknown) => {
              model.dispose();
              throw err;
            });
      try {
        const t0 = performance.now();
        const res = await runDpo({
          model,
          ref,
          enc: tokenizer,
          padId: tokenizer.padId,
          pairs,
          steps: d.steps,
          batch: d.batch,
          optimizer: optimizerSettings(cfg.train, 'dpo'),
          training: trainingSetup(cfg.train),
          beta: cfg.train.dpoBeta,
          microBatch: cfg.train.microBatch,
          gradClip: cfg.train.gradClip,
          seed: cfg.run.seed,
          maxTokens: cfg.rollout.maxContext,
          runDir,
          checkpoints: {
            runDir,
            folder: DPO_CHECKPOINTS_DIR,
            every: d.checkpointEvery > 0 ? d.checkpointEvery : cfg.train.checkpointEvery,
            keep: cfg.train.keepCheckpoints,
            configHash: hash,
            copyFiles: companionFiles(from),
            resume,
          },
        });
        // with LoRA: the adapters merged in
        const dir = await saveModelAtomic(model, join(runDir, 'model'), from, 'dpo');
        if (model.lora) await model.saveAdapters(join(runDir, 'adapter')); // and apart, in PEFT's layout
        const loss = (r: Record<string, number>): string =>
          typeof r['dpo/loss'] === 'number' ? r['dpo/loss'].toFixed(4) : 'n/a';
        log.info(
          {
            pairs: res.pairs,
            dropped: res.dropped,
            first: res.first,
            last: res.last,
            seconds: (performance.now() - t0) / 1000,
          },
          'dpo done',
        );
        process.stdout.write(
          `dpo: ${res.steps} steps on ${res.pairs} pairs, loss ${loss(res.first)} -> ${loss(res.last)}; saved ${dir}\n`,
        );
      } finally {
        model.dispose();
        ref?.dispose();
      }
    }),
  );
}
