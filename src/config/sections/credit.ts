import { z } from 'zod';

/** Per-agent credit (SHARP and "Who Gets the Reward & Who Gets the Blame?"). */
export const creditSection = z
  .strictObject({
    method: z.enum(['loo', 'shapley', 'none']).default('loo').describe('loo: SHARP leave-one-out counterfactuals; shapley: exact (K<=6) or sampled Shapley; none: broadcast only.'),
    replayMode: z.enum(['final', 'replan']).default('final').describe('final: regenerate only the answer after masking; replan: regenerate the planner from the masked report on.'),
    replays: z.number().int().positive().default(1).describe('Counterfactual replays averaged per coalition.'),
    placeholder: z.string().default('[no report]').describe('Text that replaces a masked worker report.'),
    shapleyExactMaxWorkers: z.number().int().min(1).max(10).default(6).describe('Exact Shapley up to this many workers, permutation sampling beyond.'),
    shapleyPermutations: z.number().int().positive().default(32).describe('Permutations sampled when Shapley is not exact.'),
    shapleyMode: z.enum(['auto', 'exact', 'sampled']).default('auto').describe('auto: exact up to shapleyExactMaxWorkers, sampled beyond; exact/sampled force one (exact is refused past 12 workers: 4096 replays).'),
    success: z.enum(['em', 'f1', 'cover_em']).default('em').describe('Success function R: exact match, F1 >= threshold, or cover-EM.'),
    f1Threshold: z.number().min(0).max(1).default(0.5).describe('F1 needed for success when success = f1.'),
    weights: z
      .strictObject({
        broadcast: z.number().default(1.0).describe('w_b: weight of the broadcast accuracy reward.'),
        marginal: z.number().default(0.9).describe('w_mc: weight of the marginal (LOO/Shapley) credit.'),
        tool: z.number().default(0.1).describe('w_tool: weight of the tool-validity reward.'),
      })
      .prefault({}),
    toolGate: z.boolean().default(false).describe('Count the tool reward only when the outcome succeeded.'),
    noToolCallsValue: z.number().min(0).max(1).default(0).describe('R_tool of an agent that made no tool calls.'),
    messageLevel: z.boolean().default(false).describe('Split each agent credit into signed per-message shares (judge labels); sharp train gives each message its own advantage from its share.'),
    messageShareBeta: z.number().min(0).default(1).describe('beta in r_t = C/T + beta|C|(s_t - mean s)/T (src/credit/message-shares.ts); 0 = even split, bound (1+2beta)|C|/T.'),
    failurePairs: z.boolean().default(false).describe('On failure: localise the first error and write DPO preference pairs.'),
    failureResamples: z.number().int().positive().default(4).describe('Alternatives resampled for the first error until the judge accepts one (no pair if none is).'),
    judge: z.enum(['rule', 'llm']).default('rule').describe('rule: gold sub-answers; llm: a yes/no question to a model.'),
    hopMatchF1: z.number().min(0).max(1).default(0.5).describe('Rule judge: token F1 a subtask needs with a gold hop question to be judged against that hop.'),
    judgeMargin: z.number().min(0).default(0).describe('LLM judge: |logp(yes) - logp(no)| under this labels a message 0 (undecided).'),
    recordGroups: z.number().int().min(0).default(2).describe('Groups per training step (eval: episodes per batch) saved with their credit under <run>/trajectories/ for `sharp view`; 0 = none.'),
  })
  .describe('Credit assignment.');
