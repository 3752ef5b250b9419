import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { getProtocol, PROTOCOLS } from './index.ts';
import { catalog, catalogSpecs, DEFAULT_CATALOG, type ToolCatalog } from './tool-catalog.ts';
import { ROOT_TOOLS } from './tool-specs.ts';
import type { Protocol } from './types.ts';

/**
 * The built-in tools' prompts, parsing and formatting, recorded from the protocols as they were
 * before user tools existed (builtin-pin.json). The shipped models were trained on exactly these
 * bytes, so a config without user tools, or one that lists only built-ins, must reproduce them.
 */
interface Pin {
  prompts: Record<string, string>;
  messages: string[];
  parses: Record<'tags' | 'json', unknown[]>;
  formats: Record<'tags' | 'json', Record<string, unknown>>;
}
const pin = JSON.parse(readFileSync(join(import.meta.dirname, 'builtin-pin.json'), 'utf8')) as Pin;

function prompts(protocol: Protocol, c: ToolCatalog): Record<string, string> {
  const p = protocol.name;
  return {
    [`${p}/planner`]: protocol.systemPrompt('P.', catalogSpecs(c, ROOT_TOOLS.multi)),
    [`${p}/planner-parallel`]: protocol.systemPrompt('P.', catalogSpecs(c, ROOT_TOOLS.multi), 3),
    [`${p}/worker`]: protocol.systemPrompt('W.', catalogSpecs(c, c.workerTools)),
    [`${p}/single`]: protocol.systemPrompt('S.', catalogSpecs(c, c.workerTools)),
    [`${p}/direct`]: protocol.systemPrompt('D.', catalogSpecs(c, [])),
  };
}

function formats(protocol: Protocol): Record<string, unknown> {
  return {
    calls: ['delegate', 'search', 'calculate', 'code'].map((n) => protocol.formatCall(n, 'a "q" <x>')),
    parallel: protocol.formatCalls([
      { name: 'delegate', input: 'x' },
      { name: 'delegate', input: 'y' },
    ]),
    answer: protocol.formatAnswer('Oslo'),
    result: protocol.formatResult('out\nmore'),
    stop: protocol.stop,
    parallelStop: protocol.parallelStop,
  };
}

// The default catalog, and one built from an explicit list of the three built-ins.
const catalogs: [string, ToolCatalog][] = [
  ['default', DEFAULT_CATALOG],
  ['listed built-ins', catalog([], ['search', 'calculate', 'code'])],
];

describe('built-in tools are rendered and read exactly as before user tools', () => {
  for (const name of ['tags', 'json'] as const) {
    for (const [what, c] of catalogs) {
      it(`${name}, ${what}: system prompts, parses and formats`, () => {
        const protocol = getProtocol(name, c);
        const expected = Object.fromEntries(Object.entries(pin.prompts).filter(([k]) => k.startsWith(`${name}/`)));
        expect(prompts(protocol, c)).toEqual(expected);
        expect(pin.messages.map((m) => protocol.parse(m))).toEqual(pin.parses[name]);
        expect(formats(protocol)).toEqual(pin.formats[name]);
      });
    }
    it(`${name}: the registry's protocol is the default catalog's`, () => {
      expect(getProtocol(name)).toBe(PROTOCOLS[name]);
      expect(pin.messages.map((m) => PROTOCOLS[name].parse(m))).toEqual(pin.parses[name]);
    });
  }
  it('pins a worker prompt byte for byte (tags)', () => {
    expect(pin.prompts['tags/worker']).toBe(
      'W.\n\nTools (one per message):\n<search>query</search>: Search the paragraphs. Returns the best matching ' +
        'paragraphs as [idx] Title: text.\n<calculate>expression</calculate>: Evaluate an arithmetic expression, ' +
        'e.g. 1987 - 1950.\n<code>code</code>: Run a JavaScript program in a sandbox. Returns what it prints with ' +
        'console.log.\n<answer>answer</answer>: Give your final answer and stop.\nTool output comes back as ' +
        '<result>...</result>.',
    );
  });
});
