import { Command, CommanderError, Option } from 'commander';
import { UserError } from '../errors.ts';
import { COMMANDS, type CommandSpec, type FlagSpec } from '../recipes/commands.ts';

/**
 * The `sharp` CLI: registers every command of src/recipes/commands.ts with commander and, when one
 * runs, imports its recipe and hands it the parsed options. Typed errors become one line and an
 * exit code.
 */
const collect = (value: string, previous: string[]): string[] => [...previous, value];

/** "in 1..100000", ">= 0" or "<= 64": a flag's declared bounds, for its message. */
function rangeText(min: number | undefined, max: number | undefined): string {
  if (min !== undefined && max !== undefined) return ` in ${min}..${max}`;
  if (min !== undefined) return ` >= ${min}`;
  return max !== undefined ? ` <= ${max}` : '';
}

/**
 * The parser of an int or number flag: the value must parse, then lie within the flag's declared
 * bounds, so an absurd count stops the command as it parses, before it reads or writes anything.
 */
const numeric =
  (command: string, name: string, f: FlagSpec) =>
  (value: string): number => {
    const n = Number(value);
    const kind = f.type === 'int' ? 'an integer' : 'a number';
    if (f.type === 'int' ? !Number.isInteger(n) : !Number.isFinite(n))
      throw new UserError(`${name} expects ${kind}, got '${value}'`);
    if ((f.min !== undefined && n < f.min) || (f.max !== undefined && n > f.max))
      throw new UserError(`${command}: ${name} expects ${kind}${rangeText(f.min, f.max)}, got '${value}'`);
    return n;
  };

/** `maxNewTokens` -> `max-new-tokens`. */
const kebab = (key: string): string => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);

function optionOf(command: string, key: string, f: FlagSpec): Option {
  const long = `--${kebab(key)}`;
  const value = f.value === undefined ? '' : f.optionalValue ? ` [${f.value}]` : ` <${f.value}>`;
  const range = f.min !== undefined && f.max !== undefined ? ` (${f.min}..${f.max})` : '';
  const o = new Option(`${f.short ? `-${f.short}, ` : ''}${long}${value}`, `${f.description}${range}`);
  if (f.choices) o.choices(f.choices);
  if (f.type === 'int' || f.type === 'number') o.argParser(numeric(command, long, f));
  if (f.repeatable) o.argParser(collect).default([]);
  if (f.default !== undefined) o.default(f.default);
  if (f.required) o.makeOptionMandatory();
  return o;
}

/** Declares one command's positional arguments, flags and action on `cmd`. */
function register(cmd: Command, spec: CommandSpec): Command {
  cmd.description(spec.description);
  const positionals: string[] = [];
  for (const [key, f] of Object.entries(spec.flags)) {
    if (f.positional) {
      cmd.argument(`<${key}>`, f.description);
      positionals.push(key);
    } else cmd.addOption(optionOf(spec.name, key, f));
  }
  const load = spec.load;
  if (load) {
    cmd.action(async (...args: unknown[]) => {
      const opts: Record<string, unknown> = {};
      positionals.forEach((key, i) => (opts[key] = args[i]));
      Object.assign(opts, (args[positionals.length + 1] as Command).opts());
      const run = await load();
      await run(opts as never);
    });
  }
  return cmd;
}

export function buildProgram(): Command {
  const program = new Command('sharp')
    .description('Train teams of LLM agents with reinforcement learning (SHARP credit + GRPO) on TensorFlow.js')
    .version('0.1.0')
    .exitOverride()
    .showHelpAfterError(false);
  const byName = new Map<string, Command>([['', program]]);
  for (const spec of COMMANDS) {
    const words = spec.name.split(' ');
    const parent = byName.get(words.slice(0, -1).join(' '));
    if (!parent) throw new Error(`command '${spec.name}' comes before its parent in src/recipes/commands.ts`);
    byName.set(spec.name, register(parent.command(words.at(-1) as string), spec));
  }
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

/**
 * A message as one printable line: control bytes a user's path or value may carry (escape sequences
 * that would recolour or clear the terminal, a newline that would forge a second line) are shown as
 * \xNN instead of sent to the terminal, and characters that print as nothing or as a plain space
 * (a byte order mark, zero-width and direction marks, line separators, no-break spaces) as U+XXXX:
 * a message naming one must show which.
 */
export function printable(message: string): string {
  return message
    .replace(
      // eslint-disable-next-line no-control-regex
      /[\u0000-\u0008\u000a-\u001f\u007f-\u009f]/g,
      (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`,
    )
    .replace(
      /[\p{Cf}\p{Zl}\p{Zp}\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000\u3164\u115f\u1160]/gu,
      (c) => `U+${(c.codePointAt(0) as number).toString(16).toUpperCase().padStart(4, '0')}`,
    );
}

/** Exit code of an error that reached the CLI, after printing its one line (exported for tests). */
export function exitCodeFor(err: unknown): number {
  if (err instanceof CommanderError) {
    // Commander already printed its message (help, version, unknown option).
    return err.exitCode === 0 ? 0 : 2;
  }
  if (err instanceof UserError) {
    process.stderr.write(`sharp: ${printable(err.message)}\n`);
    return err.exitCode;
  }
  if (err instanceof WebAssembly.RuntimeError && err.message.startsWith('Aborted')) {
    // Emscripten's abort: on the wasm backend nearly always a full heap (attention of a large batch).
    process.stderr.write(
      'sharp: the wasm backend aborted, most often because its memory is full: lower train.microBatch or ' +
        'rollout.maxContext (a training run resumes from its last checkpoint)\n',
    );
    return 1;
  }
  process.stderr.write(`sharp: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  return 1;
}
