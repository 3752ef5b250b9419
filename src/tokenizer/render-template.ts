import type { Template } from '@huggingface/jinja';
import { UserError } from '../errors.ts';

/**
 * Renders a model's chat template. The template is the checkpoint's own text, so whatever it throws
 * (its `raise_exception(...)`, an undefined filter) is a problem of that file, reported as one line
 * rather than an internal error with the jinja interpreter's stack.
 */
export function renderChatTemplate(template: Template, vars: Record<string, unknown>): string {
  try {
    return template.render(vars);
  } catch (err) {
    const msg = (err instanceof Error ? err.message : String(err)).split('\n')[0];
    throw new UserError(`chat template: ${msg}`);
  }
}
