/**
 * What train.logprobChunk, train.checkpointLayers and train.lora save: one GRPO-style forward +
 * backward (the gradient of the summed token log-probs) of a micro-batch on a model with Qwen3's
 * 151,936-token vocabulary (tied head), run in a fresh process per setting so the wasm heap's
 * high-water mark is that setting's peak. Prints the heap size, peak RSS and seconds.
 *
 *   npx tsx scripts/memory-lean.ts [--tokens T]    # every setting, one child process each (T = 512)
 *   npx tsx scripts/memory-lean.ts --one CHUNK CKPT LORA T   # one setting (what each child runs)
 * A setting whose child dies (the wasm heap exhausted: 'memory access out of bounds') is reported as failed.
 */
import { spawnSync } from 'node:child_process';
import * as tf from '@tensorflow/tfjs';
import { initBackend } from '../src/backend/select.ts';
import { CausalLM } from '../src/model/causal-lm.ts';
import { hfConfigFor } from '../src/model/config.ts';
import { tokenLogprobs } from '../src/model/logprobs.ts';

const SHAPE = {
  arch: 'qwen3' as const,
  layers: 8,
  hidden: 256,
  heads: 4,
  kvHeads: 2,
  headDim: 64,
  intermediate: 768,
  vocab: 151936,
  tieEmbeddings: true,
};
const B = 2;

async function one(chunk: number, ckpt: boolean, lora: boolean, T: number): Promise<void> {
  await initBackend('wasm');
  const m = CausalLM.random(hfConfigFor(SHAPE), 1);
  if (lora)
    m.attachLora(
      {
        rank: 16,
        alpha: 32,
        dropout: 0,
        targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
      },
      1,
    );
  m.memory = { logprobChunk: chunk, checkpointLayers: ckpt };
  const ids = tf.tensor2d(
    Array.from({ length: B * T }, (_, i) => (i * 7919) % SHAPE.vocab),
    [B, T],
    'int32',
  );
  const mask = tf.ones([B, T], 'int32') as tf.Tensor2D;
  const heap = (): number => (tf.backend() as unknown as { wasm: { HEAPU8: Uint8Array } }).wasm.HEAPU8.byteLength;
  const before = heap();
  const t0 = performance.now();
  const { value, grads } = tf.variableGrads(
    () => tf.neg(tf.mean(tokenLogprobs(m, ids, mask))) as tf.Scalar,
    m.trainableVariables(),
  );
  const loss = value.dataSync()[0] as number;
  const secs = (performance.now() - t0) / 1000;
  tf.dispose([value, ...Object.values(grads)]);
  const gib = (x: number): string => (x / 2 ** 30).toFixed(2);
  process.stdout.write(
    `chunk ${String(chunk).padStart(4)}  checkpointLayers ${ckpt ? 'on ' : 'off'}  lora ${lora ? 'r16' : 'off'}  ` +
      `loss ${loss.toFixed(4)}  wasm heap ${gib(before)} -> ${gib(heap())} GiB  peak RSS ` +
      `${gib(process.resourceUsage().maxRSS * 1024)} GiB  ${secs.toFixed(1)} s\n`,
  );
}

const argv = process.argv.slice(2);
if (argv[0] === '--one') {
  await one(Number(argv[1]), argv[2] === '1', argv[3] === '1', Number(argv[4]));
} else {
  const T = argv[0] === '--tokens' ? Number(argv[1]) : 512;
  process.stdout.write(
    `${SHAPE.layers} layers, hidden ${SHAPE.hidden}, vocab ${SHAPE.vocab} (tied), micro-batch ${B} x ${T} tokens: ` +
      `logits of the whole micro-batch = ${((B * (T - 1) * SHAPE.vocab * 4) / 2 ** 30).toFixed(2)} GiB\n`,
  );
  for (const [chunk, ckpt, lora] of [
    [0, 0, 0],
    [256, 0, 0],
    [256, 1, 0],
    [0, 0, 1],
    [256, 1, 1],
  ] as const) {
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', import.meta.filename, '--one', String(chunk), String(ckpt), String(lora), String(T)],
      { encoding: 'utf8' },
    );
    process.stdout.write(
      r.status === 0
        ? r.stdout
        : `chunk ${chunk} checkpointLayers ${ckpt} lora ${lora}: failed (exit ${r.status ?? r.signal}: ` +
            `${r.stderr.match(/RuntimeError: [^\n]*/)?.[0] ?? r.stderr.trim().split('\n').slice(-1)[0] ?? ''})\n`,
    );
  }
}
