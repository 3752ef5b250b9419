/**
 * The `tags` protocol for small from-scratch models: `<search>query</search>`,
 * `<calculate>e</calculate>`, `<code>js</code>`, `<delegate>t</delegate>`, `<answer>a</answer>`; tool
 * output comes back as `<result>...</result>`. Free text around one tag is allowed (reasoning).
 */
import type { ChatMessage } from '../types.ts';
import type { ParsedAction, Protocol } from './types.ts';
import { ACTION_NAMES, isActionName, type ActionName, type ToolSpec } from './tool-specs.ts';
import { preview, stripThinking } from './text.ts';

/** Tags that are not actions and may appear in a message without being an unknown tool. */
const NON_ACTION_TAGS = new Set(['result', 'think', 'tool_response', 's', 'unk']);

interface Span {
  name: ActionName;
  /** Inner text, or null when the tag is never closed. */
  inner: string | null;
}

/** Scans left to right: each known opening tag up to its own closing tag (arguments may hold other tags). */
function scanCalls(text: string): Span[] {
  const spans: Span[] = [];
  const open = new RegExp(`<(${ACTION_NAMES.join('|')})>`, 'g');
  let pos = 0;
  for (;;) {
    open.lastIndex = pos;
    const m = open.exec(text);
    if (!m) break;
    const name = m[1] as ActionName;
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
function unknownTool(text: string): string | null {
  const re = /<([A-Za-z_][A-Za-z0-9_-]{0,40})>[\s\S]*?<\/\1>/g;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    const name = m[1] ?? '';
    if (!NON_ACTION_TAGS.has(name) && !isActionName(name)) return name;
  }
  return null;
}

function parseTags(raw: string): ParsedAction {
  const text = stripThinking(raw);
  if (text.trim() === '') return { kind: 'none' };
  const spans = scanCalls(text);
  if (spans.length > 1) {
    const names = spans.map((s) => s.name).join(', ');
    // Several closed, non-empty calls (no answer among them): the engine decides whether they may run together.
    if (spans.every((s) => s.name !== 'answer' && s.inner !== null && s.inner.trim() !== '')) {
      return {
        kind: 'calls',
        calls: spans.map((s) => ({
          name: s.name as Exclude<ActionName, 'answer'>,
          args: (s.inner as string).trim(),
          rawArgs: s.inner as string,
        })),
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
    return { kind: 'call', name: span.name, args: arg, rawArgs: span.inner };
  }
  const unknown = unknownTool(text);
  if (unknown !== null) return { kind: 'invalid', name: unknown, rawArgs: '', error: `unknown tool <${unknown}>` };
  const stray = new RegExp(`</(${ACTION_NAMES.join('|')})>`).exec(text);
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

function systemPrompt(rolePrompt: string, tools: readonly ToolSpec[], parallel = 1): string {
  const lines = tools.map((t) => `<${t.name}>${t.param}</${t.name}>: ${t.description}`);
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

export const tagsProtocol: Protocol = {
  name: 'tags',
  systemPrompt,
  parse: parseTags,
  formatResult,
  unwrapResult,
  formatCall: (name, input) => `<${name}>${input}</${name}>`,
  formatCalls: (calls) => calls.map((c) => `<${c.name}>${c.input}</${c.name}>`).join('\n'),
  formatAnswer: (text) => `<answer>${text}</answer>`,
  stop: ACTION_NAMES.map((n) => `</${n}>`),
  parallelStop: ['</answer>'],
};
