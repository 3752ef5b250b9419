import type { Config } from '../../config/schema.ts';
import type { Episode } from '../../data/episode.ts';
import { getBenchmark } from '../../eval/benchmarks.ts';
import { benchmarkFile, readLimited } from '../../eval/session.ts';
import { UserError } from '../../errors.ts';
import { bf16Ready } from '../../model/bf16.ts';
import { bf16BaseOf } from '../../train/optim/trainable.ts';
import { startBackend } from './run-setup.ts';
import { loadTrainData } from './train-data.ts';
import { checkLikelihoodData } from '../../credit/likelihood-scorer.ts';

/**
 * Checks that need more than the config (the backend's kernels, the data's decompositions) but
 * write nothing, run by the commands before they create their run or output folder: a command
 * refused here leaves nothing behind.
 */

/**
 * A bfloat16 base (train.lora.baseDtype) needs the native kernels' bfloat16 products, which only
 * the backend that starts can tell: it is started here, before the run folder (the run starts the
 * same one again at no cost), instead of failing once the model loads after minutes of work.
 */
export async function checkBf16Base(cfg: Config, backendFlag: string | undefined, command: string): Promise<void> {
  if (!bf16BaseOf(cfg.train)) return;
  // Its warnings are the run's to log: the run's own start repeats them.
  const backend = await startBackend(backendFlag, cfg, () => {});
  if (!bf16Ready())
    throw new UserError(
      `${command}: train.lora.baseDtype bfloat16 needs the native kernels' bfloat16 products, and the ` +
        `${backend.backend} backend (native kernels: ${backend.native}) has none; use run.backend native (or wasm ` +
        'with the native kernels built) or train.lora.baseDtype float32',
    );
}

/** What of the credit config needs each episode's gold decomposition, or null (mirrors credit/plan.ts). */
export function goldCreditUse(c: Config['credit']): string | null {
  if (c.method === 'oracle') return 'credit.method oracle';
  if (c.counterfactual === 'repair' && c.method !== 'broadcast' && c.method !== 'matpo')
    return 'credit.counterfactual repair';
  return null;
}

/** Whether the credit config scores the gold final answer's likelihood (credit.value likelihood). */
export const usesLikelihood = (c: Config['credit']): boolean =>
  c.value === 'likelihood' && (c.method === 'loo' || c.method === 'shapley');

/**
 * Refuses `episodes` when the credit config needs gold decompositions and one of them has none, or
 * scores the gold answer's likelihood and one of them has no gold answer to score.
 */
export function checkDecompositions(
  episodes: readonly Episode[],
  credit: Config['credit'],
  where: string,
  command: string,
): void {
  if (usesLikelihood(credit)) checkLikelihoodData(episodes, `${command}: ${where}`);
  const what = goldCreditUse(credit);
  if (what === null) return;
  const bare = episodes.find((e) => !e.decomposition || e.decomposition.length === 0);
  if (bare)
    throw new UserError(
      `${command}: ${what} needs a gold decomposition (question_decomposition) for every episode, and episode ` +
        `${bare.id} of ${where} has none; use data with decompositions (the synthetic world, MuSiQue) or another ` +
        'credit setting',
    );
}

/**
 * The training episodes of a benchmark file against the credit config; the synthetic world always
 * has decompositions. Reads the file once more than the run does, which is cheap beside a run.
 */
export function checkTrainDecompositions(cfg: Config, command: string): void {
  if (cfg.data.source === 'synthetic' || (goldCreditUse(cfg.credit) === null && !usesLikelihood(cfg.credit))) return;
  let train: Episode[];
  try {
    train = loadTrainData(cfg.data).train;
  } catch (err) {
    if (err instanceof UserError) throw new UserError(`${command}: ${err.message}`);
    throw err;
  }
  checkDecompositions(train, cfg.credit, `data.path ${cfg.data.path}`, command);
}

/**
 * `sharp eval --credit`: the evaluated episodes against the credit config, read before the output
 * folder is claimed. A file that cannot be read is left to the session, which names the problem.
 */
export function checkEvalCredit(
  cfg: Config,
  o: { bench: string; data: string | undefined; limit: number; repoRoot: string },
): void {
  if (goldCreditUse(cfg.credit) === null && !usesLikelihood(cfg.credit)) return;
  const bench = getBenchmark(o.bench);
  const file = benchmarkFile(bench, o.data, o.repoRoot);
  let episodes: Episode[];
  try {
    episodes = readLimited(bench, file, o.limit);
  } catch {
    return;
  }
  checkDecompositions(episodes, cfg.credit, file, 'eval --credit');
}

/**
 * `sharp eval --policy expert`: the scripted expert follows each episode's gold decomposition, so an
 * episode without one is refused before the output folder is claimed. A file that cannot be read is
 * left to the session, which names the problem.
 */
export function checkExpertData(o: { bench: string; data: string | undefined; limit: number; repoRoot: string }): void {
  const bench = getBenchmark(o.bench);
  let episodes: Episode[];
  try {
    episodes = readLimited(bench, benchmarkFile(bench, o.data, o.repoRoot), o.limit);
  } catch {
    return;
  }
  const bad = episodes.find((e) => !e.decomposition || e.decomposition.length === 0);
  if (bad)
    throw new UserError(
      `eval --policy expert: episode ${bad.id} of ${o.bench} has no gold decomposition (the scripted expert ` +
        'follows one; use --policy lm)',
    );
}
