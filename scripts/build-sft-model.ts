/**
 * Builds models/sharp-tiny-sft: the starting policy of the quickstart and of the ablation
 * (docs/results.md). `npm run build:sft-model [-- --config FILE --out DIR]`, seeded throughout:
 *   synthetic training episodes (fresh worlds, training half of the name space)
 *   -> the scripted expert's transcripts with its failure modes (multi-agent and single-agent)
 *   -> byte-level BPE fitted to them + a random-init model -> SFT (packed transcripts: the
 *      train.sft run, then the continuation stages below, each from the previous weights)
 *   -> held-out accuracy of both agent systems (held-out half of the name space)
 *   -> the folder in Hugging Face layout with a model card (README.md) of what was measured.
 * The training data is written under runs/ (not shipped); the model folder is swapped in whole.
 */
import { existsSync, readFileSync } from 'node:fs';
import { cp, mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { stringify } from 'yaml';
import { loadConfig } from '../src/config/load.ts';
import type { Config } from '../src/config/schema.ts';
import { CausalLM } from '../src/model/causal-lm.ts';
import { heldOutAccuracy, type AccuracyResult } from '../src/eval/held-out-accuracy.ts';
import { heldOutSplits, loadTrainData } from '../src/recipes/stages/train-data.ts';
import { accuracyOn, QUESTION_SHAPES } from '../src/eval/shapes.ts';
import { ensureTranscripts } from '../src/recipes/stages/expert-transcripts.ts';
import { ensureModel, tokenizerCorpus } from '../src/recipes/stages/ensure-model.ts';
import { startBackend } from '../src/recipes/stages/run-setup.ts';
import { sftStage } from '../src/recipes/stages/sft-on-transcripts.ts';
import { Tokenizer } from '../src/tokenizer/tokenizer.ts';
import type { Transcript } from '../src/rollout/transcripts.ts';
import { closeCalculateWorker } from '../src/tools/calculate.ts';
import { closeCodeSandbox } from '../src/tools/code.ts';
import { formatRate } from '../src/eval/breakdown.ts';
import { writeFileAtomic } from '../src/fs/atomic.ts';

const repo = resolve(import.meta.dirname, '..');
const { values } = parseArgs({
  options: {
    config: { type: 'string', default: join(repo, 'configs/sharp-tiny-sft.yaml') },
    // Default: models/<run.name>.
    out: { type: 'string' },
    // Measure and write the model card of an already built model (the build's own numbers are read back).
    'card-only': { type: 'boolean', default: false },
    // Train only the stages the model at --out has not had yet, from its weights (its build.json says
    // which it has had): the same model a full build gives, since every stage starts from the previous
    // weights with a fresh optimizer and its own seeded data order.
    continue: { type: 'boolean', default: false },
  },
});
const cfg: Config = loadConfig({ file: values.config as string });
const out = resolve(values.out ?? join(repo, 'models', cfg.run.name));
/**
 * With model.init disabled the build continues the built model at model.path instead of training one
 * from scratch: one SFT stage (train.sft) on the expert's transcripts of this config's world, from
 * that model's weights and tokenizer. That is how a starting policy learns a new world without
 * changing the model that the committed results started from.
 */
const extending = !cfg.model.init.enabled;
const work = resolve(cfg.run.dir, `${cfg.run.name}-build`);
const log = (msg: string): void => {
  process.stdout.write(`build-sft-model: ${msg}\n`);
};

/**
 * SFT continuation stages after the configured train.sft run. Each starts from the previous stage's
 * weights with a fresh AdamW and the same seeded data order (run.seed), as a separate `sharp sft`
 * run from that checkpoint would. They are how the committed model was trained: copying a name out
 * of the preceding message emerges only after about 3,000 steps and reading answers out of tool
 * results later still (docs/results.md); the fifth stage anneals the learning rate to 0. By then
 * the model had learned its 4,000 training episodes far better than new ones (held-out teacher-forced
 * second delegations right 10/60), so the last stage trains on fresh episodes (another data seed,
 * the same training half of the name space) with the copy turns weighted up
 * (train.sft.expert.copyWeight), and a sixth stage does the same on yet another fresh set (data
 * seed 3): sampled at temperature 1 the fifth stage's model still put much of its mass on wrong
 * names, and RL from it plateaued 6-8 points above the start (docs/results.md).
 */
interface Stage {
  steps: number;
  lr: number;
  schedule: 'constant' | 'cosine';
  warmupSteps?: number;
  /** Train on the expert transcripts of fresh episodes drawn with this data seed, copy turns weighted. */
  data?: { seed: number; copyWeight: number };
}
const CONTINUATION_STAGES: readonly Stage[] = [
  { steps: 500, lr: 0.002, schedule: 'constant' },
  { steps: 1500, lr: 0.002, schedule: 'constant' },
  { steps: 3500, lr: 0.002, schedule: 'constant' },
  { steps: 1500, lr: 0.002, schedule: 'cosine' },
  { steps: 2500, lr: 0.002, schedule: 'cosine', warmupSteps: 50, data: { seed: 2, copyWeight: 3 } },
  { steps: 2000, lr: 0.002, schedule: 'cosine', warmupSteps: 50, data: { seed: 3, copyWeight: 3 } },
];

/** The transcripts a stage trains on: the build's, or those of its own fresh episodes (written beside them once). */
async function stageTranscripts(stage: Stage, base: Transcript[]): Promise<Transcript[]> {
  if (!stage.data) return base;
  const { seed, copyWeight } = stage.data;
  const file = resolve(cfg.train.sft.data.replace(/\.jsonl$/, '') + `-seed${seed}-copy${copyWeight}.jsonl`);
  const episodes = loadTrainData({ ...cfg.data, synthetic: { ...cfg.data.synthetic, seed } }).train;
  const got = await ensureTranscripts(file, episodes, { ...cfg, expert: { ...cfg.train.sft.expert, copyWeight } });
  log(
    `stage data: ${episodes.length} fresh episodes (data seed ${seed}), ${got.transcripts.length} transcripts, ` +
      `copy turns weighted ${copyWeight}`,
  );
  return got.transcripts;
}

interface BuildFacts {
  transcripts: number;
  firstLoss: number;
  lastLoss: number;
  /** SFT steps of all stages. */
  steps: number;
  /** Continuation stages done (absent in builds that predate it: their steps tell). */
  stages?: number;
  sftSeconds: number;
  buildSeconds: number;
  parameters: number;
  /** Extension builds: the model continued and the SFT steps it had. */
  from?: { dir: string; steps: number };
}

/** How many continuation stages the model a build wrote has had. */
function stagesDone(f: BuildFacts): number {
  if (f.stages !== undefined) return f.stages;
  let total = cfg.train.sft.steps;
  for (const [k, st] of CONTINUATION_STAGES.entries()) {
    if (total === f.steps) return k;
    total += st.steps;
  }
  if (total === f.steps) return CONTINUATION_STAGES.length;
  throw new Error(
    `${join(out, 'build.json')}: ${f.steps} steps match no prefix of the stages; rebuild without --continue`,
  );
}

async function train(): Promise<BuildFacts> {
  const t0 = performance.now();
  if (extending) return extend(t0);
  const prior = values.continue ? (JSON.parse(readFileSync(join(out, 'build.json'), 'utf8')) as BuildFacts) : undefined;
  const done = prior ? stagesDone(prior) : 0;
  if (prior && done === CONTINUATION_STAGES.length) {
    log(`${out} has had every stage already`);
    return prior;
  }
  if (!prior) await rm(work, { recursive: true, force: true });
  await mkdir(work, { recursive: true });
  const data = loadTrainData(cfg.data);
  const transcriptsFile = resolve(cfg.train.sft.data);
  if (!prior) await rm(transcriptsFile, { force: true });
  const got = await ensureTranscripts(transcriptsFile, data.train, { ...cfg, expert: cfg.train.sft.expert });
  log(
    `${data.train.length} training episodes, ${got.transcripts.length} transcripts (expert solved ` +
      `${got.generated?.solved}/${got.generated?.episodes} runs)`,
  );
  const tSft = performance.now();
  let sftDir: string;
  let tokenizer: Tokenizer;
  let firstLoss: number;
  let lastLoss: number;
  let steps: number;
  let parameters: number;
  if (prior) {
    log(`continuing ${out} after stage ${done} of ${CONTINUATION_STAGES.length} (${prior.steps} steps)`);
    sftDir = out;
    tokenizer = await Tokenizer.load(out);
    ({ firstLoss, lastLoss, steps, parameters } = prior);
  } else {
    const initDir = join(work, 'init');
    const init = await ensureModel(
      { ...cfg.model, path: initDir, init: { ...cfg.model.init, enabled: true } },
      cfg.run.seed,
      () => tokenizerCorpus(data.train, got.transcripts),
    );
    tokenizer = await Tokenizer.load(init.dir);
    log(`model: ${init.parameters} parameters, vocab ${init.vocab}`);
    sftDir = join(work, 'sft');
    const sft = await sftStage({
      cfg,
      fromDir: init.dir,
      toDir: sftDir,
      runDir: work,
      tokenizer,
      transcripts: got.transcripts,
      onStep: (step, st) => {
        if (step === 1 || step % 100 === 0)
          log(`sft step ${step}/${cfg.train.sft.steps} loss ${st['sft/loss']?.toFixed(4)}`);
      },
    });
    ({ firstLoss, lastLoss } = sft);
    steps = cfg.train.sft.steps;
    parameters = init.parameters ?? 0;
  }
  for (const [k, stage] of CONTINUATION_STAGES.entries()) {
    if (k < done) continue;
    const { data: _data, ...schedule } = stage;
    const stageCfg: Config = {
      ...cfg,
      train: { ...cfg.train, sft: { ...cfg.train.sft, warmupSteps: 0, ...schedule } },
    };
    const from = sftDir;
    sftDir = join(work, `sft-stage-${k + 1}`);
    const res = await sftStage({
      cfg: stageCfg,
      fromDir: from,
      toDir: sftDir,
      runDir: join(work, `stage-${k + 1}`),
      tokenizer,
      transcripts: await stageTranscripts(stage, got.transcripts),
      onStep: (step, st) => {
        if (step % 100 === 0)
          log(
            `sft stage ${k + 1}/${CONTINUATION_STAGES.length} step ${step}/${stage.steps} (total ${steps + step}) ` +
              `loss ${st['sft/loss']?.toFixed(4)}`,
          );
      },
    });
    steps += stage.steps;
    lastLoss = res.lastLoss;
  }
  const facts: BuildFacts = {
    transcripts: got.transcripts.length,
    firstLoss,
    lastLoss,
    steps,
    stages: CONTINUATION_STAGES.length,
    sftSeconds: (prior?.sftSeconds ?? 0) + (performance.now() - tSft) / 1000,
    buildSeconds: (prior?.buildSeconds ?? 0) + (performance.now() - t0) / 1000,
    parameters,
  };
  // The model is published before it is measured: the measurement can be redone with --card-only.
  await publish(sftDir, facts);
  return facts;
}

/** The publish step of a build: the trained folder swapped in whole at `out`, with the build's config and facts. */
async function publish(dir: string, facts: BuildFacts): Promise<void> {
  const tmp = `${out}.tmp-${process.pid}`;
  await rm(tmp, { recursive: true, force: true });
  await cp(dir, tmp, { recursive: true });
  await writeFile(join(tmp, 'sharp-build.yaml'), stringify(cfg));
  await writeFile(join(tmp, 'build.json'), `${JSON.stringify(facts, null, 2)}\n`);
  if (existsSync(out)) await rm(out, { recursive: true });
  await rename(tmp, out);
  log(`wrote ${out} in ${facts.buildSeconds.toFixed(0)} s`);
}

/**
 * One SFT stage (train.sft) from the model at model.path on this world's expert transcripts; with
 * --continue, one more stage from the model already at --out, on the transcripts of fresh training
 * episodes (data seed + the stages it has had: the same training half of the name space, so the
 * held-out names stay unseen). A killed build resumes from the stage's last checkpoint under the
 * work folder (same config hash).
 */
async function extend(t0: number): Promise<BuildFacts> {
  const prior = values.continue ? (JSON.parse(readFileSync(join(out, 'build.json'), 'utf8')) as BuildFacts) : undefined;
  const base = resolve(cfg.model.path);
  const from = prior ? out : base;
  const stage = (prior?.stages ?? 0) + 1;
  await mkdir(work, { recursive: true });
  const dataSeed = cfg.data.synthetic.seed + stage - 1;
  const data = loadTrainData({ ...cfg.data, synthetic: { ...cfg.data.synthetic, seed: dataSeed } });
  const file = stage === 1 ? cfg.train.sft.data : cfg.train.sft.data.replace(/\.jsonl$/, `-stage${stage}.jsonl`);
  const got = await ensureTranscripts(resolve(file), data.train, { ...cfg, expert: cfg.train.sft.expert });
  log(
    `stage ${stage} from ${from}: ${data.train.length} training episodes (data seed ${dataSeed}), ` +
      `${got.transcripts.length} transcripts (expert solved ` +
      `${got.generated?.solved ?? '?'}/${got.generated?.episodes ?? '?'} runs)`,
  );
  const baseFacts = JSON.parse(readFileSync(join(base, 'build.json'), 'utf8')) as BuildFacts;
  const tokenizer = await Tokenizer.load(from);
  const tSft = performance.now();
  const sftDir = join(work, `sft-stage-${stage}`);
  const res = await sftStage({
    cfg,
    fromDir: from,
    toDir: sftDir,
    runDir: join(work, `stage-${stage}`),
    tokenizer,
    transcripts: got.transcripts,
    onResume: (step) => log(`resuming stage ${stage} at step ${step}`),
    onStep: (step, st) => {
      if (step === 1 || step % 100 === 0)
        log(`sft stage ${stage} step ${step}/${cfg.train.sft.steps} loss ${st['sft/loss']?.toFixed(4)}`);
    },
  });
  const facts: BuildFacts = {
    transcripts: (prior?.transcripts ?? 0) + got.transcripts.length,
    firstLoss: prior?.firstLoss ?? res.firstLoss,
    lastLoss: res.lastLoss,
    steps: (prior?.steps ?? 0) + cfg.train.sft.steps,
    stages: stage,
    sftSeconds: (prior?.sftSeconds ?? 0) + (performance.now() - tSft) / 1000,
    buildSeconds: (prior?.buildSeconds ?? 0) + (performance.now() - t0) / 1000,
    parameters: baseFacts.parameters,
    from: { dir: cfg.model.path, steps: baseFacts.steps },
  };
  await publish(sftDir, facts);
  return facts;
}

async function main(): Promise<void> {
  const be = await startBackend(undefined, cfg, log);
  log(`backend ${be.backend}, native kernels: ${be.native}`);
  const facts = values['card-only']
    ? (JSON.parse(readFileSync(join(out, 'build.json'), 'utf8')) as BuildFacts)
    : await train();
  const data = loadTrainData(cfg.data);
  // An extension build is measured where its target is set: on the validation split of the held-out
  // episodes (eval.validationShare, the split the ablation makes choices on; the test split stays unseen).
  const measured = extending ? heldOutSplits(data.heldOut, cfg.eval.validationShare).validation : data.heldOut;
  const tokenizer = await Tokenizer.load(out);
  const results: Record<string, AccuracyResult> = {};
  const model = await CausalLM.load(out);
  try {
    for (const agents of cfg.train.sft.expert.agents) {
      for (const temperature of [cfg.eval.temperature, 0]) {
        const key = `${agents}, ${temperature === 0 ? 'greedy' : `temperature ${temperature}`}`;
        if (results[key]) continue;
        results[key] = await heldOutAccuracy(model, tokenizer, measured, {
          ...cfg,
          rollout: { ...cfg.rollout, agents },
          eval: { ...cfg.eval, temperature },
        });
        const r = results[key];
        const planted = r.planted
          ? `; planted reports ${formatRate({ num: r.planted.planted, den: r.planted.calls, rate: r.planted.share })}`
          : '';
        log(`held-out accuracy (${key}): ${formatRate(r.breakdown.accuracy)}${byShape(r)}${planted}`);
      }
    }
  } finally {
    model.dispose();
  }
  writeFileAtomic(
    join(out, 'README.md'),
    extending ? extensionCard(cfg, { ...facts, results }, measured.length) : modelCard(cfg, { ...facts, results }),
  );
  writeFileAtomic(join(out, 'heldout.json'), `${JSON.stringify(results, null, 2)}\n`);
  log(`wrote ${join(out, 'README.md')}`);
}

/** Accuracy per question shape when the episodes mix shapes (`; chain 0.31, comparison 0.22, ...`). */
function byShape(a: AccuracyResult): string {
  const parts = QUESTION_SHAPES.map((sh) => [sh, accuracyOn(a, [sh])] as const).filter(([, x]) => x !== null);
  return parts.length < 2 ? '' : `; ${parts.map(([sh, x]) => `${sh} ${(x as number).toFixed(3)}`).join(', ')}`;
}

function extensionCard(
  c: Config,
  r: BuildFacts & { results: Record<string, AccuracyResult> },
  measuredOn: number,
): string {
  const e = c.train.sft.expert;
  const s = c.data.synthetic;
  const w = s.shapes;
  const rows = Object.entries(r.results).map(([k, a]) => {
    const shapes = QUESTION_SHAPES.map((sh) => accuracyOn(a, [sh])?.toFixed(3) ?? '-');
    const planted =
      a.planted?.share === null || a.planted === undefined
        ? '-'
        : `${(100 * a.planted.share).toFixed(1)}% (${a.planted.planted}/${a.planted.calls})`;
    return (
      `| ${k} | ${formatRate(a.breakdown.accuracy)} | ${shapes.join(' | ')} | ${planted} | ` +
      `${((a.breakdown.invalidCalls.rate ?? 0) * 100).toFixed(1)}% |`
    );
  });
  return (
    `# ${c.run.name}

The starting policy of the world with parallel workers ` +
    `(\`configs/ablation-parallel.yaml\`):
\`${r.from?.dir ?? c.model.path}\` ` +
    `(${r.from?.steps.toLocaleString('en') ?? '?'} SFT steps, same architecture and ` +
    `tokenizer,
${r.parameters.toLocaleString('en')} parameters) continued by ${r.stages ?? 1} SFT ` +
    `stage${(r.stages ?? 1) > 1 ? 's' : ''} of ${c.train.sft.steps.toLocaleString('en')} steps each (lr ` +
    `${c.train.sft.lr}, ${c.train.sft.schedule}, warmup
${c.train.sft.warmupSteps}, batch ${c.train.sft.batch}, ` +
    `copy turns weighted ${e.copyWeight}), each from the previous weights with a fresh
optimizer, stage k on ` +
    `the scripted expert's transcripts of ${s.train} fresh episodes of that world (data seed ${s.seed} + k - ` +
    `1): question shapes chain : comparison : aggregation = ${w.chain} : ${w.comparison} : ${w.aggregation},
a ` +
    `planted wrong claim in ${100 * s.misleading.rate}% of episodes, up to ${c.rollout.maxParallelDelegations} ` +
    `delegations per planner message.
The expert keeps its mistakes: it trusts a rumour it is shown with ` +
    `probability ${e.trustPlanted}, answers without searching
${e.noSearch}, from a distractor ${e.distractor}, ` +
    `delegates a hop twice ${e.redundant}, an irrelevant subtask ${e.irrelevant}.

Built by \`npm run ` +
    `build:sft-model -- --config ` +
    `configs/${c.run.name}.yaml\`${
      (r.stages ?? 1) > 1
        ? `, then the same with \`--continue\` ${(r.stages ?? 1) - 1} time${(r.stages ?? 1) > 2 ? 's' : ''}`
        : ''
    } ` +
    `(settings copied here as sharp-build.yaml),
${r.transcripts} transcripts, loss ${r.firstLoss.toFixed(3)} ` +
    `-> ${r.lastLoss.toFixed(3)}; SFT took ${Math.round(r.sftSeconds)} s, the whole build ` +
    `${Math.round(r.buildSeconds)} s on
${cpus().length} x ${cpus()[0]?.model ?? 'cpu'} (wasm backend with the ` +
    `native OpenBLAS kernels).

Accuracy on the validation half of the held-out episodes (${measuredOn} ` +
    `questions, names never seen in
training; one trajectory each; 95% Wilson interval), by question shape, and ` +
    `the share of worker
calls that repeat the planted claim (src/eval/planted.ts):

| agents, decoding | ` +
    `accuracy | chain | comparison | aggregation | worker calls repeating the planted claim | invalid tool ` +
    `calls |
| --- | --- | --- | --- | --- | --- | --- |
${rows.join('\n')}

The target for this starting ` +
    `policy, sampled at temperature 1: multi-agent accuracy 0.2-0.5 on the
comparison and aggregation ` +
    `questions, and at least 5% of worker calls repeating the planted claim.
`
  );
}

function modelCard(c: Config, r: BuildFacts & { results: Record<string, AccuracyResult> }): string {
  const i = c.model.init;
  const e = c.train.sft.expert;
  const s = c.data.synthetic;
  const rows = Object.entries(r.results).map(([k, a]) => {
    const b = a.breakdown;
    const harmful = a.workerCalls ? `${(100 * a.workerCalls.harmful).toFixed(1)}%` : '-';
    return (
      `| ${k} | ${formatRate(b.accuracy)} | ${b.report.rate?.toFixed(2) ?? '-'} | ${harmful} | ` +
      `${((b.invalidCalls.rate ?? 0) * 100).toFixed(1)}% |`
    );
  });
  return (
    `# sharp-tiny-sft

The starting policy of \`configs/quickstart.yaml\` and \`configs/ablation.yaml\`: a ` +
    `${i.layers}-layer ${c.model.init.arch}
model (hidden ${i.hidden}, ${i.heads} heads, ${i.kvHeads} KV heads, ` +
    `vocab ${i.vocab}, ${r.parameters.toLocaleString('en')} parameters,
float32) trained by SFT on the ` +
    `transcripts of sharp-rl's scripted expert in the synthetic multi-hop
world (MuSiQue format, ` +
    `${s.minHops}-${s.maxHops} hops, one fresh world per episode). It plays every role:
planner, worker, and ` +
    `the lone agent of single-agent runs. The expert makes mistakes on purpose and
the model inherits them, so ` +
    `RL has something to fix:
worker answers without searching ${e.noSearch}, answers from a distractor ` +
    `paragraph ${e.distractor}, planner
delegates a hop twice ${e.redundant}, delegates an irrelevant subtask ` +
    `${e.irrelevant}.

Built by \`npm run build:sft-model\` (scripts/build-sft-model.ts, settings in ` +
    `configs/sharp-tiny-sft.yaml,
copied here as sharp-build.yaml), seeded: ${s.train} training episodes -> ` +
    `${r.transcripts} transcripts (one packed
sequence each); ${r.steps.toLocaleString('en')} SFT steps of ` +
    `${c.train.sft.batch} transcripts: ${c.train.sft.steps} (lr ${c.train.sft.lr}, ${c.train.sft.schedule}, ` +
    `warmup ${c.train.sft.warmupSteps}),
then ` +
    `${CONTINUATION_STAGES.map(
      (st) =>
        `${st.steps} (lr ${st.lr}, ${st.schedule}${
          st.data
            ? `, on the transcripts ` +
              `of ${s.train} fresh episodes (data seed ${st.data.seed}) with copy turns ` +
              `weighted ${st.data.copyWeight}`
            : ''
        })`,
    ).join(', ')}, ` +
    `each from the previous weights;
loss ${r.firstLoss.toFixed(3)} -> ${r.lastLoss.toFixed(3)}. SFT took ` +
    `${Math.round(r.sftSeconds)} s, the whole build ${Math.round(r.buildSeconds)} s on
${cpus().length} x ` +
    `${cpus()[0]?.model ?? 'cpu'} (wasm backend with the native OpenBLAS kernels).

Held-out accuracy ` +
    `(${s.heldOut} episodes whose names never occur in training; one trajectory each;
95% Wilson interval):

| ` +
    `agents, decoding | accuracy | worker reports right | harmful worker calls (LOO) | invalid tool calls |
| ` +
    `--- | --- | --- | --- | --- |
${rows.join('\n')}

The target for a starting policy is SFT-only accuracy of ` +
    `roughly 0.3-0.6, so that RL has room and
credit has mistakes to tell apart; where this build stands ` +
    `against it, and why: docs/results.md.
`
  );
}

try {
  await main();
} finally {
  await closeCodeSandbox();
  await closeCalculateWorker();
}
