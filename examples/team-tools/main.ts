/**
 * `npm start`: a few steps of RL for a planner-and-workers team on this folder's ten questions, under
 * this folder's reward (reward.ts), then an evaluation of the trained checkpoint; all through the
 * library API, with the results printed. About 30 s on two idle CPU cores: it shows the pipeline,
 * not a gain in accuracy (two steps of four trajectories per question move a policy very little).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { evaluate, loadConfig, train } from 'sharp-rl';
import { correct, grounded } from './reward.ts';

// The installed package: its configs and its shipped starting policy (a tiny model that learned the
// planner / worker protocol on a synthetic world of the same kind as questions.jsonl).
const pkg = 'node_modules/sharp-rl';

// The quickstart's settings (the role prompts the shipped policy was trained with), shortened to
// run in seconds, on questions.jsonl: the last 4 questions are held out for the accuracy
// before and after RL, the first 6 are trained on.
const settings = [
  'run.name=team-tools',
  'run.dir=runs',
  `model.path=${join(pkg, 'models/sharp-tiny-sft')}`,
  'data.source=jsonl',
  'data.path=questions.jsonl',
  'data.benchmarkHeldOut=4',
  'eval.validationShare=0',
  'eval.testSamples=2',
  'eval.creditReport=false',
  'rollout.groupSize=4',
  'train.steps=2',
  'train.batchQuestions=2',
  'train.checkpointEvery=2',
];
const config = loadConfig(join(pkg, 'configs/quickstart.yaml'), settings);
// The workers' tools beside the built-ins: a tool module of this example (tool.ts, `defineTool`) and
// a tiny MCP server of its own (mcp-server.mjs, started on stdio). The shipped policy was trained
// with the built-ins alone, so RL runs with those and the trained checkpoint is evaluated both ways.
const tools =
  'rollout.tools=[search, calculate, code, {module: tool.ts}, {mcp: calendar, command: node, args: [mcp-server.mjs]}]';
const withTools = loadConfig(join(pkg, 'configs/quickstart.yaml'), [...settings, tools]);

// The outcome reward: correct answers, plus a little for answers found in what the workers read.
// TRL's reward_funcs=[correct, grounded], reward_weights=[1, 0.2].
const rewards = [
  { reward: correct, weight: 1 },
  { reward: grounded, weight: 0.2 },
];

const trained = await train(config, { rewards });
const { heldOutBefore: before, heldOutAfterRl: after } = trained.summary;
console.log(`trained ${trained.step} RL steps in ${trained.seconds.toFixed(0)} s -> ${trained.runDir}`);

// Each step's mean outcome reward (the weighted sum above, what credit split between the agents)
// and the share of right answers, from the run's metrics.jsonl.
const steps = readFileSync(join(trained.runDir, 'metrics.jsonl'), 'utf8')
  .split('\n')
  .filter((line) => line.trim() !== '')
  .map((line) => JSON.parse(line) as Record<string, number>);
for (const m of steps)
  console.log(
    `  step ${m.step}: outcome reward ${m['reward/broadcast/planner']?.toFixed(3)} (correct + 0.2 x grounded), ` +
      `accuracy ${m.accuracy?.toFixed(3)}, planner credit ${m['credit/planner']?.toFixed(3)}`,
  );
const pct = (x: number | undefined): string => (x === undefined ? '-' : x.toFixed(2));
const k = before?.samples ?? 1;
console.log(
  `held-out accuracy (${(before?.total ?? 0) / k} questions x ${k} samples): before RL ${pct(before?.accuracy)} -> ` +
    `after RL ${pct(after?.accuracy)}`,
);

// The trained checkpoint on all ten questions, with the built-in tools and with the example's own
// added: official metrics, predictions and a report on disk for each.
const checkpoint = join(trained.runDir, 'checkpoints', `step-${String(trained.step).padStart(8, '0')}`);
for (const [label, cfg, out] of [
  ['built-in tools', config, 'eval'],
  ['+ years_between, calendar MCP', withTools, 'eval-tools'],
] as const) {
  const evaluated = await evaluate({
    config: cfg,
    bench: 'jsonl',
    data: 'questions.jsonl',
    model: checkpoint,
    out: join(trained.runDir, out),
  });
  const metrics = evaluated.report.metrics;
  console.log(
    `eval on ${evaluated.episodes} questions (${label}): em ${pct(metrics.em)}, f1 ${pct(metrics.f1)}, ` +
      `cover_em ${pct(metrics.cover_em)} -> ${evaluated.files.report}`,
  );
}
