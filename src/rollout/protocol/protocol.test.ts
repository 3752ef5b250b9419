import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { getProtocol, PROTOCOLS } from './index.ts';
import type { ParsedAction } from './types.ts';
import { roleSpecs, TOOL_SPECS } from './tool-specs.ts';

const tags = PROTOCOLS.tags;
const json = PROTOCOLS.json;

describe('tags protocol', () => {
  it('reads one call with reasoning around it', () => {
    expect(tags.parse('I need the city. <search> Zorvex founder </search>')).toEqual({
      kind: 'call',
      name: 'search',
      args: 'Zorvex founder',
      rawArgs: ' Zorvex founder ',
    });
    expect(tags.parse('<delegate>Who founded Zorvex?</delegate>')).toMatchObject({
      kind: 'call',
      name: 'delegate',
      args: 'Who founded Zorvex?',
    });
    expect(tags.parse('<answer>Kalimar</answer>')).toEqual({ kind: 'answer', text: 'Kalimar' });
  });
  it('keeps tags inside a code argument', () => {
    expect(tags.parse('<code>console.log("<answer>x</answer>")</code>')).toMatchObject({
      kind: 'call',
      name: 'code',
      args: 'console.log("<answer>x</answer>")',
    });
  });
  it('classifies malformed messages', () => {
    const cases: [string, string][] = [
      ['<search>abc', 'unclosed <search>'],
      ['<search>a</search> <answer>b</answer>', 'several calls'],
      ['<delegate>a</delegate><delegate> </delegate>', 'several calls'],
      ['<websearch>x</websearch>', 'unknown tool <websearch>'],
      ['<search>  </search>', 'empty <search>'],
      ['query words</search>', '</search> without an opening'],
      ['once upon a time', 'no tool call or answer'],
    ];
    for (const [text, error] of cases) {
      const p = tags.parse(text);
      expect(p.kind, text).toBe('invalid');
      if (p.kind === 'invalid') expect(p.error, text).toContain(error);
    }
    expect(tags.parse('<websearch>x</websearch>')).toMatchObject({ name: 'websearch' });
  });
  it('reads several closed calls as calls (the engine decides whether they may run together), and writes them', () => {
    expect(tags.parse('<delegate>Who founded A?</delegate>\n<delegate>Who founded B?</delegate>')).toEqual({
      kind: 'calls',
      calls: [
        { name: 'delegate', args: 'Who founded A?', rawArgs: 'Who founded A?' },
        { name: 'delegate', args: 'Who founded B?', rawArgs: 'Who founded B?' },
      ],
    });
    expect(tags.parse('<search>a</search><calculate>1+1</calculate>')).toMatchObject({
      kind: 'calls',
      calls: [{ name: 'search' }, { name: 'calculate' }],
    });
    const text = tags.formatCalls([
      { name: 'delegate', input: 'x' },
      { name: 'delegate', input: 'y' },
    ]);
    expect(text).toBe('<delegate>x</delegate>\n<delegate>y</delegate>');
    expect(tags.parse(text)).toMatchObject({ kind: 'calls', calls: [{ args: 'x' }, { args: 'y' }] });
    expect(tags.parallelStop).toEqual(['</answer>']);
  });
  it('treats empty text and thinking only as none', () => {
    expect(tags.parse('')).toEqual({ kind: 'none' });
    expect(tags.parse('  \n')).toEqual({ kind: 'none' });
    expect(tags.parse('<think>hmm <search>x</search></think>')).toEqual({ kind: 'none' });
    expect(tags.parse('<think>plan</think><answer>7</answer>')).toEqual({ kind: 'answer', text: '7' });
  });
  it('formats calls, answers and results that parse back', () => {
    expect(tags.parse(tags.formatCall('calculate', '2 * 3'))).toMatchObject({
      kind: 'call',
      name: 'calculate',
      args: '2 * 3',
    });
    expect(tags.parse(tags.formatAnswer('Oslo'))).toEqual({ kind: 'answer', text: 'Oslo' });
    expect(tags.formatResult('[3] A: b')).toEqual({ role: 'tool', content: '<result>[3] A: b</result>' });
    expect(tags.unwrapResult(tags.formatResult('x\ny').content)).toBe('x\ny');
    expect(tags.stop).toContain('</search>');
    expect(tags.stop).toContain('</answer>');
  });
  it('renders the role tools into the system prompt', () => {
    const s = tags.systemPrompt('You are the planner.', roleSpecs('planner'));
    expect(s).toContain('<delegate>subtask</delegate>');
    expect(s).toContain('<answer>answer</answer>');
    expect(s).not.toContain('<search>');
  });
});

describe('json protocol', () => {
  it('reads Hermes / Qwen3 tool calls', () => {
    expect(json.parse('<tool_call>\n{"name": "search", "arguments": {"query": "Zorvex"}}\n</tool_call>')).toEqual({
      kind: 'call',
      name: 'search',
      args: 'Zorvex',
      rawArgs: '{"query":"Zorvex"}',
    });
    // arguments given as a JSON string (some models do this)
    expect(
      json.parse('<tool_call>{"name": "calculate", "arguments": "{\\"expression\\": \\"1+2\\"}"}</tool_call>'),
    ).toMatchObject({ kind: 'call', args: '1+2' });
    expect(json.parse('<tool_call>{"name": "answer", "arguments": {"answer": "Oslo"}}</tool_call>')).toEqual({
      kind: 'answer',
      text: 'Oslo',
    });
    expect(json.parse('So: <answer>Oslo</answer>')).toEqual({ kind: 'answer', text: 'Oslo' });
  });
  it('classifies malformed calls', () => {
    const cases: [string, string][] = [
      ['<tool_call>{"name": "search", "arguments": {"query": "x"}', 'unclosed <tool_call>'],
      ['<tool_call>{"name": search}</tool_call>', 'bad JSON'],
      ['<tool_call>[1,2]</tool_call>', 'must hold a JSON object'],
      ['<tool_call>{"arguments": {}}</tool_call>', 'lacks a string "name"'],
      ['<tool_call>{"name": "browse", "arguments": {}}</tool_call>', "unknown tool 'browse'"],
      ['<tool_call>{"name": "search", "arguments": {"q": "x"}}</tool_call>', 'needs a string argument "query"'],
      [
        '<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call><tool_call>{}</tool_call>',
        'several calls',
      ],
      ['<tool_call>{"name": "search", "arguments": {"query": "x"}}</tool_call><answer>y</answer>', 'several calls'],
      ['<search>x</search>', 'write calls as <tool_call>'],
      ['hello there', 'no tool call or answer'],
    ];
    for (const [text, error] of cases) {
      const p = json.parse(text);
      expect(p.kind, text).toBe('invalid');
      if (p.kind === 'invalid') expect(p.error, text).toContain(error);
    }
  });
  it('formats calls that parse back and wraps results as Qwen3 does', () => {
    for (const name of ['delegate', 'search', 'calculate', 'code'] as const) {
      expect(json.parse(json.formatCall(name, 'a "quoted" arg'))).toMatchObject({
        kind: 'call',
        name,
        args: 'a "quoted" arg',
      });
    }
    expect(json.formatResult('out')).toEqual({ role: 'user', content: '<tool_response>\nout\n</tool_response>' });
    // Parallel calls: one <tool_call> block per call, as Qwen3's template renders them
    const two = json.formatCalls([
      { name: 'delegate', input: 'Who founded A?' },
      { name: 'delegate', input: 'Who founded B?' },
    ]);
    expect(two).toBe(
      '<tool_call>\n{"name":"delegate","arguments":{"subtask":"Who founded A?"}}\n</tool_call>\n<tool_call>\n' +
        '{"name":"delegate","arguments":{"subtask":"Who founded B?"}}\n</tool_call>',
    );
    expect(json.parse(two)).toMatchObject({
      kind: 'calls',
      calls: [
        { name: 'delegate', args: 'Who founded A?' },
        { name: 'delegate', args: 'Who founded B?' },
      ],
    });
    expect(json.unwrapResult(json.formatResult('a\nb').content)).toBe('a\nb');
  });
  it('renders function schemas into the system prompt', () => {
    const s = json.systemPrompt('You are a worker.', roleSpecs('worker'));
    expect(s).toContain('<tools>');
    const schemaLines = s.split('\n').filter((l) => l.startsWith('{"type":"function"'));
    expect(schemaLines.map((l) => (JSON.parse(l) as { function: { name: string } }).function.name)).toEqual([
      'search',
      'calculate',
      'code',
      'answer',
    ]);
    expect(TOOL_SPECS.search.param).toBe('query');
  });
});

describe('parsers never throw (property test)', () => {
  // Random strings built from tag fragments, JSON fragments and noise, so that near-misses are common.
  const fragments = [
    ...['search', 'answer', 'delegate', 'calculate', 'code', 'tool_call', 'think', 'foo'].flatMap((t) => [
      `<${t}>`,
      `</${t}>`,
    ]),
    '<result>',
    '{"name": "search", "arguments": {"query": "x"}}',
    '{"name":',
    '"arguments"',
    '<tool_call>{"name": "code", "arguments": {"code": "1"}}</tool_call>',
    '{',
    '}',
    '"',
    '\\',
    '\n',
    ' ',
    'abc',
    '1+2',
    '<',
    '>',
    '/',
  ];
  const messy = fc
    .array(
      fc.oneof(fc.constantFrom(...fragments), fc.string({ maxLength: 8 }), fc.string({ unit: 'binary', maxLength: 6 })),
      { maxLength: 12 },
    )
    .map((p) => p.join(''));
  const classified = (p: ParsedAction): boolean => {
    switch (p.kind) {
      case 'call':
        return p.args.trim() !== '' && ['delegate', 'search', 'calculate', 'code'].includes(p.name);
      case 'calls':
        return (
          p.calls.length > 1 &&
          p.calls.every((c) => c.args.trim() !== '' && ['delegate', 'search', 'calculate', 'code'].includes(c.name))
        );
      case 'answer':
        return p.text.trim() !== '';
      case 'invalid':
        return p.error.length > 0 && !p.error.includes('\n');
      case 'none':
        return true;
    }
  };
  for (const name of ['tags', 'json'] as const) {
    it(`${name}: 10,000 random strings are all classified`, () => {
      const protocol = getProtocol(name);
      const kinds = new Map<string, number>();
      fc.assert(
        fc.property(messy, (text) => {
          const p = protocol.parse(text);
          kinds.set(p.kind, (kinds.get(p.kind) ?? 0) + 1);
          return classified(p);
        }),
        { numRuns: 10_000, seed: 4 },
      );
      // The generator reaches every class (several calls too, sometimes), so the property is not vacuous.
      expect([...kinds.keys()]).toEqual(expect.arrayContaining(['answer', 'call', 'invalid', 'none']));
    });
  }
  it('rejects an unknown protocol name in one line', () => {
    expect(() => getProtocol('xml')).toThrow(/unknown protocol 'xml'/);
  });
});
