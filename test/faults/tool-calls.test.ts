import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { PROTOCOLS } from '../../src/rollout/protocol/index.ts';
import { closeCalculateWorker, createCalculate } from '../../src/tools/calculate.ts';
import { closeCodeSandbox, createCode } from '../../src/tools/code.ts';
import type { ToolOutcome } from '../../src/tools/types.ts';

/**
 * Tool calls as a model might write them, generated: parsed by both protocols and run by both
 * tools. Whatever the text, the host process survives, every outcome is `{ok, output}` with a
 * string output (an error outcome says which tool failed), and every call returns in bounded time.
 */

const calc = createCalculate({ timeoutMs: 1000 });
const code = createCode({ timeoutMs: 500, memoryBytes: 16 * 1024 * 1024, maxOutputChars: 2000 });
const tools = { calculate: calc, code } as const;
/** Tool deadline + worker kill + a worker restart on a busy machine. */
const BOUND_MS = 8000;

afterAll(async () => {
  await closeCalculateWorker();
  await closeCodeSandbox();
});

function checkOutcome(o: ToolOutcome, prefix: string): void {
  expect(typeof o.ok).toBe('boolean');
  expect(typeof o.output).toBe('string');
  if (!o.ok) expect(o.output.startsWith(`${prefix} error: `), o.output).toBe(true);
  expect(o.output).not.toMatch(/\n\s+at .*\(.*:\d+:\d+\)/); // no host stack trace
  expect(o.output).not.toMatch(/Aborted\(/);
}

const FUNCS = ['sqrt', 'sin', 'log', 'max', 'min', 'sum', 'ones', 'zeros', 'diag', 'kron', 'resize', 'setPowerset', 'setCartesian', 'map', 'det', 'inv', 'pow', 'factorial', 'gamma', 'range', 'identity', 'size', 'transpose', 'evaluate', 'import', 'parse'];

/** mathjs-like expressions: numbers, ranges, matrices, calls (including the heavy builders), operators. */
const expr: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.integer({ min: -1000, max: 100000 }).map(String),
    fc.double({ noNaN: false }).map(String),
    fc.constantFrom('pi', 'e', 'x', 'NaN', 'Infinity', '[1,2;3,4]', '"s"', 'true', '5 cm', '1:100'),
    fc.tuple(tie('e'), fc.constantFrom('+', '-', '*', '/', '^', ':', '==', ' to ', "'", '!'), tie('e')).map(([a, op, b]) => `(${a})${op}(${b})`),
    fc.tuple(fc.constantFrom(...FUNCS), fc.array(tie('e'), { maxLength: 3 })).map(([f, args]) => `${f}(${args.join(', ')})`),
    fc.tuple(fc.constantFrom('f(x)=', 'a=', ''), tie('e')).map(([p, b]) => `${p}${b}`),
  ),
})).e;

const junk = fc.string({ unit: 'binary', maxLength: 120 });

describe('fuzzed tool calls (both protocols, both tools)', () => {
  it('calculate: generated expressions give a value or an error string, in bounded time, and the next call works', async () => {
    await fc.assert(
      fc.asyncProperty(expr, async (e) => {
        const t0 = Date.now();
        checkOutcome(await calc(e), 'calculate');
        expect(Date.now() - t0).toBeLessThan(BOUND_MS);
      }),
      { numRuns: 150, seed: 17 },
    );
    expect(await calc('6 * 7')).toEqual({ ok: true, output: '42' });
  }, 600_000);

  it('both protocols parse any text without throwing, and calls they accept run safely', async () => {
    const bodies = fc.oneof(expr, junk, fc.constantFrom('while(true){}', 'for(;;){new Array(1e5).fill(1)}', 'let p=Promise.resolve();const f=()=>p.then(f);f()', 'this.constructor.constructor("return process")()', 'new ArrayBuffer(2**31)', 'JSON.stringify(globalThis)'));
    const message = fc.oneof(
      fc.tuple(fc.constantFrom('calculate', 'code', 'search', 'delegate', 'answer', 'bogus'), bodies).chain(([name, body]) =>
        fc.constantFrom(`<${name}>${body}</${name}>`, `<${name}>${body}`, `{"tool": "${name}", "input": ${JSON.stringify(body)}}`, `{"tool": "${name}", "input": ${body}}`, `text <${name}>${body}</${name}> <${name}>x</${name}>`),
      ),
      junk,
    );
    await fc.assert(
      fc.asyncProperty(message, fc.constantFrom('tags', 'json'), async (text, proto) => {
        const action = PROTOCOLS[proto as 'tags' | 'json'].parse(text);
        expect(['call', 'answer', 'invalid', 'none']).toContain(action.kind);
        if (action.kind === 'call' && (action.name === 'calculate' || action.name === 'code')) {
          const t0 = Date.now();
          checkOutcome(await tools[action.name](action.args), action.name);
          expect(Date.now() - t0).toBeLessThan(BOUND_MS);
        }
      }),
      { numRuns: 150, seed: 18 },
    );
    expect(await code('1 + 1')).toEqual({ ok: true, output: '2' });
  }, 600_000);
});

describe('sandbox escapes and exhaustion', () => {
  it.each([
    ['host globals', 'typeof process + typeof require + typeof fetch + typeof setTimeout', true, 'undefinedundefinedundefinedundefined'],
    ['Function constructor reaches only the sandbox', '(function(){}).constructor("return typeof process")()', true, 'undefined'],
    ['import() has no loader', 'import("fs")', false, undefined],
    ['stack exhaustion', 'function f(){return f()} f()', false, 'code error: InternalError: stack overflow'],
    ['heap exhaustion', 'const a = new ArrayBuffer(64 * 1024 * 1024); a.byteLength', false, 'code error: out of memory: program needed more than 16777216 bytes'],
    ['heap exhaustion in a loop (stopped by the deadline or the heap limit)', 'const a=[]; for(;;) a.push(new Array(1e5).fill(1))', false, undefined],
    ['string heap exhaustion (stopped by the deadline or the heap limit)', 'const a=[]; for(;;) a.push("x".repeat(1e5) + a.length)', false, undefined],
    ['busy loop', 'while(true){}', false, 'code error: timeout: program ran longer than 500 ms'],
    ['async busy loop', '(async()=>{for(;;) await 0})()', false, 'code error: timeout: program ran longer than 500 ms'],
    ['recursive then', 'const f=()=>Promise.resolve().then(f); f()', false, 'code error: timeout: program ran longer than 500 ms'],
  ])('%s', async (_name, program, ok, output) => {
    const r = await code(program);
    expect(r.ok).toBe(ok);
    if (output !== undefined) expect(r.output).toBe(output);
    checkOutcome(r, 'code');
    expect(await code('40 + 2')).toEqual({ ok: true, output: '42' });
  });
});
