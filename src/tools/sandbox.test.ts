import { getQuickJS, type QuickJSRuntime, type QuickJSWASMModule } from 'quickjs-emscripten';
import { beforeAll, describe, expect, it } from 'vitest';
import { runInQuickJS, type CodeOptions } from './sandbox.ts';

/**
 * runInQuickJS in this thread, on the real QuickJS module. The module trapping while it runs promise
 * jobs (a WebAssembly.RuntimeError, seen once on a loaded machine with a recursive `.then` stopped by
 * the deadline) is staged by replacing the runtime's executePendingJobs, as the trap cannot be
 * provoked on demand.
 */

const opts: CodeOptions = { timeoutMs: 20, memoryBytes: 16 << 20, maxOutputChars: 2000 };
let qjs: QuickJSWASMModule;
beforeAll(async () => {
  qjs = await getQuickJS();
});

/** The real module, whose runtimes' promise jobs run `jobs(runtime, interruptHandler)` instead. */
function staged(jobs: (rt: QuickJSRuntime, handler: (rt: QuickJSRuntime) => boolean) => never): QuickJSWASMModule {
  return {
    newRuntime: () => {
      const rt = qjs.newRuntime();
      let handler: (r: QuickJSRuntime) => boolean = () => false;
      const set = rt.setInterruptHandler.bind(rt);
      rt.setInterruptHandler = (h) => {
        handler = h as (r: QuickJSRuntime) => boolean;
        set(h);
      };
      rt.executePendingJobs = () => jobs(rt, handler);
      return rt;
    },
  } as unknown as QuickJSWASMModule;
}

describe('runInQuickJS', () => {
  it('runs a program and shows its last value', () => {
    expect(runInQuickJS(qjs, 'console.log("a"); [1, 2].map((x) => x * 3)', { ...opts, timeoutMs: 5000 })).toEqual({
      ok: true,
      output: 'a\n[3,6]',
    });
  });

  it('shows control characters as \\xNN: a NUL does not cut the output, escape sequences do not pass', () => {
    const o = { ...opts, timeoutMs: 5000 };
    expect(runInQuickJS(qjs, 'console.log("a\\u0000b"); "c\\u0000d"', o)).toEqual({
      ok: true,
      output: 'a\\x00b\nc\\x00d',
    });
    expect(runInQuickJS(qjs, 'console.log("\\u001b[2J\\u001b[31mred\\ttab")', o)).toEqual({
      ok: true,
      output: '\\x1b[2J\\x1b[31mred\ttab',
    });
  });

  it('a module trap after the deadline stopped the program is the timeout; before it, a sandbox failure', () => {
    const trapAfterDeadline = staged((rt, handler) => {
      while (!handler(rt)); // the deadline passes and the interrupt handler says stop
      throw new WebAssembly.RuntimeError('null function or function signature mismatch');
    });
    expect(runInQuickJS(trapAfterDeadline, 'Promise.resolve().then(() => 1); 2', opts)).toEqual({
      ok: false,
      output: 'code error: timeout: program ran longer than 20 ms',
      recycle: true,
    });
    const trapAtOnce = staged(() => {
      throw new WebAssembly.RuntimeError('null function or function signature mismatch');
    });
    expect(runInQuickJS(trapAtOnce, 'Promise.resolve().then(() => 1); 2', opts)).toEqual({
      ok: false,
      output: 'code error: sandbox failure: null function or function signature mismatch',
      recycle: true,
    });
  });
});
