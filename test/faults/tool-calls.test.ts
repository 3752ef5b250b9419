import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { PROTOCOLS } from '../../src/rollout/protocol/index.ts';
import { calculateWorkersStarted, closeCalculateWorker, createCalculate } from '../../src/tools/calculate.ts';
import { closeCodeSandbox, createCode, sandboxWorkersStarted } from '../../src/tools/code.ts';
import type { ToolOutcome } from '../../src/tools/types.ts';

/**
 * Tool calls as a model might write them, generated: parsed by both protocols and run by both
 * tools. Whatever the text, the host process survives, every outcome is `{ok, output}` with a
 * string output (an error outcome says which tool failed), and every call returns. Time is bounded
 * by the deadline each tool enforces, not by this machine's clock: a call that hit it reads as a
 * timeout and costs exactly one worker restart, and no other call restarts a worker.
 */

const calc = createCalculate({ timeoutMs: 1000 });
const code = createCode({ timeoutMs: 500, memoryBytes: 16 * 1024 * 1024, maxOutputChars: 2000 });
const tools = { calculate: calc, code } as const;
const started = { calculate: calculateWorkersStarted, code: sandboxWorkersStarted } as const;

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

/**
 * Runs one call and checks what it cost: a worker restart only for a call that the tool stopped
 * (its deadline, its heap limit, a crash) or, for code, one whose runtime could not be freed.
 */
async function callCounted(tool: 'calculate' | 'code', args: string): Promise<ToolOutcome> {
  const before = started[tool]();
  const o = await tools[tool](args);
  checkOutcome(o, tool);
  const restarts = started[tool]() - before;
  expect(restarts).toBeLessThanOrEqual(1);
  if (restarts === 1)
    expect(o.output, o.output).toMatch(
      /^(calculate|code) error: (.*\n)?(timeout|sandbox crashed|sandbox exited|out of memory)/m,
    );
  if (tool === 'calculate' && /^calculate error: (timeout|sandbox)/.test(o.output)) expect(restarts).toBe(1);
  return o;
}

const FUNCS = [
  'sqrt',
  'sin',
  'log',
  'max',
  'min',
  'sum',
  'ones',
  'zeros',
  'diag',
  'kron',
  'resize',
  'setPowerset',
  'setCartesian',
  'map',
  'det',
  'inv',
  'pow',
  'factorial',
  'gamma',
  'range',
  'identity',
  'size',
  'transpose',
  'evaluate',
  'import',
  'parse',
];

/** mathjs-like expressions: numbers, ranges, matrices, calls (including the heavy builders), operators. */
const expr: fc.Arbitrary<string> = fc.letrec<{ e: string }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.integer({ min: -1000, max: 100000 }).map(String),
    fc.double({ noNaN: false }).map(String),
    fc.constantFrom('pi', 'e', 'x', 'NaN', 'Infinity', '[1,2;3,4]', '"s"', 'true', '5 cm', '1:100'),
    fc
      .tuple(tie('e'), fc.constantFrom('+', '-', '*', '/', '^', ':', '==', ' to ', "'", '!'), tie('e'))
      .map(([a, op, b]) => `(${a})${op}(${b})`),
    fc
      .tuple(fc.constantFrom(...FUNCS), fc.array(tie('e'), { maxLength: 3 }))
      .map(([f, args]) => `${f}(${args.join(', ')})`),
    fc.tuple(fc.constantFrom('f(x)=', 'a=', ''), tie('e')).map(([p, b]) => `${p}${b}`),
  ),
})).e;

const junk = fc.string({ unit: 'binary', maxLength: 120 });

describe('fuzzed tool calls (both protocols, both tools)', () => {
  it(
    "calculate: generated expressions give a value or an error string, stopped only by the tool's deadline, and " +
      'the next call works',
    async () => {
      // the worker is started: a restart below is a kill
      expect(await calc('1 + 1')).toEqual({ ok: true, output: '2' });
      await fc.assert(
        fc.asyncProperty(expr, async (e) => {
          await callCounted('calculate', e);
        }),
        { numRuns: 150, seed: 17 },
      );
      expect(await calc('6 * 7')).toEqual({ ok: true, output: '42' });
    },
    600_000,
  );

  it('both protocols parse any text without throwing, and calls they accept run safely', async () => {
    const bodies = fc.oneof(
      expr,
      junk,
      fc.constantFrom(
        'while(true){}',
        'for(;;){new Array(1e5).fill(1)}',
        'let p=Promise.resolve();const f=()=>p.then(f);f()',
        'this.constructor.constructor("return process")()',
        'new ArrayBuffer(2**31)',
        'JSON.stringify(globalThis)',
      ),
    );
    const message = fc.oneof(
      fc
        .tuple(fc.constantFrom('calculate', 'code', 'search', 'delegate', 'answer', 'bogus'), bodies)
        .chain(([name, body]) =>
          fc.constantFrom(
            `<${name}>${body}</${name}>`,
            `<${name}>${body}`,
            `{"tool": "${name}", "input": ${JSON.stringify(body)}}`,
            `{"tool": "${name}", "input": ${body}}`,
            `text <${name}>${body}</${name}> <${name}>x</${name}>`,
          ),
        ),
      junk,
    );
    await fc.assert(
      fc.asyncProperty(message, fc.constantFrom('tags', 'json'), async (text, proto) => {
        const action = PROTOCOLS[proto as 'tags' | 'json'].parse(text);
        expect(['call', 'calls', 'answer', 'invalid', 'none']).toContain(action.kind);
        // Several calls in one message run one after another, each like a single call.
        const calls = action.kind === 'call' ? [action] : action.kind === 'calls' ? action.calls : [];
        for (const call of calls) {
          if (call.name !== 'calculate' && call.name !== 'code') continue;
          if (started[call.name]() === 0) await tools[call.name]('1');
          await callCounted(call.name, call.args);
        }
      }),
      { numRuns: 150, seed: 18 },
    );
    expect(await code('1 + 1')).toEqual({ ok: true, output: '2' });
  }, 600_000);
});

/** Sizes a model might write, up to 1e12: small, near the bound, huge, fractional, negative. */
const size = fc.oneof(
  fc.integer({ min: 0, max: 120 }),
  fc.integer({ min: 9_000, max: 20_000 }),
  fc.integer({ min: 0, max: 1e12 }),
  fc.double({ min: -10, max: 1e12, noNaN: true }).map((x) => Number(x.toPrecision(6))),
  fc.constantFrom(1e9, 1e12, 5e7, 10_001, 10_000, 100, -1, 0.5),
);
/** Lengths of the inputs the functions get (collections of these sizes are built first). */
const small = fc.integer({ min: 0, max: 12_000 });

/** Every allocating function of the calculate tool, and index assignment, with generated sizes. */
const allocating: fc.Arbitrary<string> = fc.oneof(
  fc.tuple(size, size).map(([a, b]) => `size(resize([1], [${a}, ${b}]))`),
  size.map((a) => `size(resize([1], [${a}]))`),
  size.map((a) => `size(resize("ab", [${a}], "x"))`),
  fc.tuple(fc.constantFrom('zeros', 'ones', 'identity'), size, size).map(([f, a, b]) => `size(${f}(${a}, ${b}))`),
  fc.tuple(fc.constantFrom('zeros', 'ones', 'identity'), size).map(([f, a]) => `size(${f}(${a}))`),
  fc.tuple(fc.constantFrom('zeros', 'ones'), size, size).map(([f, a, b]) => `size(${f}(matrix([${a}, ${b}])))`),
  fc.tuple(size, size).map(([a, b]) => `size(ones(bignumber(${a}), ${b}))`),
  size.map((a) => `size(range(0, ${a}))`),
  fc.tuple(size, size).map(([a, c]) => `size(range(0, ${a}, ${c === 0 ? 1 : 1 / c}))`),
  size.map((a) => `size(0:${a})`),
  size.map((a) => `size(range(bignumber(0), bignumber(${a})))`),
  size.map((a) => `size(range(0 m, ${a} m, 1 m))`),
  fc.tuple(small, size).map(([n, k]) => `size(diag(ones(${n}), ${k}))`),
  fc.tuple(small, small).map(([m, n]) => `size(kron(ones(${m}), ones(${n})))`),
  fc.tuple(small, small, small).map(([m, n, o]) => `size(concat(ones(${m}), ones(${n}), ones(${o})))`),
  fc.tuple(size, size).map(([a, b]) => `size(matrixFromFunction([${a}, ${b}], f(i) = 1))`),
  fc.tuple(small, small).map(([m, n]) => `size(setCartesian(1:${m}, 1:${n}))`),
  fc.integer({ min: 0, max: 40 }).map((n) => `size(setPowerset(1:${n}))`),
  fc.tuple(small, small).map(([m, n]) => `size(ones(${m}, 1) * ones(1, ${n}))`),
  fc.tuple(small, small).map(([m, n]) => `size(ones(${m}, 1) + ones(1, ${n}))`),
  fc.tuple(small, small).map(([m, n]) => `size(ones(${m}, 1) .* ones(1, ${n}))`),
  fc.tuple(small, size).map(([n, a]) => `size(reshape(ones(${n}), [${a}, -1]))`),
  size.map((a) => `x = [1]; x[${a}] = 1; size(x)`),
  fc.tuple(size, size).map(([a, b]) => `x = zeros(2, 2); x[${a}, ${b}] = 1; size(x)`),
  fc.tuple(size, size).map(([a, b]) => `x = sparse([1]); x[${a}, ${b}] = 1; size(x)`),
  size.map((a) => `s = "ab"; s[${a}] = "c"; size(s)`),
);

describe('calculate: allocations are bounded before they happen', () => {
  it(
    'resize([1], [1e9]) (which once aborted the whole process) is refused; the process lives and the next call ' +
      'works',
    async () => {
      const calc = createCalculate();
      expect(await calc('1 + 1')).toEqual({ ok: true, output: '2' });
      const before = calculateWorkersStarted();
      expect(await calc('resize([1], [1e9])')).toEqual({
        ok: false,
        output: 'calculate error: resize: more than 10000 elements',
      });
      expect(await calc('6 * 7')).toEqual({ ok: true, output: '42' });
      expect(calculateWorkersStarted()).toBe(before);
    },
  );

  it(
    'fuzzed sizes up to 1e12 for every allocating function: a value of at most 10,000 elements or an error, never a ' +
      'lost worker',
    async () => {
      const calc = createCalculate();
      expect(await calc('1 + 1')).toEqual({ ok: true, output: '2' });
      const before = calculateWorkersStarted();
      await fc.assert(
        fc.asyncProperty(allocating, async (e) => {
          const o = await calc(e);
          checkOutcome(o, 'calculate');
          // Bounded before it ran: neither the heap limit nor the deadline had to stop it.
          expect(o.output, e).not.toMatch(/^calculate error: (timeout|sandbox)/);
          if (o.ok) {
            const dims = JSON.parse(o.output) as number[];
            expect(
              dims.reduce((p, d) => p * d, 1),
              e,
            ).toBeLessThanOrEqual(10_000);
          }
        }),
        { numRuns: 400, seed: 19 },
      );
      expect(calculateWorkersStarted()).toBe(before);
      expect(await calc('6 * 7')).toEqual({ ok: true, output: '42' });
    },
    600_000,
  );
});

describe('sandbox escapes and exhaustion', () => {
  it.each([
    [
      'host globals',
      'typeof process + typeof require + typeof fetch + typeof setTimeout',
      true,
      'undefinedundefinedundefinedundefined',
    ],
    [
      'Function constructor reaches only the sandbox',
      '(function(){}).constructor("return typeof process")()',
      true,
      'undefined',
    ],
    ['import() has no loader', 'import("fs")', false, undefined],
    ['stack exhaustion', 'function f(){return f()} f()', false, 'code error: InternalError: stack overflow'],
    [
      'heap exhaustion',
      'const a = new ArrayBuffer(64 * 1024 * 1024); a.byteLength',
      false,
      'code error: out of memory: program needed more than 16777216 bytes',
    ],
    [
      'heap exhaustion in a loop (stopped by the deadline or the heap limit)',
      'const a=[]; for(;;) a.push(new Array(1e5).fill(1))',
      false,
      undefined,
    ],
    [
      'string heap exhaustion (stopped by the deadline or the heap limit)',
      'const a=[]; for(;;) a.push("x".repeat(1e5) + a.length)',
      false,
      undefined,
    ],
    ['busy loop', 'while(true){}', false, 'code error: timeout: program ran longer than 500 ms'],
    ['async busy loop', '(async()=>{for(;;) await 0})()', false, 'code error: timeout: program ran longer than 500 ms'],
    [
      'recursive then',
      'const f=()=>Promise.resolve().then(f); f()',
      false,
      'code error: timeout: program ran longer than 500 ms',
    ],
  ])('%s', async (_name, program, ok, output) => {
    const r = await code(program);
    expect(r.ok).toBe(ok);
    if (output !== undefined) expect(r.output).toBe(output);
    checkOutcome(r, 'code');
    expect(await code('40 + 2')).toEqual({ ok: true, output: '42' });
  });
});
