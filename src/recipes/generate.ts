/**
 * `sharp generate`: prints the continuation of --prompt by the checkpoint in --model;
 * with --chat the prompt is a user message rendered through the chat template. --max-new-tokens is
 * capped (with a warning) by the positions the model has left after the prompt; long generations
 * print a progress line every PROGRESS_EVERY tokens on stderr.
 * Flags: src/recipes/commands.ts.
 */
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { generate } from '../generation/generate.ts';
import { renderPromptIds } from '../tokenizer/chat-prompt.ts';
import { checkSampling } from '../generation/sampling.ts';
import { Rng } from '../random/rng.ts';
import { UserError } from '../errors.ts';
import { loadModel } from '../eval/run/model.ts';
import { ADAPTER_CONFIG } from '../model/io/peft.ts';
import type { GenerateFlags } from './commands.ts';
import { configFrom, withRun } from './stages/run-setup.ts';

/** Long generations print a progress line every this many tokens (stderr). */
export const PROGRESS_EVERY = 256;

export async function run(opts: GenerateFlags): Promise<void> {
  const dir = resolve(opts.model);
  if (!existsSync(join(dir, 'config.json'))) {
    const hint = existsSync(join(dir, ADAPTER_CONFIG))
      ? `; it holds LoRA adapters: merge them into a whole model first (sharp export --merge --model ${dir} --out DIR)`
      : '';
    throw new UserError(`--model ${dir}: no config.json there (expected a Hugging Face checkpoint folder)${hint}`);
  }
  if (!existsSync(join(dir, 'tokenizer.json'))) throw new UserError(`--model ${dir}: no tokenizer.json there`);
  const sampling = { temperature: opts.temperature, topK: opts.topK, topP: opts.topP };
  try {
    checkSampling(sampling);
  } catch (err) {
    throw new UserError((err as Error).message);
  }
  const maxNewTokens = opts.maxNewTokens;
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1)
    throw new UserError(`--max-new-tokens must be a positive integer (got ${maxNewTokens})`);

  // No config file: the schema defaults (run.backend, run.threads) under SHARP_BACKEND and --backend.
  await withRun({ cfg: configFrom({}), backendFlag: opts.backend }, async () => {
    const { model, tokenizer: tok } = await loadModel(dir);
    try {
      const promptIds = opts.chat
        ? renderPromptIds(tok, [{ role: 'user', content: opts.prompt }])
        : tok.encode(opts.prompt);
      if (promptIds.length === 0) throw new UserError('--prompt encodes to no tokens');
      // Every generated token takes a position: the model's max_position_embeddings bound the total.
      const positions = model.config.maxPositions;
      const room = positions - promptIds.length;
      if (room < 1)
        throw new UserError(
          `--prompt is ${promptIds.length} tokens: the model holds at most ${positions} positions ` +
            `(max_position_embeddings), so nothing can be generated`,
        );
      let limit = maxNewTokens;
      if (limit > room) {
        process.stderr.write(
          `sharp generate: --max-new-tokens ${maxNewTokens} is more than the model has room for (${positions} ` +
            `positions - ${promptIds.length} prompt tokens): generating at most ${room}\n`,
        );
        limit = room;
      }
      const t0 = performance.now();
      const onStep = (step: number, live: number): void => {
        if (live > 0 && step % PROGRESS_EVERY === 0)
          process.stderr.write(
            `sharp generate: ${step}/${limit} tokens (${(step / ((performance.now() - t0) / 1000)).toFixed(1)} ` +
              `tok/s)\n`,
          );
      };
      const [out] = await generate(model, [{ promptIds, maxNewTokens: limit }], {
        ...sampling,
        rng: new Rng(opts.seed),
        eosIds: tok.eosIds,
        padId: tok.padId,
        decoder: tok,
        onStep,
      });
      process.stdout.write(`${out?.text ?? ''}\n`);
    } finally {
      model.dispose();
    }
  });
}
