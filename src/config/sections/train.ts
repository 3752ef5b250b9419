import { z } from 'zod';
import { count, MAX_BATCH, MAX_POSITIONS, MAX_STEPS } from './bounds.ts';

/**
 * Largest learning rate accepted anywhere (RL, SFT, DPO). Adam moves every weight by up to about lr
 * per step whatever the gradient's scale, so above 1 each step rewrites weights of size ~0.02 many
 * times over; sane values are 1e-6..1e-5 for real checkpoints and up to about 1e-2 for tiny ones.
 */
const MAX_LR = 1;
const lrField = (dflt: number, what: string) =>
  z
    .number()
    .positive()
    .max(
      MAX_LR,
      `${what} above ${MAX_LR} would move every weight by up to lr per Adam step and wreck the model (sane: ` +
        `1e-6..1e-2)`,
    )
    .default(dflt);

/** Largest questions per RL step (a step's rollouts are held in memory together). */
const MAX_BATCH_QUESTIONS = 100_000;

/** The projections LoRA can adapt, named as Hugging Face PEFT's target_modules names them. */
const LORA_TARGET_NAMES = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'] as const;

/** LoRA (Hu et al. 2021, arXiv:2106.09685) as Hugging Face PEFT's LoraConfig spells it. */
const loraSection = z
  .strictObject({
    rank: z
      .number()
      .int()
      .nonnegative()
      .max(4096)
      .default(0)
      .describe(
        'r: rank of the adapters (PEFT r); 0 = full-parameter training. With r > 0 the base model is frozen and ' +
          'GRPO, SFT and DPO train only A [r, in] and B [out, r] on each target projection.',
      ),
    alpha: z.number().positive().default(32).describe('lora_alpha: the adapter update is scaled by alpha / r (PEFT).'),
    dropout: z
      .number()
      .min(0)
      .lt(1)
      .default(0)
      .describe('lora_dropout: dropout on the adapter input in training forwards (not in rollouts or references).'),
    targets: z
      .array(z.enum(LORA_TARGET_NAMES))
      .min(1)
      .refine((xs) => new Set(xs).size === xs.length, 'each projection at most once')
      .default([...LORA_TARGET_NAMES])
      .describe('target_modules: the projections of every layer that get adapters (PEFT names).'),
    baseDtype: z
      .enum(['float32', 'bfloat16'])
      .default('float32')
      .describe(
        'How the frozen base matrices are kept (rank > 0): bfloat16 halves their memory (computed in float32; ' +
          "exact for a BF16 checkpoint such as Qwen3's, rounded to nearest otherwise). Needs run.backend: native.",
      ),
  })
  .prefault({})
  .describe(
    "LoRA adapters in Hugging Face PEFT's layout: A Kaiming-uniform and B zero at the start (the model is " +
      'unchanged until it trains); rollouts run base + adapters unmerged; the KL and DPO references are the base ' +
      'with adapters disabled (no second copy); checkpoints hold adapter_config.json, adapter_model.safetensors and ' +
      'their AdamW state only; `sharp export --merge` writes a merged Hugging Face checkpoint.',
  );

/** GRPO / SFT / DPO optimisation. */
export const trainSection = z
  .strictObject({
    steps: count(0, MAX_STEPS, 50, 'RL steps.'),
    batchQuestions: z
      .number()
      .int()
      .positive()
      .max(MAX_BATCH_QUESTIONS)
      .default(4)
      .describe(
        'B: questions per step (each gives a group of G trajectories); at most the number of training questions.',
      ),
    lr: lrField(1e-4, 'a learning rate').describe(
      `Peak learning rate (1e-6..1e-5 for real models; tiny models need more); at most ${MAX_LR}.`,
    ),
    schedule: z.enum(['constant', 'cosine']).default('constant').describe('LR schedule after warmup.'),
    minLrRatio: z
      .number()
      .min(0)
      .max(1)
      .default(0)
      .describe('Cosine floor as a fraction of lr (0: decay to 0 at the last step).'),
    warmupSteps: count(0, MAX_STEPS, 0, 'Linear warmup steps.'),
    weightDecay: z.number().nonnegative().default(0).describe('AdamW decoupled weight decay.'),
    beta1: z.number().min(0).lt(1).default(0.9).describe('Adam beta1.'),
    beta2: z.number().min(0).lt(1).default(0.999).describe('Adam beta2.'),
    adamEps: z.number().positive().default(1e-8).describe('Adam epsilon.'),
    gradClip: z.number().nonnegative().default(1.0).describe('Global-norm gradient clip; 0 = off.'),
    microBatch: count(1, MAX_BATCH, 8, 'Sequences per forward/backward (gradient accumulation bounds memory).'),
    epochs: count(1, 100, 1, 'mu: update epochs per batch of rollouts (each epoch is a pass over all of them).'),
    clipLow: z.number().positive().lt(1).default(0.2).describe('eps_low of the clipped surrogate.'),
    clipHigh: z.number().positive().default(0.2).describe('eps_high (0.28 for DAPO clip-higher).'),
    klBeta: z
      .number()
      .nonnegative()
      .default(0)
      .describe('beta of the k3 KL to the reference; 0 = no reference model is held.'),
    aggregation: z
      .enum(['token-mean', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'])
      .default('token-mean')
      .describe('Loss aggregation; seq-mean-token-sum-norm is Dr. GRPO.'),
    sumNormLength: count(
      0,
      MAX_POSITIONS,
      0,
      'Dr. GRPO constant length for seq-mean-token-sum-norm; 0 = the longest completion of the batch.',
    ),
    oldLogp: z
      .enum(['recompute', 'sampling'])
      .default('recompute')
      .describe(
        'pi_old: recompute with the training forward before the update (exact ratio 1 at epoch 1), or the logprobs ' +
          'recorded at sampling (saves a forward; KV-cache numerics differ slightly).',
      ),
    logEntropy: z
      .boolean()
      .default(false)
      .describe('Log the policy entropy per step (one extra softmax pass over the vocabulary).'),
    tensorboard: z.boolean().default(true).describe('Also write TensorBoard event files to the run folder.'),
    scaleRewards: z
      .enum(['group', 'batch', 'none'])
      .default('group')
      .describe(
        'Scale of the centred rewards (TRL scale_rewards): group = the (group, role) std; batch = the role std over ' +
          'the whole step (Lite PPO); none = unscaled (Dr. GRPO).',
      ),
    advEps: z.number().positive().default(1e-6).describe('eps in (R - mean_role) / (std_role + eps).'),
    dpoWeight: z
      .number()
      .nonnegative()
      .default(0)
      .describe('Weight of the DPO loss on failure pairs mixed into GRPO steps.'),
    dpoBeta: z.number().positive().default(0.1).describe('beta of the DPO loss.'),
    checkpointEvery: count(1, MAX_STEPS, 10, 'Steps between checkpoints.'),
    keepCheckpoints: count(
      1,
      1000,
      2,
      'Checkpoints kept per run (oldest deleted); each is a copy of the weights (or adapters) on disk.',
    ),
    lora: loraSection,
    logprobChunk: z
      .number()
      .int()
      .nonnegative()
      .max(1_000_000)
      .default(0)
      .describe(
        'Tokens per chunk of the training log-prob head (forward and backward), so no [tokens, vocab] logits tensor ' +
          'exists for a whole micro-batch (at a 150k vocabulary 1,024 tokens of logits are 0.6 GB); 0 = the whole ' +
          'micro-batch at once. Same values and gradients either way.',
      ),
    checkpointLayers: z
      .boolean()
      .default(false)
      .describe(
        "Activation checkpointing: keep only each decoder layer's input and recompute the layer in the backward " +
          'pass (about one more forward per update, activations of one layer instead of all). Same loss and ' +
          'gradients.',
      ),
    sft: z
      .strictObject({
        data: z.string().default('').describe('Transcripts JSONL (chat messages with per-message loss masks).'),
        steps: count(0, MAX_STEPS, 0, 'SFT steps before RL (0 = none).'),
        lr: lrField(1e-3, 'an SFT learning rate').describe(`SFT learning rate; at most ${MAX_LR}.`),
        batch: count(1, MAX_BATCH, 8, 'Transcripts per SFT step.'),
        schedule: z.enum(['constant', 'cosine']).default('constant').describe('SFT LR schedule after warmup.'),
        warmupSteps: count(0, MAX_STEPS, 0, 'SFT linear warmup steps.'),
        checkpointEvery: count(
          0,
          MAX_STEPS,
          0,
          'SFT steps between checkpoints (<run>/sft-checkpoints/, train.keepCheckpoints kept), from which ' +
            '--resume continues a killed SFT; 0 = train.checkpointEvery.',
        ),
        expert: z
          .strictObject({
            noSearch: z
              .number()
              .min(0)
              .max(1)
              .default(0.15)
              .describe('Rate at which an expert worker answers a fact hop without searching (it echoes the subject).'),
            distractor: z
              .number()
              .min(0)
              .max(1)
              .default(0.15)
              .describe(
                'Rate at which an expert worker answers from a distractor paragraph (another entity of the shown ' +
                  'results).',
              ),
            redundant: z
              .number()
              .min(0)
              .max(1)
              .default(0.2)
              .describe('Rate at which the expert planner delegates one hop twice (the later report is trusted).'),
            irrelevant: z
              .number()
              .min(0)
              .max(1)
              .default(0.15)
              .describe('Rate at which the expert planner first delegates an irrelevant subtask.'),
            trustPlanted: z
              .number()
              .min(0)
              .max(1)
              .default(0)
              .describe(
                'Rate at which an expert worker trusts sources titled as unreliable: it reports a planted wrong ' +
                  'claim (data.synthetic.misleading) whenever the planted paragraph is among its search results.',
              ),
            comparisons: z
              .enum(['planner', 'calculate'])
              .default('planner')
              .describe(
                'Who decides a comparison hop (data.synthetic.shapes): planner: the planner answers it from the ' +
                  'reports; calculate: it is delegated, and the worker (or the lone agent) calls calculate with ' +
                  "argmin or argmax over the items labelled with their years (`argmin('A', 1950, 'B', 1962)`) " +
                  'and answers the item the tool names.',
              ),
            seed: z.number().int().nonnegative().default(0).describe('Seed of the failure decisions.'),
            copyWeight: z
              .number()
              .min(1)
              .default(1)
              .describe(
                'SFT loss weight of the turns that copy a name out of a tool result: planner delegations after the ' +
                  'first (an earlier report into the next subtask), single-agent searches after the first, worker ' +
                  'and single-agent answers. 1 = every trained turn alike.',
              ),
            agents: z
              .array(z.enum(['multi', 'single']))
              .min(1)
              .refine(
                (xs) => new Set(xs).size === xs.length,
                'each agent system at most once (a repeat would write its transcripts twice)',
              )
              .default(['multi'])
              .describe(
                'Agent systems the expert writes transcripts for: multi (planner + workers) and/or single (one ' +
                  'agent with the tools), so one SFT model can start both multi-agent and single-agent RL.',
              ),
          })
          .prefault({})
          .describe(
            'The scripted expert whose transcripts SFT imitates (when train.sft.data is missing). With any failure ' +
              'rate > 0 every trajectory is kept, mistakes included, so the SFT policy inherits them and RL has ' +
              'something to fix; with all rates 0 only solved trajectories are kept.',
          ),
      })
      .prefault({}),
    dpo: z
      .strictObject({
        data: z
          .string()
          .default('')
          .describe(
            'Preference pairs JSONL for `sharp dpo` (the credit module failure path writes them: credit.failurePairs).',
          ),
        steps: count(0, MAX_STEPS, 100, 'DPO steps of `sharp dpo`.'),
        lr: lrField(1e-5, 'a DPO learning rate').describe(`DPO learning rate; at most ${MAX_LR}.`),
        batch: count(1, MAX_BATCH, 8, 'Pairs per DPO step.'),
        checkpointEvery: count(
          0,
          MAX_STEPS,
          0,
          'DPO steps between checkpoints (<run>/dpo-checkpoints/, train.keepCheckpoints kept), from which `sharp ' +
            'dpo --resume` continues; 0 = train.checkpointEvery.',
        ),
      })
      .prefault({})
      .describe('Stand-alone DPO (`sharp dpo`); dpoBeta is its beta, dpoWeight mixes DPO into GRPO steps instead.'),
  })
  .describe('Trainer.');
