/**
 * The `tags` protocol for small from-scratch models: `<search>query</search>`,
 * `<calculate>e</calculate>`, `<code>js</code>`, `<delegate>t</delegate>`, `<answer>a</answer>`; tool
 * output comes back as `<result>...</result>`. Free text around one tag is allowed (reasoning). A user
 * tool with one string argument is called the same way; one with several takes a JSON object inside
 * its tag, `<lookup>{"city": "Paris", "year": 1990}</lookup>`.
 */
import type { ChatMessage } from '../types.ts';
import type { ParsedAction, Protocol } from './types.ts';
import type { ToolSpec } from './tool-specs.ts';
import { DEFAULT_CATALOG, namePattern, type ToolCatalog } from './tool-catalog.ts';
import { userArguments } from './user-arguments.ts';
import { preview, stripThinking } from './text.ts';

/** Tags that are not actions and may appear in a message without being an unknown tool. */
const NON_ACTION_TAGS = new Set(['result', 'think', 'tool_response', 's', 'unk']);

interface Span {
  name: string;
  /** Inner text, or null when the tag is never closed. */
  inner: string | null;
}

/** Scans left to right: each known opening tag up to its own closing tag (arguments may hold other tags). */
function scanCalls(text: string, names: string): Span[] {
  const spans: Span[] = [];
  const open = new RegExp(`<(${names})>`, 'g');
  let pos = 0;
  for (;;) {
    open.lastIndex = pos;
    const m = open.exec(text);
    if (!m) break;
    const name = m[1] as string;
    const start = m.index + m[0].length;
    const close = text.indexOf(`</${name}>`, start);
    if (close < 0) {
      spans.push({ name, inner: null });
      break;
    }
    spans.push({ name, inner: text.slice(start, close) });
    pos = close + name.length + 3;
  }
  return spans;
}

/** A closed `<x>...</x>` pair whose name is not an action: a call of an unknown tool. */
function unknownTool(text: string, known: ReadonlySet<string>): string | null {
  const re = /<([A-Za-z_][A-Za-z0-9_-]{0,40})>[\s\S]*?<\/\1>/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const name = m[1] ?? '';
    if (!NON_ACTION_TAGS.has(name) && !known.has(name)) return name;
  }
  return null;
}

/**
 * A closed, non-empty call of a user tool: its arguments checked against the tool's schema. One
 * string argument is the tag's text as for the built-ins; several are a JSON object.
 */
function userCall(c: ToolCatalog, name: string, inner: string): ParsedAction {
  const spec = c.spec(name) as ToolSpec;
  const arg = inner.trim();
  let args: unknown = { [spec.param]: arg };
  if (spec.param === '') {
    try {
      args = JSON.parse(arg) as unknown;
    } catch {
      return {
        kind: 'invalid',
        name,
        rawArgs: inner,
        error: `<${name}> takes a JSON object of its arguments, e.g. <${name}>${exampleArgs(spec)}</${name}>`,
      };
    }
  }
  const checked = userArguments(c, name, args);
  if ('error' in checked) return { kind: 'invalid', name, rawArgs: inner, error: checked.error };
  return { kind: 'call', name, args: checked.args, rawArgs: inner };
}

function parseTags(c: ToolCatalog, raw: string): ParsedAction {
  const text = stripThinking(raw);
  if (text.trim() === '') return { kind: 'none' };
  const spans = scanCalls(text, namePattern(c));
  if (spans.length > 1) {
    const names = spans.map((s) => s.name).join(', ');
    // Several closed, non-empty calls (no answer among them): the engine decides whether they may run together.
    if (spans.every((s) => s.name !== 'answer' && s.inner !== null && s.inner.trim() !== '')) {
      const calls = spans.map((s) =>
        c.check(s.name)
          ? userCall(c, s.name, s.inner as string)
          : { kind: 'call' as const, name: s.name, args: (s.inner as string).trim(), rawArgs: s.inner as string },
      );
      const bad = calls.find((p) => p.kind !== 'call');
      if (bad) return bad;
      return {
        kind: 'calls',
        calls: calls.map((p) => {
          const { name, args, rawArgs } = p as Extract<ParsedAction, { kind: 'call' }>;
          return { name, args, rawArgs };
        }),
      };
    }
    return {
      kind: 'invalid',
      name: spans[0]?.name ?? '',
      rawArgs: spans[0]?.inner ?? '',
      error: `several calls in one message (${names}); make exactly one call per message`,
    };
  }
  const span = spans[0];
  if (span) {
    if (span.inner === null)
      return {
        kind: 'invalid',
        name: span.name,
        rawArgs: '',
        error: `unclosed <${span.name}>: close it with </${span.name}>`,
      };
    const arg = span.inner.trim();
    if (arg === '')
      return {
        kind: 'invalid',
        name: span.name,
        rawArgs: span.inner,
        error: `empty <${span.name}></${span.name}>: write the argument between the tags`,
      };
    if (span.name === 'answer') return { kind: 'answer', text: arg };
    if (c.check(span.name)) return userCall(c, span.name, span.inner);
    return { kind: 'call', name: span.name, args: arg, rawArgs: span.inner };
  }
  const unknown = unknownTool(text, new Set(c.names));
  if (unknown !== null) return { kind: 'invalid', name: unknown, rawArgs: '', error: `unknown tool <${unknown}>` };
  const stray = new RegExp(`</(${namePattern(c)})>`).exec(text);
  if (stray)
    return {
      kind: 'invalid',
      name: stray[1] ?? '',
      rawArgs: '',
      error: `</${stray[1]}> without an opening <${stray[1]}>`,
    };
  return {
    kind: 'invalid',
    name: '',
    rawArgs: '',
    error:
      `no tool call or answer in the message ('${preview(text)}'); write one <tool>...</tool> or ` +
      `<answer>...</answer>`,
  };
}

/** A JSON object of a tool's arguments as the prompt shows it: `{"city": string, "year": integer}`. */
function exampleArgs(t: ToolSpec): string {
  const props = (t.schema?.['properties'] ?? {}) as Record<string, { type?: unknown }>;
  const fields = Object.entries(props).map(([k, p]) => `${JSON.stringify(k)}: ${typeName(p.type)}`);
  return `{${fields.join(', ')}}`;
}

function typeName(type: unknown): string {
  return typeof type === 'string' ? type : Array.isArray(type) ? type.join(' | ') : 'value';
}

/** The prompt line of one tool; the built-ins' is the one the shipped models were trained on. */
function toolLine(t: ToolSpec): string {
  if (!t.schema || t.param !== '') return `<${t.name}>${t.param}</${t.name}>: ${t.description}`;
  const props = (t.schema['properties'] ?? {}) as Record<string, { description?: unknown }>;
  const required = new Set((t.schema['required'] as string[] | undefined) ?? []);
  const notes = Object.entries(props)
    .filter(([, p]) => typeof p.description === 'string')
    .map(([k, p]) => `${k}${required.has(k) ? '' : ' (optional)'}: ${String(p.description).replace(/\.$/, '')}`);
  return `<${t.name}>${exampleArgs(t)}</${t.name}>: ${t.description}${notes.length ? ` (${notes.join('; ')})` : ''}`;
}

function systemPrompt(rolePrompt: string, tools: readonly ToolSpec[], parallel = 1): string {
  const lines = tools.map(toolLine);
  const rule = parallel > 1 ? `one per message, or up to ${parallel} <delegate> together` : 'one per message';
  return (
    `${rolePrompt}\n\nTools (${rule}):\n${lines.join('\n')}\nTool output comes back as ` +
    `<result>...</result>${parallel > 1 ? ', one per call, in order' : ''}.`
  );
}

function formatResult(output: string): ChatMessage {
  return { role: 'tool', content: `<result>${output}</result>` };
}

function unwrapResult(content: string): string {
  const m = /^<result>([\s\S]*)<\/result>$/.exec(content);
  return m ? (m[1] ?? '') : content;
}

/** The tags protocol over a catalog's tools. */
export function createTagsProtocol(c: ToolCatalog): Protocol {
  return {
    name: 'tags',
    systemPrompt,
    parse: (text) => parseTags(c, text),
    formatResult,
    unwrapResult,
    formatCall: (name, input) => `<${name}>${input}</${name}>`,
    formatCalls: (calls) => calls.map((k) => `<${k.name}>${k.input}</${k.name}>`).join('\n'),
    formatAnswer: (text) => `<answer>${text}</answer>`,
    stop: c.names.map((n) => `</${n}>`),
    parallelStop: ['</answer>'],
  };
}

export const tagsProtocol: Protocol = createTagsProtocol(DEFAULT_CATALOG);
