import { CommanderError, type Command } from 'commander';
import { buildProgram } from '../cli/main.ts';
import { UserError } from '../errors.ts';

/**
 * Test harness: the real `sharp` program (main.ts's commands, flags and parsing) with the train /
 * sft / dpo actions bound to their command modules, so the CLI tests spawn exactly what
 * `npx sharp train` runs even before main.ts wires the modules in. Exit codes as main.ts maps them.
 * Usage: tsx src/recipes/cli-harness.ts train --config X
 */
const program = buildProgram();
const bind = (name: string, load: () => Promise<{ run: (opts: Record<string, unknown>) => Promise<void> }>): void => {
  const cmd = program.commands.find((c: Command) => c.name() === name);
  if (!cmd) throw new Error(`cli-harness: main.ts declares no '${name}' command`);
  cmd.action(async (opts: Record<string, unknown>) => (await load()).run(opts));
};
bind('train', () => import('../cli/commands/train.ts'));
bind('sft', () => import('../cli/commands/sft.ts'));
bind('dpo', () => import('../cli/commands/dpo.ts'));
try {
  await program.parseAsync(process.argv);
} catch (err) {
  if (err instanceof CommanderError) process.exitCode = err.exitCode === 0 ? 0 : 2;
  else if (err instanceof UserError) {
    process.stderr.write(`sharp: ${err.message}\n`);
    process.exitCode = err.exitCode;
  } else {
    process.stderr.write(`sharp: internal error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  }
}
