/**
 * Every `sharp` command in one table: its name, description, flags and the recipe that runs it.
 * Each command's flags are declared once here; the type of the options its recipe receives is
 * derived from that declaration (`OptionsOf`), and src/cli/main.ts registers the commands from it.
 * The recipes load only when their command runs, so `sharp config` or `--help` loads no tensors.
 */

import { MAX_THREADS, MAX_TIMER_S, MAX_VOCAB } from '../config/sections/bounds.ts';
import { MAX_BOOTSTRAP } from '../config/sections/ablation.ts';
import { MAX_SYNTHETIC_EPISODES } from '../config/sections/data.ts';
import { MAX_EVAL_LIMIT } from '../config/sections/eval.ts';
import { MODEL_DIM_BOUNDS } from '../config/sections/model.ts';
import { MODEL_FAMILIES } from '../model/config.ts';

/**
 * One flag: `--kebab-case` of its camelCase key (`maxNewTokens` -> `--max-new-tokens`), its parsed
 * value under that key. A flag with no `value` is a switch (true when given).
 */
export interface FlagSpec {
  readonly description: string;
  /** Placeholder of the value in the help (`--out <dir>`). */
  readonly value?: string;
  /** The value may be left out (`--resume [dir]`): the option is then `true`. */
  readonly optionalValue?: boolean;
  /** How the value parses: as given (default), an integer, or a finite number (else one line, exit 2). */
  readonly type?: 'string' | 'int' | 'number';
  /**
   * Bounds of an int or number flag, checked as it parses (one line, exit 2, before the command does
   * anything): the same constants as the config key the flag feeds (src/config/sections/bounds.ts).
   */
  readonly min?: number;
  readonly max?: number;
  /** One-letter alias (`-c`). */
  readonly short?: string;
  readonly default?: string | number;
  readonly choices?: readonly string[];
  /** May be given several times; the values collect into a list (default empty). */
  readonly repeatable?: boolean;
  readonly required?: boolean;
  /** A positional argument (`<runDir>`) instead of a flag; always required. */
  readonly positional?: boolean;
}

type Flags = Readonly<Record<string, FlagSpec>>;

type ValueOf<F extends FlagSpec> = F extends { repeatable: true }
  ? string[]
  : F extends { choices: readonly (infer C)[] }
    ? C
    : F extends { type: 'int' | 'number' }
      ? number
      : F extends { value: string }
        ? F extends { optionalValue: true }
          ? string | true
          : string
        : F extends { positional: true }
          ? string
          : boolean;

type AlwaysSet<F> = F extends
  { required: true } | { default: string | number } | { repeatable: true } | { positional: true }
  ? true
  : false;

/** The options object a command's recipe receives: what commander parsed from the declared flags. */
type OptionsOf<Fs extends Flags> = {
  -readonly [K in keyof Fs as AlwaysSet<Fs[K]> extends true ? K : never]: ValueOf<Fs[K]>;
} & {
  -readonly [K in keyof Fs as AlwaysSet<Fs[K]> extends true ? never : K]?: ValueOf<Fs[K]>;
};

type HasDefault<F> = F extends { default: string | number } | { repeatable: true } ? true : false;

type DefaultsOf<Fs extends Flags> = {
  -readonly [K in keyof Fs as HasDefault<Fs[K]> extends true ? K : never]: ValueOf<Fs[K]>;
};

/** A command's options before the defaults are filled in: the flags with a default may be left out. */
export type GivenFlags<Fs extends Flags> = Omit<OptionsOf<Fs>, keyof DefaultsOf<Fs>> & Partial<DefaultsOf<Fs>>;

/**
 * The options commander passes for `given`: each flag's default (an empty list for a repeatable
 * flag) under what was given. For calling a recipe as its command does.
 */
export function withDefaults<Fs extends Flags>(flags: Fs, given: GivenFlags<Fs>): OptionsOf<Fs> {
  const out: Record<string, unknown> = {};
  for (const [key, f] of Object.entries(flags)) {
    if (f.repeatable) out[key] = [];
    else if (f.default !== undefined) out[key] = f.default;
  }
  return { ...out, ...given } as OptionsOf<Fs>;
}

/** A command, or (no `load`) a group of subcommands such as `sharp data`. */
export interface CommandSpec {
  /** Words after `sharp` ('train', 'data synth'); a subcommand follows its parent in the table. */
  readonly name: string;
  readonly description: string;
  readonly flags: Flags;
  readonly load?: () => Promise<(opts: never) => Promise<void>>;
}

/** A table row whose recipe must accept exactly the options its flags declare. */
function command<const Fs extends Flags>(spec: {
  name: string;
  description: string;
  flags: Fs;
  load: () => Promise<(opts: OptionsOf<Fs>) => Promise<void>>;
}): CommandSpec {
  return spec;
}

const configFlags = {
  config: { short: 'c', value: 'file', description: 'YAML config (overrides the schema defaults)' },
  set: { value: 'key=value', description: 'override one config key (repeatable; applied last)', repeatable: true },
} as const;

const backendFlag = {
  backend: { value: 'name', description: 'tensor backend', choices: ['auto', 'tensorflow', 'native', 'wasm', 'cpu'] },
} as const;
/** A tensor backend `--backend` (and the library's `backend` option) may name. */
export type BackendChoice = (typeof backendFlag.backend.choices)[number];

/**
 * Commands that write a path: an existing path they did not write is refused unless --force (src/fs/output-guard.ts).
 */
const forceFlag = {
  force: {
    description:
      "add this command's files to an existing folder of other files, or replace a file another sharp command " +
      'wrote (a file sharp did not write is never replaced)',
  },
} as const;

const trainFlags = {
  ...configFlags,
  ...backendFlag,
  resume: {
    value: 'dir',
    optionalValue: true,
    description: 'resume a run (default: the latest checkpoint of the run)',
  },
} as const;
export type TrainFlags = OptionsOf<typeof trainFlags>;

const ablateFlags = {
  ...configFlags,
  ...backendFlag,
  out: {
    value: 'dir',
    description: 'ablation folder (default ablation.out, else <run.dir>/<run.name>); runs inside are resumed',
  },
  report: {
    description:
      'write the report from the runs already finished in the folder and train nothing (say, while other processes ' +
      'train the rest)',
  },
} as const;
export type AblateFlags = OptionsOf<typeof ablateFlags>;

const sftFlags = {
  ...configFlags,
  ...backendFlag,
  resume: {
    value: 'dir',
    optionalValue: true,
    description: 'continue an SFT run from its latest checkpoint (default: the newest run named run.name)',
  },
} as const;
export type SftFlags = OptionsOf<typeof sftFlags>;

const dpoFlags = {
  ...configFlags,
  ...backendFlag,
  resume: {
    value: 'dir',
    optionalValue: true,
    description: 'continue a DPO run from its latest checkpoint (default: the newest run named run.name)',
  },
} as const;
export type DpoFlags = OptionsOf<typeof dpoFlags>;

export const evalFlags = {
  ...configFlags,
  bench: { value: 'name', description: 'benchmark name (see --list)' },
  data: { value: 'path', description: 'benchmark file (default: the shipped sample)' },
  model: { value: 'dir', description: 'checkpoint folder' },
  limit: { value: 'n', type: 'int', min: 1, max: MAX_EVAL_LIMIT, description: 'evaluate the first n items' },
  out: { value: 'dir', description: 'output folder' },
  agents: { value: 'mode', description: 'agent system', choices: ['multi', 'single', 'direct'] },
  credit: { description: 'also run counterfactual credit and report it' },
  list: { description: 'list the benchmarks' },
  policy: {
    value: 'name',
    description: 'lm (checkpoint) or expert (scripted expert, no model)',
    choices: ['lm', 'expert'],
    default: 'lm',
  },
  retrieval: {
    value: 'mode',
    description:
      "episode: search each question's own paragraphs; open: one BM25 index of every paragraph of the file " +
      '(open-domain)',
    choices: ['episode', 'open'],
  },
  index: { value: 'dir', description: 'search this BM25 index (sharp index build)' },
  retriever: { value: 'url', description: 'search a Search-R1 retrieval server (its POST /retrieve URL)' },
  ...backendFlag,
} as const;
export type EvalFlags = OptionsOf<typeof evalFlags>;

export const auditFlags = {
  ...configFlags,
  model: { value: 'dir', description: 'checkpoint folder (default: model.path)' },
  n: {
    value: 'n',
    type: 'int',
    min: 1,
    max: MAX_SYNTHETIC_EPISODES,
    description:
      'trajectories: one for each of the first n training questions (at most the training split: ' +
      'data.synthetic.train, or the training questions of data.path)',
    default: 256,
  },
  out: {
    value: 'dir',
    description:
      'output folder (default <run.dir>/audit/<checkpoint folder name>); rewritten only if it holds an earlier audit',
  },
  seed: {
    value: 's',
    type: 'int',
    description: "seed of the rollouts, the replays' random numbers and the bootstrap (default run.seed)",
  },
  reps: {
    value: 'n',
    type: 'int',
    min: 1,
    max: MAX_BOOTSTRAP,
    description: 'bootstrap resamples of the trajectories',
    default: 2000,
  },
  ...backendFlag,
} as const;
export type AuditFlags = OptionsOf<typeof auditFlags>;

export type ConfigFlags = OptionsOf<typeof configFlags>;

const configSchemaFlags = {
  out: { value: 'file', description: 'output file', default: 'configs/schema.json' },
} as const;
export type ConfigSchemaFlags = OptionsOf<typeof configSchemaFlags>;

const doctorFlags = {
  ...backendFlag,
  threads: {
    value: 'n',
    type: 'int',
    min: 0,
    max: MAX_THREADS,
    description: 'wasm threads (0 = all cores)',
    default: 0,
  },
} as const;
export type DoctorFlags = OptionsOf<typeof doctorFlags>;

export const generateFlags = {
  model: { value: 'dir', description: 'checkpoint folder', required: true },
  prompt: { value: 'text', description: 'prompt text', required: true },
  chat: { description: 'render the prompt through the chat template' },
  // No upper bound: generate caps it at the positions the model has left after the prompt, with a warning.
  maxNewTokens: { value: 'n', type: 'int', min: 1, description: 'tokens to generate', default: 64 },
  temperature: { value: 't', type: 'number', description: 'sampling temperature (0 = greedy)', default: 0 },
  topP: { value: 'p', type: 'number', description: 'nucleus mass', default: 1 },
  topK: { value: 'k', type: 'int', min: 0, max: MAX_VOCAB, description: 'top-k (0 = off)', default: 0 },
  seed: { value: 's', type: 'int', description: 'sampling seed', default: 0 },
  ...backendFlag,
} as const;
export type GenerateFlags = OptionsOf<typeof generateFlags>;

const exportFlags = {
  model: {
    value: 'dir',
    description: 'adapter folder (adapter_config.json + adapter_model.safetensors)',
    required: true,
  },
  out: {
    value: 'dir',
    description: 'output folder (a new one, or an earlier export: only its files are replaced)',
    required: true,
  },
  merge: { description: 'merge the adapters into the base weights and write a whole Hugging Face checkpoint' },
  base: { value: 'dir', description: "base model folder (default: the adapter_config.json's base_model_name_or_path)" },
  dtype: { value: 'dtype', description: 'dtype of merged weights on disk', choices: ['f32', 'bf16'], default: 'f32' },
  ...forceFlag,
  ...backendFlag,
} as const;
export type ExportFlags = OptionsOf<typeof exportFlags>;

export const initModelFlags = {
  arch: { value: 'arch', description: 'model family', choices: MODEL_FAMILIES, default: 'llama' },
  layers: { value: 'n', type: 'int', min: 1, max: MODEL_DIM_BOUNDS.layers, description: 'layers', default: 2 },
  hidden: { value: 'n', type: 'int', min: 1, max: MODEL_DIM_BOUNDS.hidden, description: 'hidden size', default: 128 },
  heads: { value: 'n', type: 'int', min: 1, max: MODEL_DIM_BOUNDS.heads, description: 'attention heads', default: 4 },
  kvHeads: {
    value: 'n',
    type: 'int',
    min: 1,
    max: MODEL_DIM_BOUNDS.kvHeads,
    description: 'key/value heads',
    default: 2,
  },
  intermediate: {
    value: 'n',
    type: 'int',
    min: 1,
    max: MODEL_DIM_BOUNDS.intermediate,
    description: 'MLP size',
    default: 344,
  },
  vocab: {
    value: 'n',
    type: 'int',
    min: 1,
    max: MODEL_DIM_BOUNDS.vocab,
    description: 'vocabulary size',
    default: 2000,
  },
  tokenizer: { value: 'dir', description: 'copy tokenizer files from this folder' },
  seed: { value: 's', type: 'int', description: 'init seed', default: 0 },
  out: { value: 'dir', description: 'output folder', required: true },
  ...forceFlag,
  ...backendFlag,
} as const;
export type InitModelFlags = OptionsOf<typeof initModelFlags>;

export const dataSynthFlags = {
  seed: { value: 's', type: 'int', min: 0, description: 'world seed', default: 1 },
  n: { value: 'n', type: 'int', min: 1, max: MAX_SYNTHETIC_EPISODES, description: 'episodes', default: 100 },
  minHops: { value: 'n', type: 'int', min: 2, max: 4, description: 'fewest hops', default: 2 },
  maxHops: { value: 'n', type: 'int', min: 2, max: 4, description: 'most hops', default: 4 },
  worlds: {
    value: 'kind',
    description: 'shared: one world for every record; fresh: a world per record (names occur in one record only)',
    choices: ['shared', 'fresh'],
    default: 'shared',
  },
  chain: {
    value: 'w',
    type: 'number',
    description: 'weight of chain questions (each hop needs the one before)',
    default: 1,
  },
  comparison: {
    value: 'w',
    type: 'number',
    description: 'weight of comparison questions (who was born first, X or Y?): independent lookups',
    default: 0,
  },
  aggregation: {
    value: 'w',
    type: 'number',
    description: 'weight of aggregation questions (years between two facts): independent lookups',
    default: 0,
  },
  misleading: {
    value: 'rate',
    type: 'number',
    description: 'share of records with a planted wrong claim in a source search can return',
    default: 0,
  },
  out: { value: 'file', description: 'output JSONL', required: true },
  ...forceFlag,
} as const;
export type DataSynthFlags = OptionsOf<typeof dataSynthFlags>;

export const dataExpertFlags = {
  in: { value: 'file', description: 'episodes JSONL (MuSiQue format)', required: true },
  out: { value: 'file', description: 'transcripts JSONL', required: true },
  config: { short: 'c', value: 'file', description: 'YAML config (rollout settings)' },
  set: { value: 'key=value', description: 'override one config key (repeatable)', repeatable: true },
  ...forceFlag,
} as const;
export type DataExpertFlags = OptionsOf<typeof dataExpertFlags>;

export const rolloutFlags = {
  ...configFlags,
  n: { value: 'n', type: 'int', min: 1, max: MAX_SYNTHETIC_EPISODES, description: 'episodes', default: 8 },
  out: { value: 'file', description: 'trajectories JSONL', required: true },
  policy: { value: 'kind', description: 'who plays the agents', choices: ['lm', 'expert', 'random'], default: 'lm' },
  ...forceFlag,
  ...backendFlag,
} as const;
export type RolloutFlags = OptionsOf<typeof rolloutFlags>;

/** Most jobs one `sharp worker` runs at once: they share one model in one process, each holding its rollouts. */
export const MAX_WORKER_CONCURRENCY = 64;

export const workerFlags = {
  redis: { value: 'url', description: 'Redis URL, e.g. redis://127.0.0.1:6379', required: true },
  concurrency: {
    value: 'n',
    type: 'int',
    min: 1,
    max: MAX_WORKER_CONCURRENCY,
    description: 'jobs at once in this process',
    default: 1,
  },
  queue: { value: 'name', description: 'queue name (rollout.distributed.queue)', default: 'sharp-rollout' },
  lockS: {
    value: 's',
    type: 'number',
    max: MAX_TIMER_S,
    description: 'seconds without a lock renewal before a job counts as stalled and is re-run elsewhere',
    default: 30,
  },
  connectTimeoutS: {
    value: 's',
    type: 'number',
    description: 'seconds Redis may be unreachable at start before the worker gives up with exit 2',
    default: 30,
  },
  ...backendFlag,
} as const;
export type WorkerFlags = OptionsOf<typeof workerFlags>;

const plotFlags = {
  runDir: { positional: true, description: 'run folder holding metrics.jsonl' },
  out: { value: 'dir', description: 'output folder (default: <runDir>/plots)' },
} as const;
export type PlotFlags = OptionsOf<typeof plotFlags>;

const viewFlags = {
  runDir: { positional: true, description: 'run, eval or ablation folder' },
  port: { value: 'n', type: 'int', description: 'port (0 = any free one)', default: 8080 },
  host: { value: 'host', description: 'address to bind (default 127.0.0.1: this machine only)' },
  export: { value: 'file', description: 'write one self-contained HTML file instead of serving' },
  ...forceFlag,
} as const;
export type ViewFlags = OptionsOf<typeof viewFlags>;

const indexBuildFlags = {
  corpus: {
    value: 'file',
    description:
      'corpus: Search-R1 JSONL {id, contents}, or a MuSiQue / HotpotQA / 2Wiki file (its paragraphs, pooled)',
    required: true,
  },
  out: { value: 'dir', description: 'index folder (created; replaced only when it holds an index)', required: true },
} as const;
export type IndexBuildFlags = OptionsOf<typeof indexBuildFlags>;

const indexInfoFlags = {
  dir: { positional: true, description: 'index folder' },
} as const;
export type IndexInfoFlags = OptionsOf<typeof indexInfoFlags>;

const serveRetrievalFlags = {
  index: { value: 'dir', description: 'index folder (sharp index build)', required: true },
  host: { value: 'host', description: 'address to bind (127.0.0.1: this machine only)', default: '127.0.0.1' },
  port: { value: 'n', type: 'int', description: 'port (0 = any free one)', default: 8000 },
  maxTermShare: {
    value: 'p',
    type: 'number',
    description:
      'leave out query words found in more than this share of the passages (1 = exact BM25; see docs/retrieval.md)',
    default: 1,
  },
} as const;
export type ServeRetrievalFlags = OptionsOf<typeof serveRetrievalFlags>;

/** The commands in the order `sharp --help` lists them. */
export const COMMANDS: readonly CommandSpec[] = [
  command({
    name: 'train',
    description: 'SHARP-GRPO training (rollouts -> credit -> advantages -> update)',
    flags: trainFlags,
    load: async () => (await import('./train.ts')).run,
  }),
  command({
    name: 'ablate',
    description: 'the SHARP ablation: the same RL budget per credit method and seed, then a comparison table and plot',
    flags: ablateFlags,
    load: async () => (await import('./ablate.ts')).run,
  }),
  command({
    name: 'sft',
    description: 'supervised fine-tuning on transcripts',
    flags: sftFlags,
    load: async () => (await import('./sft.ts')).run,
  }),
  command({
    name: 'dpo',
    description: 'DPO on preference pairs',
    flags: dpoFlags,
    load: async () => (await import('./dpo.ts')).run,
  }),
  command({
    name: 'eval',
    description: 'evaluate on a benchmark and write official-format predictions',
    flags: evalFlags,
    load: async () => (await import('./eval.ts')).run,
  }),
  command({
    name: 'audit',
    description:
      'credit quality without RL: roll out n trajectories, credit them under every counterfactual (mask, resample, ' +
      'repair) and the oracle, and score how well each credit tells wrong worker reports from right ones (AUROC, ' +
      'blamed shares)',
    flags: auditFlags,
    load: async () => (await import('./audit.ts')).run,
  }),
  command({
    name: 'config',
    description: 'print the resolved config',
    flags: configFlags,
    load: async () => (await import('./config.ts')).run,
  }),
  command({
    name: 'config schema',
    description: 'write configs/schema.json (JSON Schema of the config files)',
    flags: configSchemaFlags,
    load: async () => (await import('./config.ts')).runSchema,
  }),
  command({
    name: 'doctor',
    description: 'report versions, backend, GPU libraries and a measured matmul rate',
    flags: doctorFlags,
    load: async () => (await import('./doctor.ts')).run,
  }),
  command({
    name: 'generate',
    description: 'generate a continuation with a checkpoint',
    flags: generateFlags,
    load: async () => (await import('./generate.ts')).run,
  }),
  command({
    name: 'export',
    description:
      'LoRA adapters (a checkpoint of a train.lora run) out as a merged Hugging Face checkpoint (--merge) or in ' +
      'PEFT layout',
    flags: exportFlags,
    load: async () => (await import('./export.ts')).run,
  }),
  command({
    name: 'init-model',
    description: 'write a random-init model in Hugging Face layout',
    flags: initModelFlags,
    load: async () => (await import('./init-model.ts')).run,
  }),
  { name: 'data', description: 'datasets: synthetic world, expert transcripts', flags: {} },
  command({
    name: 'data synth',
    description: 'write synthetic multi-hop episodes in the MuSiQue format',
    flags: dataSynthFlags,
    load: async () => (await import('./data-synth.ts')).run,
  }),
  command({
    name: 'data expert',
    description: "write the scripted expert's transcripts (SFT data)",
    flags: dataExpertFlags,
    load: async () => (await import('./data-expert.ts')).run,
  }),
  command({
    name: 'rollout',
    description: 'run the agents and write trajectories',
    flags: rolloutFlags,
    load: async () => (await import('./rollout.ts')).run,
  }),
  command({
    name: 'worker',
    description: 'serve the rollout and replay jobs of distributed training runs (rollout.distributed)',
    flags: workerFlags,
    load: async () => (await import('./worker.ts')).run,
  }),
  { name: 'index', description: 'on-disk BM25 indexes of a corpus for the search tool', flags: {} },
  command({
    name: 'index build',
    description: 'build a BM25 index (SQLite FTS5) of a corpus file',
    flags: indexBuildFlags,
    load: async () => (await import('./index-build.ts')).run,
  }),
  command({
    name: 'index info',
    description: 'passages, size, tokenizer, BM25 k1/b and corpus checksum of an index',
    flags: indexInfoFlags,
    load: async () => (await import('./index-info.ts')).run,
  }),
  { name: 'serve', description: 'servers for other processes', flags: {} },
  command({
    name: 'serve retrieval',
    description: "an index behind Search-R1's POST /retrieve protocol (rollout.search.backend remote)",
    flags: serveRetrievalFlags,
    load: async () => (await import('./serve-retrieval.ts')).run,
  }),
  command({
    name: 'plot',
    description: 'render reward / accuracy / credit curves of a run to PNG',
    flags: plotFlags,
    load: async () => (await import('./plot.ts')).run,
  }),
  command({
    name: 'view',
    description:
      'a local web page of a run: curves, trajectories with per-agent and per-message credit, replays, ablation',
    flags: viewFlags,
    load: async () => (await import('./view.ts')).run,
  }),
];
