import type { ToolCatalog } from './tool-catalog.ts';
import type { ToolSpec } from './tool-specs.ts';

/**
 * A user tool's call arguments, checked against its schema, as the text the engine hands the tool:
 * the string itself for a tool of one string argument (as the built-ins take theirs), else the
 * arguments object as JSON. Both protocols read calls through here, so a call means the same whatever
 * syntax wrote it, and a replay that re-reads a recorded message hands the tool the same text.
 */
export function userArguments(c: ToolCatalog, name: string, args: unknown): { args: string } | { error: string } {
  const spec = c.spec(name) as ToolSpec;
  const check = c.check(name);
  if (typeof args !== 'object' || args === null || Array.isArray(args))
    return { error: `${name}: arguments must be a JSON object` };
  const obj = args as Record<string, unknown>;
  if (spec.param !== '') {
    const value = obj[spec.param];
    if (typeof value === 'string' && value.trim() === '')
      return { error: `${name}: argument "${spec.param}" is empty` };
  }
  const reason = check?.(obj) ?? null;
  if (reason !== null) return { error: `${name}: ${reason}` };
  return { args: spec.param !== '' ? String(obj[spec.param]).trim() : JSON.stringify(obj) };
}
