import { z } from 'zod';

/** Per-agent credit (DESIGN.md section 5; SHARP and "Who Gets the Reward & Who Gets the Blame?"). */
export const creditSection = z
  .strictObject({
    method: z.enum(['loo', 'shapley', 'none']).default('loo').describe('loo: SHARP leave-one-out counterfactuals; shapley: exact (K<=6) or sampled Shapley; none: broadcast only.'),
    replayMode: z.enum(['final', 'replan']).default('final').describe('final: regenerate only the answer after masking; replan: regenerate the planner from the masked report on.'),
    replays: z.number().int().positive().default(1).describe('Counterfactual replays averaged per coalition.'),
    placeholder: z.string().default('[no report]').describe('Text that replaces a masked worker report.'),
    shapleyExactMaxWorkers: z.number().int().min(1).max(10).default(6).describe('Exact Shapley up to this many workers, permutation sampling beyond.'),
    shapleyPermutations: z.number().int().positive().default(32).describe('Permutations sampled when Shapley is not exact.'),
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
    messageLevel: z.boolean().default(false).describe('Split each agent credit into signed per-message shares (judge labels).'),
    failurePairs: z.boolean().default(false).describe('On failure: localise the first error and write DPO preference pairs.'),
    judge: z.enum(['rule', 'llm']).default('rule').describe('rule: gold sub-answers; llm: a yes/no question to a model.'),
  })
  .describe('Credit assignment.');
