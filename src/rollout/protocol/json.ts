import type { ChatMessage } from '../types.ts';
import type { ParsedAction, Protocol } from './types.ts';
import { TOOL_SPECS, type ToolSpec } from './tool-specs.ts';
import { DEFAULT_CATALOG, type ToolCatalog } from './tool-catalog.ts';
import { userArguments } from './user-arguments.ts';
import { preview, stripThinking } from './text.ts';

/**
 * The `json` protocol for chat models: Hermes / Qwen3 function calling,
 * `<tool_call>{"name": "search", "arguments": {"query": "..."}}</tool_call>`, results inside
 * `<tool_response>`. The final answer is `<answer>a</answer>` or a call of the `answer` function. A
 * user tool's `arguments` are checked against its schema.
 */

const CALL_OPEN = '<tool_call>';
const CALL_CLOSE = '</tool_call>';

interface Block {
  kind: 'tool_call' | 'answer';
  /** Inner text, or null when never closed. */
  inner: string | null;
}

function scanBlocks(text: string): Block[] {
  const blocks: Block[] = [];
  const open = /<(tool_call|answer)>/g;
  let pos = 0;
  for (;;) {
    open.lastIndex = pos;
    const m = open.exec(text);
    if (!m) break;
    const kind = m[1] as Block['kind'];
    const start = m.index + m[0].length;
    const close = text.indexOf(`</${kind}>`, start);
    if (close < 0) {
      blocks.push({ kind, inner: null });
      break;
    }
    blocks.push({ kind, inner: text.slice(start, close) });
    pos = close + kind.length + 3;
  }
  return blocks;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function tryJson(text: string): { ok: true; value: unknown } | { ok: false; error: string } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch (err) {
    return { ok: false, error: (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '' };
  }
}

/** Reads `{"name": ..., "arguments": {...}}`; models sometimes emit arguments as a JSON string: accepted. */
function parseCall(c: ToolCatalog, inner: string): ParsedAction {
  const parsed = tryJson(inner.trim());
  if (!parsed.ok)
    return { kind: 'invalid', name: '', rawArgs: inner, error: `bad JSON in <tool_call>: ${parsed.error}` };
  const call = parsed.value;
  if (!isRecord(call))
    return {
      kind: 'invalid',
      name: '',
      rawArgs: inner,
      error: '<tool_call> must hold a JSON object {"name": ..., "arguments": {...}}',
    };
  const name = call['name'];
  if (typeof name !== 'string' || name === '')
    return { kind: 'invalid', name: '', rawArgs: inner, error: '<tool_call> object lacks a string "name"' };
  let args: unknown = call['arguments'] ?? call['parameters'] ?? {};
  if (typeof args === 'string') {
    const inner2 = tryJson(args);
    args = inner2.ok ? inner2.value : args;
  }
  const rawArgs = JSON.stringify(args) ?? '';
  const spec = c.spec(name);
  if (!spec) return { kind: 'invalid', name, rawArgs, error: `unknown tool '${preview(name, 30)}'` };
  if (!isRecord(args)) return { kind: 'invalid', name, rawArgs, error: `"arguments" of ${name} must be a JSON object` };
  if (c.check(name)) {
    const checked = userArguments(c, name, args);
    if ('error' in checked) return { kind: 'invalid', name, rawArgs, error: checked.error };
    return { kind: 'call', name, args: checked.args, rawArgs };
  }
  const param = spec.param;
  const value = args[param];
  const text =
    typeof value === 'string' ? value : typeof value === 'number' || typeof value === 'boolean' ? String(value) : null;
  if (text === null) return { kind: 'invalid', name, rawArgs, error: `${name} needs a string argument "${param}"` };
  if (text.trim() === '') return { kind: 'invalid', name, rawArgs, error: `${name}: argument "${param}" is empty` };
  if (name === 'answer') return { kind: 'answer', text: text.trim() };
  return { kind: 'call', name, args: text.trim(), rawArgs };
}

function parseJsonProtocol(c: ToolCatalog, raw: string): ParsedAction {
  const text = stripThinking(raw);
  if (text.trim() === '') return { kind: 'none' };
  const blocks = scanBlocks(text);
  if (blocks.length > 1) {
    // Several well-formed <tool_call> blocks, as Qwen3's template renders parallel calls: the engine decides whether
    // they may run together.
    const parsed = blocks.map((b) => (b.kind === 'tool_call' && b.inner !== null ? parseCall(c, b.inner) : null));
    if (parsed.every((p): p is Extract<ParsedAction, { kind: 'call' }> => p?.kind === 'call')) {
      return { kind: 'calls', calls: parsed.map((p) => ({ name: p.name, args: p.args, rawArgs: p.rawArgs })) };
    }
    return {
      kind: 'invalid',
      name: '',
      rawArgs: '',
      error: `several calls in one message (${blocks.length}); make exactly one call per message`,
    };
  }
  const block = blocks[0];
  if (block) {
    if (block.inner === null)
      return {
        kind: 'invalid',
        name: block.kind === 'answer' ? 'answer' : '',
        rawArgs: '',
        error: `unclosed <${block.kind}>: close it with </${block.kind}>`,
      };
    if (block.kind === 'answer') {
      const answer = block.inner.trim();
      if (answer === '')
        return { kind: 'invalid', name: 'answer', rawArgs: block.inner, error: 'empty <answer></answer>' };
      return { kind: 'answer', text: answer };
    }
    return parseCall(c, block.inner);
  }
  if (text.includes(CALL_CLOSE))
    return { kind: 'invalid', name: '', rawArgs: '', error: `${CALL_CLOSE} without an opening ${CALL_OPEN}` };
  const tag = c.names.length === DEFAULT_CATALOG.names.length ? BUILTIN_TAG.exec(text) : anyTag(c, text);
  if (tag)
    return {
      kind: 'invalid',
      name: tag[1] ?? '',
      rawArgs: '',
      error: `write calls as ${CALL_OPEN}{"name": "${tag[1]}", "arguments": {...}}${CALL_CLOSE}`,
    };
  return {
    kind: 'invalid',
    name: '',
    rawArgs: '',
    error:
      `no tool call or answer in the message ('${preview(text)}'); write ${CALL_OPEN}...${CALL_CLOSE} or ` +
      `<answer>...</answer>`,
  };
}

const BUILTIN_TAG = /<(delegate|search|calculate|code)>/;

/** A call written as a tag of the catalog's tools (the tags protocol's syntax): the same hint. */
function anyTag(c: ToolCatalog, text: string): RegExpExecArray | null {
  const names = c.names.filter((n) => n !== 'answer').map((n) => n.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&'));
  return new RegExp(`<(${names.join('|')})>`).exec(text);
}

/** One function's line in <tools>: a user tool's schema as given; the built-ins' exactly as trained on. */
function functionSchema(t: ToolSpec): string {
  if (t.schema)
    return JSON.stringify({
      type: 'function',
      function: { name: t.name, description: t.description, parameters: t.schema },
    });
  return JSON.stringify({
    type: 'function',
    function: {
      name: t.name,
      description: t.description,
      parameters: {
        type: 'object',
        properties: { [t.param]: { type: 'string', description: t.paramDescription } },
        required: [t.param],
      },
    },
  });
}

/** The tool block of Qwen3's chat template (the wording the model was trained on), one call per message. */
function systemPrompt(rolePrompt: string, tools: readonly ToolSpec[], parallel = 1): string {
  const rule =
    parallel > 1
      ? `one function per message, or up to ${parallel} delegate functions at once (one <tool_call> block each),`
      : 'one function per message';
  return (
    `${rolePrompt}\n\n# Tools\n\nYou may call ${rule} to assist with the user query.\n\nYou are provided with ` +
    `function signatures within <tools></tools> XML ` +
    `tags:\n<tools>\n${tools.map(functionSchema).join('\n')}\n</tools>\n\nFor each function call, return a json ` +
    `object with function name and arguments within ${CALL_OPEN}${CALL_CLOSE} XML tags:\n${CALL_OPEN}\n{"name": ` +
    `<function-name>, "arguments": <args-json-object>}\n${CALL_CLOSE}\nGive the final answer with the answer ` +
    `function or as <answer>...</answer>.`
  );
}

/**
 * Qwen3's template renders a `tool` message as `<|im_start|>user\n<tool_response>\n...\n</tool_response>`;
 * a user message carrying that wrapper renders to the same bytes there and stays correct under any other
 * template or the plain fallback, so the wrapper is written here and the role is `user`.
 */
function formatResult(output: string): ChatMessage {
  return { role: 'user', content: `<tool_response>\n${output}\n</tool_response>` };
}

function unwrapResult(content: string): string {
  const m = /^<tool_response>\n([\s\S]*)\n<\/tool_response>$/.exec(content);
  return m ? (m[1] ?? '') : content;
}

/**
 * The `arguments` object of a call whose input is the engine's argument text: a one-string tool's
 * string under its parameter name, a several-argument user tool's JSON object as it is.
 */
function callArguments(c: ToolCatalog, name: string, input: string): unknown {
  const spec = c.spec(name) ?? TOOL_SPECS.answer;
  return spec.param === '' ? (JSON.parse(input) as unknown) : { [spec.param]: input };
}

/** The json protocol over a catalog's tools. */
export function createJsonProtocol(c: ToolCatalog): Protocol {
  return {
    name: 'json',
    systemPrompt,
    parse: (text) => parseJsonProtocol(c, text),
    formatResult,
    unwrapResult,
    formatCall: (name, input) =>
      `${CALL_OPEN}\n${JSON.stringify({ name, arguments: callArguments(c, name, input) })}\n${CALL_CLOSE}`,
    formatCalls: (calls) =>
      calls
        .map((k) =>
          [CALL_OPEN, JSON.stringify({ name: k.name, arguments: callArguments(c, k.name, k.input) }), CALL_CLOSE].join(
            '\n',
          ),
        )
        .join('\n'),
    formatAnswer: (text) => `<answer>${text}</answer>`,
    stop: [CALL_CLOSE, '</answer>'],
    parallelStop: ['</answer>'],
  };
}

export const jsonProtocol: Protocol = createJsonProtocol(DEFAULT_CATALOG);
