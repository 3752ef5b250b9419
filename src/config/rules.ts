import type { Config } from './schema.ts';

/**
 * Cross-field checks: each a small named rule returning the problem as one line
 * naming the key path, or null when the config is fine.
 */
export interface ConfigRule {
  name: string;
  check: (cfg: Config) => string | null;
}

/** Checked with the config, so a bad URL stops `sharp train` before its SFT stage, not at the first RL step. */
function redisUrlProblem(url: string): string | null {
  if (url === '') return null;
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    u = new URL('x:');
  }
  return u.protocol === 'redis:' || u.protocol === 'rediss:'
    ? null
    : `rollout.distributed.redis: not a Redis URL: '${url}' (expected redis://host:port)`;
}

/**
 * Most rollouts one RL step may hold: its B x G trajectories and, with loo or shapley credit, at
 * least `replays` replays of each of their K + 1 coalitions. Each count is bounded alone, but their
 * product is what the step holds in memory; the shipped configs stay under 1,000 (8 x 8 x 2 x 5 at most).
 */
const MAX_STEP_ROLLOUTS = 2_000_000;

const configRules: ConfigRule[] = [
  {
    name: 'search-backend-source',
    check: (c) => {
      const s = c.rollout.search;
      if (s.backend === 'index' && s.index === '')
        return "rollout.search.index: required when rollout.search.backend is 'index'";
      if (s.backend === 'remote' && !/^https?:\/\/./.test(s.url))
        return (
          `rollout.search.url: an http(s) URL is required when rollout.search.backend is 'remote' ` + `(got '${s.url}')`
        );
      return null;
    },
  },
  { name: 'distributed-redis-url', check: (c) => redisUrlProblem(c.rollout.distributed.redis) },
  {
    name: 'distributed-credit',
    check: (c) => {
      const d = c.rollout.distributed;
      if (d.redis === '' && !d.local) return null;
      return c.credit.messageLevel || c.credit.failurePairs
        ? 'rollout.distributed: credit.messageLevel and credit.failurePairs need a judge in the trainer and are not ' +
            'served by workers; turn them off or leave rollout.distributed.redis empty'
        : null;
    },
  },
  {
    // The likelihood value scores recorded contexts: no worker is run again, so only masking composes with it.
    name: 'likelihood-fits-method',
    check: (c) => {
      const cr = c.credit;
      if (cr.value !== 'likelihood') return null;
      if (cr.method !== 'loo' && cr.method !== 'shapley')
        return (
          `credit.value likelihood values coalitions, which credit.method ${cr.method} does not use; use loo ` +
          'or shapley'
        );
      if (cr.counterfactual !== 'mask')
        return (
          `credit.value likelihood scores the recorded contexts with reports masked; credit.counterfactual ` +
          `${cr.counterfactual} needs sampled replays (use mask, or credit.value outcome)`
        );
      if (cr.likelihood.form === 'sequential' && cr.method !== 'loo')
        return (
          'credit.likelihood.form sequential is a per-worker gain, not a coalition value: it needs ' +
          'credit.method loo'
        );
      return null;
    },
  },
  {
    name: 'oracle-needs-workers',
    check: (c) =>
      c.credit.method === 'oracle' && c.rollout.agents === 'single'
        ? 'credit.method oracle rewards each worker by its report, and rollout.agents single has no workers; use ' +
          'rollout.agents multi or another credit.method'
        : null,
  },
  {
    // Only the synthetic world and MuSiQue give a gold decomposition; an LLM judge's reference is not built.
    name: 'gold-decomposition',
    check: (c) => {
      const what =
        c.credit.method === 'oracle'
          ? 'credit.method oracle'
          : c.credit.counterfactual === 'repair' && ['loo', 'shapley'].includes(c.credit.method)
            ? 'credit.counterfactual repair'
            : null;
      if (what === null || c.data.source === 'synthetic' || c.data.source === 'musique') return null;
      return (
        `${what} needs gold decompositions (question_decomposition), and data.source '${c.data.source}' has none; ` +
        `use the synthetic world or MuSiQue`
      );
    },
  },
  {
    name: 'hops-ordered',
    check: (c) =>
      c.data.synthetic.minHops <= c.data.synthetic.maxHops
        ? null
        : `data.synthetic.minHops (${c.data.synthetic.minHops}) must be <= data.synthetic.maxHops ` +
          `(${c.data.synthetic.maxHops})`,
  },
  {
    name: 'dataset-path',
    check: (c) =>
      c.data.source !== 'synthetic' && c.data.path === ''
        ? `data.path is required when data.source is '${c.data.source}'`
        : null,
  },
  {
    name: 'clip-low-below-one',
    check: (c) =>
      c.train.clipLow < 1
        ? null
        : `train.clipLow (${c.train.clipLow}) must be < 1 (the ratio clip range is [1 - clipLow, 1 + clipHigh])`,
  },
  {
    // A bfloat16 base is frozen; full-parameter training would train those weights, so it would be ignored.
    name: 'bf16-base-needs-lora',
    check: (c) =>
      c.train.lora.baseDtype === 'bfloat16' && c.train.lora.rank === 0
        ? 'train.lora.baseDtype bfloat16 keeps a frozen base for LoRA adapters, and train.lora.rank 0 trains every ' +
          'weight (full-parameter training keeps them in float32); set train.lora.rank > 0 or baseDtype float32'
        : null,
  },
  {
    name: 'group-needs-two',
    check: (c) =>
      c.train.steps > 0 && c.rollout.groupSize < 2
        ? `rollout.groupSize (${c.rollout.groupSize}) must be >= 2 for GRPO: advantages are normalised within a group`
        : null,
  },
  {
    name: 'warmup-within-steps',
    check: (c) =>
      c.train.warmupSteps > c.train.steps && c.train.steps > 0
        ? `train.warmupSteps (${c.train.warmupSteps}) must be <= train.steps (${c.train.steps})`
        : null,
  },
  {
    name: 'sft-needs-data',
    check: (c) =>
      c.train.sft.steps > 0 && c.train.sft.data === '' ? 'train.sft.data is required when train.sft.steps > 0' : null,
  },
  {
    name: 'step-fits-memory',
    check: (c) => {
      if (c.train.steps === 0) return null;
      const { batchQuestions: b } = c.train;
      const g = c.rollout.groupSize;
      const replayed = c.credit.method === 'loo' || c.credit.method === 'shapley';
      const perTrajectory = replayed ? 1 + c.credit.replays * (c.rollout.maxDelegations + 1) : 1;
      const rollouts = b * g * perTrajectory;
      if (rollouts <= MAX_STEP_ROLLOUTS) return null;
      return (
        `a step of train.batchQuestions ${b} x rollout.groupSize ${g}` +
        (replayed
          ? ` x (1 + credit.replays ${c.credit.replays} x (rollout.maxDelegations ${c.rollout.maxDelegations} + 1))`
          : '') +
        ` holds ${rollouts} rollouts in memory; at most ${MAX_STEP_ROLLOUTS}`
      );
    },
  },
  {
    // A step takes each question at most once; benchmark sources are checked once read (their size is the file's).
    name: 'batch-within-data',
    check: (c) =>
      c.train.steps > 0 && c.data.source === 'synthetic' && c.train.batchQuestions > c.data.synthetic.train
        ? `train.batchQuestions (${c.train.batchQuestions}) must be <= data.synthetic.train ` +
          `(${c.data.synthetic.train}): a step takes each training question at most once`
        : null,
  },
  {
    name: 'context-fits-message',
    check: (c) =>
      c.rollout.maxNewTokens < c.rollout.maxContext
        ? null
        : `rollout.maxNewTokens (${c.rollout.maxNewTokens}) must be < rollout.maxContext (${c.rollout.maxContext})`,
  },
];

/** Runs every rule; returns the problems found (empty when valid). */
export function checkRules(cfg: Config, rules: readonly ConfigRule[] = configRules): string[] {
  return rules.flatMap((r) => {
    const problem = r.check(cfg);
    return problem === null ? [] : [problem];
  });
}
