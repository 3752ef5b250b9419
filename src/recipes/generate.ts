import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { generate } from '../generation/generate.ts';
import { renderPromptIds } from '../tokenizer/chat-prompt.ts';
import { checkSampling } from '../generation/sampling.ts';
import { Rng } from '../random/rng.ts';
import { UserError } from '../errors.ts';
import { loadModel } from '../eval/run/model.ts';
import { configFrom, withRun } from './stages/run-setup.ts';

/**
 * `sharp generate`: prints the continuation of --prompt by the checkpoint in --model;
 * with --chat the prompt is a user message rendered through the chat template. --max-new-tokens is
 * capped (with a warning) by the positions the model has left after the prompt; long generations
 * print a progress line every PROGRESS_EVERY tokens on stderr.
 *
 * export const options (flags, camelCased by commander):
 *   --model DIR (required)  --prompt TEXT (required)  --chat
 *   --max-new-tokens N (64)  --temperature T (0 = greedy)  --top-p P (1)  --top-k K (0)  --seed S (0)
 *   --backend auto|tensorflow|wasm|cpu
 */
/** Long generations print a progress line every this many tokens (stderr). */
export const PROGRESS_EVERY = 256;

export const options = ['model', 'prompt', 'chat', 'maxNewTokens', 'temperature', 'topP', 'topK', 'seed', 'backend'] as const;

function numberOpt(opts: Record<string, unknown>, key: string, fallback: number): number {
  const v = opts[key] ?? fallback;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw new UserError(`--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)} must be a number (got ${String(v)})`);
  return v;
}

export async function run(opts: Record<string, unknown>): Promise<void> {
  if (typeof opts.model !== 'string') throw new UserError('--model DIR is required');
  if (typeof opts.prompt !== 'string') throw new UserError('--prompt TEXT is required');
  const dir = resolve(opts.model);
  if (!existsSync(join(dir, 'config.json'))) throw new UserError(`--model ${dir}: no config.json there (expected a Hugging Face checkpoint folder)`);
  if (!existsSync(join(dir, 'tokenizer.json'))) throw new UserError(`--model ${dir}: no tokenizer.json there`);
  const sampling = { temperature: numberOpt(opts, 'temperature', 0), topK: numberOpt(opts, 'topK', 0), topP: numberOpt(opts, 'topP', 1) };
  try {
    checkSampling(sampling);
  } catch (err) {
    throw new UserError((err as Error).message);
  }
  const maxNewTokens = numberOpt(opts, 'maxNewTokens', 64);
  if (!Number.isInteger(maxNewTokens) || maxNewTokens < 1) throw new UserError(`--max-new-tokens must be a positive integer (got ${maxNewTokens})`);

  // No config file: the schema defaults (run.backend, run.threads) under SHARP_BACKEND and --backend.
  await withRun({ cfg: configFrom({}), backendFlag: opts.backend }, async () => {
    const { model, tokenizer: tok } = await loadModel(dir);
    try {
      const promptIds = opts.chat ? renderPromptIds(tok, [{ role: 'user', content: opts.prompt as string }]) : tok.encode(opts.prompt as string);
      if (promptIds.length === 0) throw new UserError('--prompt encodes to no tokens');
      // Every generated token takes a position: the model's max_position_embeddings bound the total.
      const positions = model.config.maxPositions;
      const room = positions - promptIds.length;
      if (room < 1) throw new UserError(`--prompt is ${promptIds.length} tokens: the model holds at most ${positions} positions (max_position_embeddings), so nothing can be generated`);
      let limit = maxNewTokens;
      if (limit > room) {
        process.stderr.write(`sharp generate: --max-new-tokens ${maxNewTokens} is more than the model has room for (${positions} positions - ${promptIds.length} prompt tokens): generating at most ${room}\n`);
        limit = room;
      }
      const t0 = performance.now();
      const onStep = (step: number, live: number): void => {
        if (live > 0 && step % PROGRESS_EVERY === 0) process.stderr.write(`sharp generate: ${step}/${limit} tokens (${(step / ((performance.now() - t0) / 1000)).toFixed(1)} tok/s)\n`);
      };
      const [out] = await generate(model, [{ promptIds, maxNewTokens: limit }], {
        ...sampling,
        rng: new Rng(numberOpt(opts, 'seed', 0)),
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
