import { z } from 'zod';

/**
 * Most workers whose 2^K coalitions exact Shapley enumerates (2^12 = 4096 replays per trajectory):
 * the bound of credit.shapleyExactMaxWorkers, and exact Shapley is refused past it even when forced.
 */
export const MAX_EXACT_SHAPLEY_WORKERS = 12;

/** Most user rewards credit.rewards may name: each is called on every recorded and replayed trajectory. */
const MAX_USER_REWARDS = 16;

/**
 * What a coalition does to the delegations it leaves out (credit.counterfactual; rollout/replay.ts
 * carries it out): `mask` replaces their reports by the placeholder (SHARP); `resample` runs their
 * workers again on the same subtask, fresh samples of the same policy (a per-agent baseline in the
 * spirit of COMA, arXiv 1705.08926); `repair` gives the planner a right report instead (the gold
 * sub-answer), the repair counterfactual of "Who Gets the Blame" (docs/architecture.md, "Credit").
 */
export const COUNTERFACTUALS = ['mask', 'resample', 'repair'] as const;
export type Counterfactual = (typeof COUNTERFACTUALS)[number];

/** Per-agent credit (SHARP and "Who Gets the Reward & Who Gets the Blame?"). */
export const creditSection = z
  .strictObject({
    method: z
      .enum(['loo', 'shapley', 'broadcast', 'matpo', 'oracle'])
      .default('loo')
      .describe(
        'loo: SHARP leave-one-out counterfactual credit per worker; shapley: exact (K<=6) or sampled Shapley; ' +
          "broadcast: the accuracy reward, identical for every agent (nothing per agent); matpo: MATPO's reward, " +
          'accuracy + tool-format validity of the whole trajectory, broadcast (credit.matpo); oracle: a CEILING, ' +
          "not a method: each worker gets 1 when its report is its hop's gold answer (rule judge), else 0, the " +
          'planner the outcome (needs gold decompositions; cf. StepSearch, arXiv 2505.15107).',
      ),
    replayMode: z
      .enum(['final', 'replan'])
      .default('final')
      .describe(
        "final: regenerate only the planner's answer; replan: regenerate the planner after its first delegation, " +
          'running a worker for every subtask that changed. Every coalition, nothing masked included, is replayed ' +
          'the same way.',
      ),
    counterfactual: z
      .enum(COUNTERFACTUALS)
      .default('mask')
      .describe(
        'What a coalition leaves out: mask (SHARP: the report replaced by the placeholder), resample (the worker ' +
          "run again on the same subtask, fresh samples; Delta_m = v(N) - mean over m's resamples, a per-agent " +
          'baseline as in COMA, arXiv 1705.08926, which is non-zero in a failure one worker caused) or repair (the ' +
          'report replaced by the gold sub-answer of the hop the subtask asks, and a delegation the rule judge ' +
          'finds wrong replayed with the gold sub-question: Delta < 0 where a right report would have saved the ' +
          'team; needs gold decompositions). Works with loo and shapley, in both replay modes.',
      ),
    value: z
      .enum(['outcome', 'likelihood'])
      .default('outcome')
      .describe(
        "What a coalition's value v(S) is (loo and shapley): outcome: the mean success of sampled replays (SHARP); " +
          "likelihood: the policy's own mean log-probability per token of the gold final answer, teacher-forced at " +
          "the planner's answer turn with the reports outside S masked and everything else as recorded (information " +
          'gain, IGPO arXiv 2510.14967; no replays, only the final answer needed; counterfactual mask only). ' +
          'docs/architecture.md, "Credit".',
      ),
    likelihood: z
      .strictObject({
        form: z
          .enum(['coalition', 'sequential'])
          .default('coalition')
          .describe(
            'coalition: v_lik(S) at the final-answer turn, for LOO and Shapley; sequential (method loo only): worker ' +
              "m's credit is v_lik just after its report is read minus just before (IGPO's turn reward, per agent).",
          ),
        scale: z
          .number()
          .positive()
          .max(1000)
          .default(1)
          .describe(
            'Nats that map to a marginal of tanh(1) = 0.76: R_mc = tanh(Delta / scale), so a likelihood marginal is ' +
              'bounded in (-1, 1) like an outcome marginal and keeps its sign (docs/architecture.md, "Credit").',
          ),
      })
      .prefault({})
      .describe('The likelihood value (credit.value likelihood).'),
    replays: z
      .number()
      .int()
      .positive()
      .max(64)
      .default(2)
      .describe(
        'Replays averaged per coalition, v(N) included (the SHARP n); replay r of every coalition shares sampling ' +
          'stream r. Default 2, the smallest n whose split-half reliability of the LOO Deltas reached 0.7 on the ' +
          'starting policy (0.50 at n = 1, 0.71 at n = 2; `npm run bench:replays`, docs/results.md), at twice the ' +
          'replay cost of n = 1. At most 64: a step holds every replay of every coalition in memory at once.',
      ),
    replayTemperature: z
      .number()
      .min(0)
      .max(10)
      .nullable()
      .default(null)
      .describe(
        'Sampling temperature of the counterfactual replays; null = rollout.temperature; 0 = greedy, which makes ' +
          'v(S) exact for a given context.',
      ),
    repairPlanner: z
      .boolean()
      .default(true)
      .describe(
        'Counterfactual repair: also blame the planner for each delegation the rule judge finds wrong ' +
          '(v(N) - v(N with its subtask repaired), replayed); false leaves the planner out of the blame, with ' +
          "SHARP's planner credit only, and replays no repaired subtask.",
      ),
    placeholder: z.string().default('[no report]').describe('Text that replaces a masked worker report.'),
    shapleyExactMaxWorkers: z
      .number()
      .int()
      .min(1)
      .max(MAX_EXACT_SHAPLEY_WORKERS)
      .default(6)
      .describe('Exact Shapley up to this many workers, permutation sampling beyond.'),
    shapleyPermutations: z
      .number()
      .int()
      .positive()
      .max(10_000)
      .default(32)
      .describe('Permutations sampled when Shapley is not exact (at most 10,000: each adds up to K coalitions).'),
    shapleyMode: z
      .enum(['auto', 'exact', 'sampled'])
      .default('auto')
      .describe(
        `auto: exact up to shapleyExactMaxWorkers, sampled beyond; exact/sampled force one (exact is refused past ` +
          `${MAX_EXACT_SHAPLEY_WORKERS} workers: ${2 ** MAX_EXACT_SHAPLEY_WORKERS} replays).`,
      ),
    success: z
      .enum(['em', 'f1', 'cover_em'])
      .default('em')
      .describe('Success function R: exact match, F1 >= threshold, or cover-EM.'),
    f1Threshold: z.number().min(0).max(1).default(0.5).describe('F1 needed for success when success = f1.'),
    rewards: z
      .array(
        z.strictObject({
          module: z
            .string()
            .min(1)
            .describe('Path of a JS or TS module, relative to the working directory (as model.path).'),
          export: z
            .string()
            .min(1)
            .default('default')
            .describe('The export that holds the reward: defineReward(fn) or a plain function.'),
          weight: z.number().default(1).describe('Its weight in the sum (TRL reward_weights).'),
        }),
      )
      .max(MAX_USER_REWARDS)
      .default([])
      .describe(
        'User rewards in place of the accuracy of credit.success as the outcome reward R that credit decomposes: ' +
          'R = sum of weight x reward ({question, answer, gold, trajectory, episode}) -> finite number; ' +
          'docs/extending.md. Each is checked on a probe before training. train() takes them as rewards too.',
      ),
    weights: z
      .strictObject({
        broadcast: z
          .number()
          .default(0.9)
          .describe('alpha (w_b): weight of the broadcast accuracy reward in loo / shapley (SHARP: 0.9).'),
        marginal: z
          .number()
          .default(0.9)
          .describe('beta (w_mc): weight of the marginal (LOO / Shapley) credit (SHARP: 0.9).'),
        tool: z
          .number()
          .default(0.1)
          .describe('gamma (w_tool): weight of the per-agent tool-validity reward (SHARP: 0.1).'),
      })
      .prefault({})
      .describe("SHARP's per-agent reward R = alpha R_b + beta R_mc + gamma R_tool (loo and shapley only)."),
    matpo: z
      .strictObject({
        accuracy: z.number().default(1.0).describe('Weight of the accuracy reward (MATPO: 1.0).'),
        format: z
          .number()
          .default(0.1)
          .describe('Weight of the tool-format validity of the whole trajectory (MATPO: 0.1).'),
      })
      .prefault({})
      .describe("MATPO's reward (method matpo), broadcast to every agent."),
    toolGate: z.boolean().default(false).describe('Count the tool reward only when the outcome succeeded.'),
    noToolCallsValue: z.number().min(0).max(1).default(0).describe('R_tool of an agent that made no tool calls.'),
    messageLevel: z
      .boolean()
      .default(false)
      .describe(
        'Split each agent credit into signed per-message shares (judge labels); sharp train gives each message its ' +
          'own advantage from its share.',
      ),
    messageShareBeta: z
      .number()
      .min(0)
      .default(1)
      .describe(
        'beta in r_t = C/T + beta|C|(s_t - mean s)/T (src/credit/message-shares.ts); 0 = even split, bound ' +
          '(1+2beta)|C|/T.',
      ),
    failurePairs: z
      .boolean()
      .default(false)
      .describe('On failure: localise the first error and write DPO preference pairs.'),
    failureResamples: z
      .number()
      .int()
      .positive()
      .max(64)
      .default(4)
      .describe(
        'Alternatives resampled for the first error until the judge accepts one (no pair if none is); at most 64 ' +
          'rounds of one batched call each.',
      ),
    judge: z
      .enum(['rule', 'llm'])
      .default('rule')
      .describe('rule: gold sub-answers; llm: a yes/no question to a model.'),
    hopMatchF1: z
      .number()
      .min(0)
      .max(1)
      .default(0.5)
      .describe('Rule judge: token F1 a subtask needs with a gold hop question to be judged against that hop.'),
    judgeMargin: z
      .number()
      .min(0)
      .default(0)
      .describe('LLM judge: |logp(yes) - logp(no)| under this labels a message 0 (undecided).'),
    recordGroups: z
      .number()
      .int()
      .min(0)
      .max(10_000)
      .default(2)
      .describe(
        'Groups per training step (eval: episodes per batch) saved with their credit under <run>/trajectories/ for ' +
          '`sharp view`; 0 = none.',
      ),
  })
  .describe('Credit assignment.');
