import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getQuickJS, type QuickJSWASMModule } from 'quickjs-emscripten';
import { closeCodeSandbox, createCode, sandboxWorkersStarted } from './code.ts';
import { runInQuickJS } from './sandbox.ts';

const opts = { timeoutMs: 1000, memoryBytes: 32 * 1024 * 1024, maxOutputChars: 2000 };
const code = createCode(opts);

afterAll(async () => {
  await closeCodeSandbox();
});

describe('code tool (worker-hosted QuickJS)', () => {
  it('returns console output and the last expression value of a valid program', async () => {
    const r = await code('const xs = [3, 1, 2].sort(); console.log("sorted", xs); xs.reduce((a, b) => a + b, 0)');
    // console.log formats arrays as JSON; the last expression (6) follows on its own line.
    expect(r).toEqual({ ok: true, output: 'sorted [1,2,3]\n6' });
  });

  it('has no host access: require, process, fetch and timers are undefined', async () => {
    const r = await code(
      '[typeof require, typeof process, typeof fetch, typeof setTimeout, typeof globalThis.__emit].join(",")',
    );
    expect(r).toEqual({ ok: true, output: 'undefined,undefined,undefined,undefined,undefined' });
  });

  it('stops while(true){} with a timeout error once its limit has passed', async () => {
    const t0 = Date.now();
    const r = await code('while(true){}');
    const ms = Date.now() - t0;
    expect(r.ok).toBe(false);
    expect(r.output).toBe('code error: timeout: program ran longer than 1000 ms');
    // Only a lower bound: a busy machine makes the clock run long, never short (upper bound: npm run bench).
    expect(ms).toBeGreaterThanOrEqual(990);
  });

  it('kills a loop of slow native calls that QuickJS polls too rarely, then recovers', async () => {
    const before = sandboxWorkersStarted();
    // Each iteration is one long native call; QuickJS would check its deadline only every ~10k.
    const r = await code('for (;;) { const a = new Array(2e5).fill(1); }');
    expect(r).toEqual({ ok: false, output: 'code error: timeout: program ran longer than 1000 ms' });
    // The host's hard deadline killed the worker (QuickJS's own check alone once let it run 14 s
    // past its limit); the next call runs in a fresh worker.
    expect(await code('40 + 2')).toEqual({ ok: true, output: '42' });
    expect(sandboxWorkersStarted()).toBe(before + 1);
  });

  it('refuses a 1 GB allocation with a memory error', async () => {
    const r = await code('const b = new ArrayBuffer(1024 * 1024 * 1024); b.byteLength');
    expect(r).toEqual({ ok: false, output: 'code error: out of memory: program needed more than 33554432 bytes' });
    const s = await code('new Uint8Array(1e9).length');
    expect(s).toEqual({ ok: false, output: 'code error: out of memory: program needed more than 33554432 bytes' });
  });

  it('reports syntax and runtime errors as error outcomes, keeping earlier output', async () => {
    expect(await code('function (')).toEqual({ ok: false, output: 'code error: SyntaxError: function name expected' });
    expect(await code('console.log("before"); null.x')).toEqual({
      ok: false,
      output: "before\ncode error: TypeError: cannot read property 'x' of null",
    });
    expect(await code('')).toEqual({ ok: false, output: 'code error: empty program' });
  });

  it('turns infinite recursion into a QuickJS stack overflow, not a host crash', async () => {
    expect(await code('function f(n) { return f(n + 1); } f(0)')).toEqual({
      ok: false,
      output: 'code error: InternalError: stack overflow',
    });
    // Depth 1,000 stays allowed under the 256 KiB stack limit.
    expect(await code('function g(n) { return n <= 0 ? 0 : 1 + g(n - 1); } g(1000)')).toEqual({
      ok: true,
      output: '1000',
    });
  });

  it('runs promise callbacks and reports rejections', async () => {
    expect(await code('Promise.resolve(5).then((x) => console.log("then", x))')).toEqual({
      ok: true,
      output: 'then 5',
    });
    expect(await code('Promise.reject(new Error("nope"))')).toEqual({ ok: false, output: 'code error: Error: nope' });
  });

  it('truncates long output', async () => {
    const small = createCode({ ...opts, maxOutputChars: 20 });
    const r = await small('for (let i = 0; i < 100; i++) console.log("line " + i)');
    expect(r.ok).toBe(true);
    // 'line 0\nline 1\nline 2' is exactly 20 characters; the rest is dropped.
    expect(r.output).toBe('line 0\nline 1\nline 2\n[output truncated at 20 characters]');
  });

  it.each([
    ["throw 'e'.repeat(1e7)", 'code error: uncaught ', 'e'],
    ["throw new Error('e'.repeat(1e7))", 'code error: Error: ', 'e'],
    ['throw Array(1e5).fill(7)', 'code error: uncaught [', '7,'],
    ["Promise.reject('r'.repeat(1e6))", 'code error: uncaught ', 'r'],
  ])('keeps error text within maxOutputChars: %s', async (program, head, unit) => {
    // A long limit: building a 10 MB string must not meet the deadline on a busy machine.
    const r = await createCode({ ...opts, timeoutMs: 20_000 })(program);
    const note = '\n[output truncated at 2000 characters]';
    expect(r.ok).toBe(false);
    // A 10,000,021-character tool result before; now the first 2,000 characters and the note.
    expect(r.output.length).toBe(2000 + note.length);
    expect(r.output.startsWith(head)).toBe(true);
    expect(r.output.endsWith(note)).toBe(true);
    expect(r.output.slice(head.length, 2000)).toBe(unit.repeat(2000).slice(0, 2000 - head.length));
  });

  it('keeps the error line and cuts console output to what is left of maxOutputChars', async () => {
    const small = createCode({ ...opts, maxOutputChars: 30 });
    // 30 characters: the error line (23) first, then the newline and 6 characters of the console line.
    expect(await small('console.log("a".repeat(100)); throw new Error("boom")')).toEqual({
      ok: false,
      output: 'aaaaaa\ncode error: Error: boom\n[output truncated at 30 characters]',
    });
    expect(await small('console.log("ok"); throw new Error("boom")')).toEqual({
      ok: false,
      output: 'ok\ncode error: Error: boom',
    });
  });

  it('runs 200 calls in one worker with correct results', async () => {
    const before = sandboxWorkersStarted();
    for (let i = 0; i < 200; i++) {
      const r = await code(`const s = "ab".repeat(${1000 + i}); s.length`);
      expect(r).toEqual({ ok: true, output: String(2 * (1000 + i)) });
    }
    expect(sandboxWorkersStarted()).toBe(before);
  });

  it('a synchronous loop stopped by the deadline frees its runtime and keeps the worker', async () => {
    const before = sandboxWorkersStarted();
    expect(await code('let i = 0; while (true) { i++; }')).toEqual({
      ok: false,
      output: 'code error: timeout: program ran longer than 1000 ms',
    });
    expect(await code('6 * 7')).toEqual({ ok: true, output: '42' });
    expect(sandboxWorkersStarted()).toBe(before);
  });

  it('reports an async loop stopped at the deadline as a timeout, not success', async () => {
    const r = await code('(async () => { for (;;) await 0; })(); 1');
    expect(r).toEqual({ ok: false, output: 'code error: timeout: program ran longer than 1000 ms' });
    expect(await code('6 * 7')).toEqual({ ok: true, output: '42' });
  });

  it.each([
    'let p = Promise.resolve(); const f = () => p.then(f); f(); 2',
    'const f = () => Promise.resolve().then(() => f()); f()',
  ])('a recursive .then (%s) is a timeout, never a raw WASM abort, and the sandbox stays healthy', async (program) => {
    const r = await code(program);
    expect(r).toEqual({ ok: false, output: 'code error: timeout: program ran longer than 1000 ms' });
    expect(await code('[1, 2, 3].map((x) => x * 2)')).toEqual({ ok: true, output: '[2,4,6]' });
  });

  it('rejects bad limits where the tool is made', () => {
    expect(() => createCode({ ...opts, timeoutMs: 0 })).toThrow('code: timeoutMs must be a positive integer, got 0');
  });
});

describe('sandbox core (in-process) memory', () => {
  let qjs: QuickJSWASMModule;
  beforeAll(async () => {
    qjs = await getQuickJS();
  });

  it('shows the last value the way console.log does, and non-Error throws as uncaught', () => {
    const run = (c: string) => runInQuickJS(qjs, c, opts);
    expect(run('NaN')).toEqual({ ok: true, output: 'NaN' }); // String(), not JSON (which would say null)
    expect(run('12n ** 2n')).toEqual({ ok: true, output: '144' });
    expect(run('({ a: [1, 2] })')).toEqual({ ok: true, output: '{"a":[1,2]}' });
    expect(run('undefined')).toEqual({ ok: true, output: '(no output)' });
    expect(run('Promise.resolve(7)')).toEqual({ ok: true, output: '7' });
    expect(run('throw 5')).toEqual({ ok: false, output: 'code error: uncaught 5' });
    // The program cannot break the host's formatter by replacing console.
    expect(run('console = null; "still shown"')).toEqual({ ok: true, output: 'still shown' });
  });

  it('does not grow the WASM heap over 200 runs that each allocate ~0.5 MB', () => {
    const program =
      'const s = "x".repeat(1 << 18); const o = { a: [1, 2, 3], s }; console.log(o.a.length); Promise.reject(new ' +
      'Error("e"))';
    for (let i = 0; i < 20; i++) runInQuickJS(qjs, program, opts);
    const before = qjs.getWasmMemory().buffer.byteLength;
    for (let i = 0; i < 200; i++) {
      const r = runInQuickJS(qjs, program, opts);
      expect(r).toEqual({ ok: false, output: '3\ncode error: Error: e' });
    }
    // A leaked runtime or string per call would add >= 200 x 256 KB; allow one page-size growth step.
    expect(qjs.getWasmMemory().buffer.byteLength - before).toBeLessThanOrEqual(16 * 1024 * 1024);
  });
});
