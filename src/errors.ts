/**
 * Typed errors shared by every layer. The CLI maps them to exit codes and one-line messages
 *; anything else that escapes is a bug (exit 1 with the stack).
 */
export class UserError extends Error {
  override readonly name: string = 'UserError';
  /** Exit code: 2 for bad input (config, flags, files, checkpoints). */
  readonly exitCode: number = 2;
}
