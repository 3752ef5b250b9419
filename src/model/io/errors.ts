import { UserError } from '../../errors.ts';

/**
 * A bad checkpoint file (safetensors, config.json, tokenizer files): the message is one line that
 * names the file and the tensor or field at fault (bad input gets a one-line error).
 * The CLI maps it to exit code 2 like any bad-input error.
 */
export class CheckpointError extends UserError {
  override readonly name = 'CheckpointError';
}
