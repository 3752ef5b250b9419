/**
 * A bad checkpoint file (safetensors, config.json, tokenizer files): the message is one line that
 * names the file and the tensor or field at fault (DEVELOPERS.md: bad input gets a one-line error).
 * The CLI maps it to exit code 2 like any bad-input error.
 */
export class CheckpointError extends Error {
  override readonly name = 'CheckpointError';
  /** Exit code when it reaches the CLI: 2, bad input. */
  readonly exitCode = 2;
}
