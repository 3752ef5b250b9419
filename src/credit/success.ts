import { coverExactMatch, exactMatch, f1Score } from '../data/answers/squad.ts';

/**
 * Success functions R: 1 when the final
 * answer matches gold, else 0. Plain typed functions in a registry chosen once from
 * `credit.success`. A null prediction (the planner never answered) and an
 * empty answer list are failures. The SQuAD normalisation, EM, F1 and cover-EM are the benchmark
 * metrics' own (src/data/answers/squad.ts) so that training reward and evaluation agree.
 */
export type SuccessFn = (prediction: string | null, answers: readonly string[]) => number;

export type SuccessName = 'em' | 'f1' | 'cover_em';

export interface SuccessOptions {
  /** F1 needed for success when the function is `f1`. */
  f1Threshold: number;
}

/** Exact match after SQuAD normalisation against the answer or any alias. */
export const emSuccess: SuccessFn = (prediction, answers) =>
  prediction !== null && answers.some((a) => exactMatch(prediction, a) === 1) ? 1 : 0;

/** Max F1 over answer + aliases reaches the threshold. */
export function f1Success(threshold: number): SuccessFn {
  if (!(threshold >= 0 && threshold <= 1)) throw new Error(`credit.f1Threshold: ${threshold} is not in [0, 1]`);
  return (prediction, answers) => {
    if (prediction === null || answers.length === 0) return 0;
    const best = Math.max(...answers.map((a) => f1Score(prediction, a)));
    return best >= threshold ? 1 : 0;
  };
}

/** Cover-EM: a normalised gold occurs in the normalised prediction on token boundaries. */
export const coverEmSuccess: SuccessFn = (prediction, answers) =>
  prediction === null ? 0 : coverExactMatch(prediction, answers);

const registry: Record<SuccessName, (o: SuccessOptions) => SuccessFn> = {
  em: () => emSuccess,
  f1: (o) => f1Success(o.f1Threshold),
  cover_em: () => coverEmSuccess,
};

/** The success function named in the config. */
export function successFunction(name: SuccessName, opts: SuccessOptions): SuccessFn {
  const make = (registry as Record<string, ((o: SuccessOptions) => SuccessFn) | undefined>)[name];
  if (!make) throw new Error(`credit.success: unknown success function '${name}' (expected em, f1 or cover_em)`);
  return make(opts);
}
