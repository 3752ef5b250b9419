import { Command, CommanderError, Option } from 'commander';
import { UserError } from '../errors.ts';

/**
 * The `sharp` CLI: declares commands and lazy-imports each command module, so
 * `sharp config` does not pay for loading tfjs. Typed errors become one line and an exit code.
 */
const collect = (value: string, previous: string[]): string[] => [...previous, value];
const int = (name: string) => (value: string): number => {
  const n = Number(value);
  if (!Number.isInteger(n)) throw new UserError(`${name} expects an integer, got '${value}'`);
  return n;
};
const num = (name: string) => (value: string): number => {
  const n = Number(value);
  if (!Number.isFinite(n)) throw new UserError(`${name} expects a number, got '${value}'`);
  return n;
};

const backendOption = () => new Option('--backend <name>', 'tensor backend').choices(['auto', 'tensorflow', 'wasm', 'cpu']);
const configOption = (cmd: Command): Command =>
  cmd
    .option('-c, --config <file>', 'YAML config (overrides the schema defaults)')
    .option('--set <key=value>', 'override one config key (repeatable; applied last)', collect, []);

/**
 * A command action that imports its module only when the command runs (so `sharp config` does not
 * load tfjs) and hands it commander's parsed options.
 */
type CommandModule = { run: (opts: never) => Promise<void> };
function lazyRun(load: () => Promise<CommandModule>): (opts: Record<string, unknown>) => Promise<void> {
  return async (opts) => {
    const m = await load();
    await m.run(opts as never);
  };
}

export function buildProgram(): Command {
  const program = new Command('sharp')
    .description('Train teams of LLM agents with reinforcement learning (SHARP credit + GRPO) on TensorFlow.js')
    .version('0.1.0')
    .exitOverride()
    .showHelpAfterError(false);

  configOption(program.command('train').description('SHARP-GRPO training (rollouts -> credit -> advantages -> update)'))
    .addOption(backendOption())
    .option('--resume [dir]', 'resume a run (default: the latest checkpoint of the run)')
    .action(lazyRun(() => import('./commands/train.ts')));

  configOption(program.command('ablate').description('the SHARP ablation: the same RL budget per credit method and seed, then a comparison table and plot'))
    .addOption(backendOption())
    .option('--out <dir>', 'ablation folder (default ablation.out, else <run.dir>/<run.name>); runs inside are resumed')
    .action(lazyRun(() => import('./commands/ablate.ts')));

  configOption(program.command('sft').description('supervised fine-tuning on transcripts'))
    .addOption(backendOption())
    .option('--resume [dir]', 'continue an SFT run from its latest checkpoint (default: the newest run named run.name)')
    .action(lazyRun(() => import('./commands/sft.ts')));
  configOption(program.command('dpo').description('DPO on preference pairs'))
    .addOption(backendOption())
    .option('--resume [dir]', 'continue a DPO run from its latest checkpoint (default: the newest run named run.name)')
    .action(lazyRun(() => import('./commands/dpo.ts')));

  configOption(program.command('eval').description('evaluate on a benchmark and write official-format predictions'))
    .option('--bench <name>', 'benchmark name (see --list)')
    .option('--data <path>', 'benchmark file (default: the shipped sample)')
    .option('--model <dir>', 'checkpoint folder')
    .option('--limit <n>', 'evaluate the first n items', int('--limit'))
    .option('--out <dir>', 'output folder')
    .addOption(new Option('--agents <mode>', 'agent system').choices(['multi', 'single', 'direct']))
    .option('--credit', 'also run counterfactual credit and report it')
    .option('--list', 'list the benchmarks')
    .addOption(new Option('--policy <name>', 'lm (checkpoint) or expert (scripted expert, no model)').choices(['lm', 'expert']))
    .addOption(backendOption())
    .action(lazyRun(() => import('./commands/eval.ts')));

  const config = configOption(program.command('config').description('print the resolved config')).action(async (opts) => {
    const m = await import('./commands/config.ts');
    await m.run(opts as { config?: string; set: string[] });
  });
  config
    .command('schema')
    .description('write configs/schema.json (JSON Schema of the config files)')
    .option('--out <file>', 'output file', 'configs/schema.json')
    .action(async (opts: { out: string }) => {
      const m = await import('./commands/config.ts');
      await m.runSchema(opts);
    });

  program
    .command('doctor')
    .description('report versions, backend, GPU libraries and a measured matmul rate')
    .addOption(backendOption())
    .option('--threads <n>', 'wasm threads (0 = all cores)', int('--threads'), 0)
    .action(async (opts) => {
      const m = await import('./commands/doctor.ts');
      await m.run(opts as { backend?: string; threads: number });
    });

  program
    .command('generate')
    .description('generate a continuation with a checkpoint')
    .requiredOption('--model <dir>', 'checkpoint folder')
    .requiredOption('--prompt <text>', 'prompt text')
    .option('--chat', 'render the prompt through the chat template')
    .option('--max-new-tokens <n>', 'tokens to generate', int('--max-new-tokens'), 64)
    .option('--temperature <t>', 'sampling temperature (0 = greedy)', num('--temperature'), 0)
    .option('--top-p <p>', 'nucleus mass', num('--top-p'), 1)
    .option('--top-k <k>', 'top-k (0 = off)', int('--top-k'), 0)
    .option('--seed <s>', 'sampling seed', int('--seed'), 0)
    .addOption(backendOption())
    .action(lazyRun(() => import('./commands/generate.ts')));

  program
    .command('export')
    .description('LoRA adapters (a checkpoint of a train.lora run) out as a merged Hugging Face checkpoint (--merge) or in PEFT layout')
    .requiredOption('--model <dir>', 'adapter folder (adapter_config.json + adapter_model.safetensors)')
    .requiredOption('--out <dir>', 'output folder (replaced)')
    .option('--merge', 'merge the adapters into the base weights and write a whole Hugging Face checkpoint')
    .option('--base <dir>', "base model folder (default: the adapter_config.json's base_model_name_or_path)")
    .addOption(new Option('--dtype <dtype>', 'dtype of merged weights on disk').choices(['f32', 'bf16']).default('f32'))
    .addOption(backendOption())
    .action(lazyRun(() => import('./commands/export.ts')));

  program
    .command('init-model')
    .description('write a random-init model in Hugging Face layout')
    .addOption(new Option('--arch <arch>', 'model family').choices(['llama', 'qwen2', 'qwen3']).default('llama'))
    .option('--layers <n>', 'layers', int('--layers'), 2)
    .option('--hidden <n>', 'hidden size', int('--hidden'), 128)
    .option('--heads <n>', 'attention heads', int('--heads'), 4)
    .option('--kv-heads <n>', 'key/value heads', int('--kv-heads'), 2)
    .option('--intermediate <n>', 'MLP size', int('--intermediate'), 344)
    .option('--vocab <n>', 'vocabulary size', int('--vocab'), 2000)
    .option('--tokenizer <dir>', 'copy tokenizer files from this folder')
    .option('--seed <s>', 'init seed', int('--seed'), 0)
    .requiredOption('--out <dir>', 'output folder')
    .action(lazyRun(() => import('./commands/init-model.ts')));

  const data = program.command('data').description('datasets: synthetic world, expert transcripts');
  data
    .command('synth')
    .description('write synthetic multi-hop episodes in the MuSiQue format')
    .option('--seed <s>', 'world seed', int('--seed'), 1)
    .option('--n <n>', 'episodes', int('--n'), 100)
    .option('--min-hops <n>', 'fewest hops', int('--min-hops'), 2)
    .option('--max-hops <n>', 'most hops', int('--max-hops'), 4)
    .requiredOption('--out <file>', 'output JSONL')
    .action(lazyRun(() => import('./commands/data-synth.ts')));
  data
    .command('expert')
    .description("write the scripted expert's transcripts (SFT data)")
    .requiredOption('--in <file>', 'episodes JSONL (MuSiQue format)')
    .requiredOption('--out <file>', 'transcripts JSONL')
    .option('-c, --config <file>', 'YAML config (rollout settings)')
    .option('--set <key=value>', 'override one config key (repeatable)', collect, [])
    .action(lazyRun(() => import('./commands/data-expert.ts')));

  configOption(program.command('rollout').description('run the agents and write trajectories'))
    .option('--n <n>', 'episodes', int('--n'), 8)
    .requiredOption('--out <file>', 'trajectories JSONL')
    .addOption(new Option('--policy <kind>', 'who plays the agents').choices(['lm', 'expert', 'random']).default('lm'))
    .addOption(backendOption())
    .action(lazyRun(() => import('./commands/rollout.ts')));

  program
    .command('worker')
    .description('serve the rollout and replay jobs of distributed training runs (rollout.distributed)')
    .requiredOption('--redis <url>', 'Redis URL, e.g. redis://127.0.0.1:6379')
    .option('--concurrency <n>', 'jobs at once in this process (default 1)', int('--concurrency'))
    .option('--queue <name>', 'queue name (rollout.distributed.queue; default sharp-rollout)')
    .option('--lock-s <s>', 'seconds without a lock renewal before a job counts as stalled and is re-run elsewhere (default 30)', num('--lock-s'))
    .option('--connect-timeout-s <s>', 'seconds Redis may be unreachable at start before the worker gives up with exit 2 (default 30)', num('--connect-timeout-s'))
    .addOption(backendOption())
    .action(lazyRun(() => import('./commands/worker.ts')));

  program
    .command('plot')
    .description('render reward / accuracy / credit curves of a run to PNG')
    .argument('<runDir>', 'run folder holding metrics.jsonl')
    .option('--out <dir>', 'output folder (default: <runDir>/plots)')
    .action(async (runDir: string, opts: { out?: string }) => {
      const m = await import('./commands/plot.ts');
      await m.run({ runDir, ...opts });
    });

  program
    .command('view')
    .description('a local web page of a run: curves, trajectories with per-agent and per-message credit, replays, ablation')
    .argument('<runDir>', 'run, eval or ablation folder')
    .option('--port <n>', 'port (0 = any free one)', int('--port'), 8080)
    .option('--host <host>', 'address to bind (default 127.0.0.1: this machine only)')
    .option('--export <file>', 'write one self-contained HTML file instead of serving')
    .action(async (runDir: string, opts: Record<string, unknown>) => {
      const m = await import('./commands/view.ts');
      await m.run({ runDir, ...opts });
    });

  return program;
}


/** Runs the CLI; never throws: prints one line and sets the exit code instead. */
export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (err) {
    process.exitCode = exitCodeFor(err);
  }
}

/** Exit code of an error that reached the CLI, after printing its one line (exported for tests). */
export function exitCodeFor(err: unknown): number {
  if (err instanceof CommanderError) {
    // Commander already printed its message (help, version, unknown option).
    return err.exitCode === 0 ? 0 : 2;
  }
  if (err instanceof UserError) {
    process.stderr.write(`sharp: ${err.message}\n`);
    return err.exitCode;
  }
  if (err instanceof WebAssembly.RuntimeError && err.message.startsWith('Aborted')) {
    // Emscripten's abort: on the wasm backend nearly always a full heap (attention of a large batch).
    process.stderr.write('sharp: the wasm backend aborted, most often because its memory is full: lower train.microBatch or rollout.maxContext (a training run resumes from its last checkpoint)\n');
    return 1;
  }
  process.stderr.write(`sharp: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  return 1;
}
