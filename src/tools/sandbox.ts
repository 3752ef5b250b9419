/**
 * The sandbox core of the `code` tool: JavaScript in QuickJS
 * compiled to WebAssembly (quickjs-emscripten; never vm2 or node:vm, which share the host's heap and
 * globals). Each program gets a fresh runtime + context with a heap limit, a stack limit and an
 * interrupt handler that stops it at its deadline. The context has only the ECMAScript globals plus a
 * `console` whose output is captured: no require, process, fetch, file system or timers. Every
 * handle is disposed, so repeated runs do not grow the WASM heap (tested with the leak-checking
 * TestQuickJSWASMModule).
 */
import {
  shouldInterruptAfterDeadline,
  type QuickJSContext,
  type QuickJSHandle,
  type QuickJSRuntime,
  type QuickJSWASMModule,
} from 'quickjs-emscripten';
import type { ToolOutcome } from './types.ts';

export interface CodeOptions {
  /** Wall-clock limit of one program. */
  timeoutMs: number;
  /** QuickJS heap limit in bytes. */
  memoryBytes: number;
  /** Captured output kept (console lines, then the last expression's value). */
  maxOutputChars: number;
}

/** Longest program accepted. */
const MAX_CODE_CHARS = 20_000;
/**
 * QuickJS stack limit. Deep recursion must fail inside QuickJS ("stack overflow") before the host's
 * own stack overflows under the nested WASM frames: measured, 512 KiB let the host stack overflow
 * first (and a later runtime free then aborted the WASM module); 256 KiB stops at a depth of ~1,500
 * calls of a small function, with recursion of depth 1,000 still allowed.
 */
const MAX_STACK_BYTES = 256 * 1024;

/**
 * Installs `console.{log,info,warn,error,debug}`, which format their arguments inside the VM (strings
 * as is, objects as JSON, other values with String: NaN, 12n, functions) and hand one line to the
 * host. Runs before the user's program and returns its formatter, which the host keeps to show the
 * last expression's value the same way (out of the program's reach). Control characters other than
 * newline and tab are shown as \xNN: a NUL would end the string at the host's C boundary (cutting
 * the output short) and escape sequences would reach a terminal showing the transcript.
 */
const PRELUDE =
  `(() => {
  const emit = globalThis.__emit;
  delete globalThis.__emit;
  const fmt = (v) => {
    if (typeof v ` +
  `=== 'string') return v;
    if (typeof v === 'object' && v !== null) { try { return JSON.stringify(v); } ` +
  `catch (e) { return String(v); } }
    return String(v);
  };
  const safe = (s) => ` +
  `s.replace(/[\\u0000-\\u0008\\u000b-\\u001f\\u007f-\\u009f]/g, (c) => '\\\\x' + ` +
  `c.charCodeAt(0).toString(16).padStart(2, '0'));
  const log = (...args) => emit(safe(args.map(fmt).join(' ` +
  `')));
  globalThis.console = { log, info: log, warn: log, error: log, debug: log };
  return (v) => ` +
  `safe(fmt(v));
})();`;

/**
 * Console lines, kept up to `limit` characters. What the agent gets, console output and error line
 * together, is at most `limit` characters plus one truncation note: a thrown 10 MB string or array
 * is cut like a 10 MB console line.
 */
class OutputBuffer {
  private text = '';
  truncated = false;
  constructor(private readonly limit: number) {}
  push(line: string): void {
    if (this.truncated) return;
    const next = this.text.length === 0 ? line : `${this.text}\n${line}`;
    if (next.length > this.limit) {
      this.text = next.slice(0, this.limit);
      this.truncated = true;
    } else {
      this.text = next;
    }
  }
  private note(): string {
    return `[output truncated at ${this.limit} characters]`;
  }
  toString(): string {
    return this.truncated ? `${this.text}\n${this.note()}` : this.text;
  }
  /**
   * The output followed by `error` on its own line; the error is kept first, the console output cut to what is left.
   */
  withError(error: string): string {
    const cutError = error.length > this.limit;
    const err = cutError ? error.slice(0, this.limit) : error;
    const room = Math.max(0, this.limit - err.length - 1);
    const cutText = this.truncated || this.text.length > room;
    const text = this.text.slice(0, room);
    const parts = text.length > 0 ? [text, err] : [err];
    return cutText || cutError ? `${parts.join('\n')}\n${this.note()}` : parts.join('\n');
  }
}

/** A value dumped from the VM, as the agent reads it. */
function show(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === undefined) return 'undefined';
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

/** One-line description of an exception thrown inside the VM. */
function describeError(ctx: QuickJSContext, handle: QuickJSHandle, opts: CodeOptions): string {
  const err: unknown = ctx.dump(handle);
  const name =
    typeof err === 'object' && err !== null && 'name' in err ? String((err as { name: unknown }).name) : 'Error';
  // `throw 5` or `throw {a: 1}`: not an Error, so no name or message to show.
  if (typeof err !== 'object' || err === null || !('message' in err)) return `uncaught ${show(err)}`;
  const message = String((err as { message: unknown }).message);
  if (name === 'InternalError' && message === 'interrupted')
    return `timeout: program ran longer than ${opts.timeoutMs} ms`;
  if (/out of memory/i.test(message)) return `out of memory: program needed more than ${opts.memoryBytes} bytes`;
  return `${name}: ${message}`.split('\n')[0] ?? name;
}

/**
 * An outcome plus `recycle`: the runtime could not be freed safely (the deadline stopped the program,
 * or promise jobs were still queued; freeing such a runtime can trip QuickJS's GC assertion and abort
 * the whole WASM module), so it was left allocated and the worker holding it must be replaced.
 */
export type SandboxOutcome = ToolOutcome & { recycle?: boolean };

/**
 * Runs one program in a fresh runtime + context of `qjs` and disposes both. Synchronous: the
 * interrupt handler is the only time limit here (the host in code.ts adds a hard one). Never throws
 * for bad programs. A program the deadline interrupted is a timeout whatever it returned: an async
 * loop stopped mid-way rejects its own promise quietly and would otherwise look like success.
 */
export function runInQuickJS(qjs: QuickJSWASMModule, code: string, opts: CodeOptions): SandboxOutcome {
  if (code.trim().length === 0) return { ok: false, output: 'code error: empty program' };
  if (code.length > MAX_CODE_CHARS)
    return { ok: false, output: `code error: program longer than ${MAX_CODE_CHARS} characters` };
  const runtime = qjs.newRuntime();
  const out = new OutputBuffer(opts.maxOutputChars);
  let interrupted = false;
  // Whether the deadline hit while promise jobs were running (see below).
  const phase = { jobs: false, interruptedInJobs: false };
  let abandon = false;
  const pastDeadline = shouldInterruptAfterDeadline(Date.now() + opts.timeoutMs);
  const timeout = (): SandboxOutcome => ({
    ok: false,
    output: withOutput(out, `code error: timeout: program ran longer than ${opts.timeoutMs} ms`),
  });
  try {
    runtime.setMemoryLimit(opts.memoryBytes);
    runtime.setMaxStackSize(MAX_STACK_BYTES);
    runtime.setInterruptHandler((rt) => {
      const stop = pastDeadline(rt);
      if (stop) {
        interrupted = true;
        if (phase.jobs) phase.interruptedInJobs = true;
      }
      return stop;
    });
    const ctx = runtime.newContext();
    try {
      const emit = ctx.newFunction('__emit', (line) => {
        out.push(ctx.getString(line));
      });
      ctx.setProp(ctx.global, '__emit', emit);
      emit.dispose();
      const prelude = ctx.evalCode(PRELUDE, 'prelude.js', { type: 'global' });
      if (prelude.error) {
        const msg = describeError(ctx, prelude.error, opts);
        prelude.error.dispose();
        return { ok: false, output: withOutput(out, `code error: sandbox setup failed: ${msg}`) };
      }
      const fmt = prelude.value;
      try {
        const outcome = runProgram(ctx, runtime, code, fmt, out, opts, () => interrupted, phase);
        // A promise job stopped by the deadline (a recursive `.then`) leaks its objects, and freeing
        // such a runtime aborts the module; so does one with jobs still queued. Either runtime is
        // abandoned with its worker. A synchronous loop stopped in evalCode frees normally.
        if (phase.interruptedInJobs || runtime.hasPendingJob()) {
          abandon = true;
          return { ...(interrupted ? timeout() : outcome), recycle: true };
        }
        return interrupted ? timeout() : outcome;
      } finally {
        if (!abandon) fmt.dispose();
      }
    } finally {
      if (!abandon) ctx.dispose();
    }
  } catch (e) {
    // Host-side failures (e.g. the WASM module itself out of memory) still answer the agent; the
    // module may be in a bad state, so its worker is replaced. A trap of the module once the deadline
    // has stopped the program (seen with a recursive `.then` interrupted inside its jobs: "null
    // function or function signature mismatch") is reported as the timeout it followed.
    abandon = true;
    if (interrupted) return { ...timeout(), recycle: true };
    return { ok: false, output: `code error: sandbox failure: ${(e as Error).message.split('\n')[0]}`, recycle: true };
  } finally {
    if (!abandon) runtime.dispose();
  }
}

/** Evaluates the program, flushes promise jobs and shows the last value; disposes what it creates. */
function runProgram(
  ctx: QuickJSContext,
  runtime: QuickJSRuntime,
  code: string,
  fmt: QuickJSHandle,
  out: OutputBuffer,
  opts: CodeOptions,
  interrupted: () => boolean,
  phase: { jobs: boolean },
): ToolOutcome {
  const result = ctx.evalCode(code, 'program.js', { type: 'global' });
  if (result.error) {
    const msg = describeError(ctx, result.error, opts);
    result.error.dispose();
    return { ok: false, output: withOutput(out, `code error: ${msg}`) };
  }
  try {
    // Run queued promise jobs (`.then` callbacks) so their console output is captured too.
    phase.jobs = true;
    const jobs = runtime.executePendingJobs();
    phase.jobs = false;
    if (jobs.error) {
      const msg = describeError(ctx, jobs.error, opts);
      jobs.error.dispose();
      return { ok: false, output: withOutput(out, `code error: ${msg}`) };
    }
    jobs.dispose();
    const value = settle(ctx, result.value, fmt, opts);
    if (value.error !== undefined) return { ok: false, output: withOutput(out, `code error: ${value.error}`) };
    // A stopped program has no final value: only its console output goes with the timeout.
    if (value.text !== undefined && !interrupted()) out.push(value.text);
    const text = out.toString();
    return { ok: true, output: text.length > 0 ? text : '(no output)' };
  } finally {
    result.value.dispose();
  }
}

function withOutput(out: OutputBuffer, error: string): string {
  return out.withError(error);
}

/** The last expression's value: shown unless undefined; a promise is reported by its final state. */
function settle(
  ctx: QuickJSContext,
  handle: QuickJSHandle,
  fmt: QuickJSHandle,
  opts: CodeOptions,
): { text?: string; error?: string } {
  if (ctx.typeof(handle) === 'undefined') return {};
  const state = ctx.getPromiseState(handle);
  if (state.type === 'pending') return {};
  if (state.type === 'rejected') {
    const msg = describeError(ctx, state.error, opts);
    state.error.dispose();
    return { error: msg };
  }
  // Non-promise values come back as a fulfilled state with notAPromise set; the handle is the same.
  const v = state.value;
  let text: string | undefined;
  if (ctx.typeof(v) !== 'undefined') {
    const shown = ctx.callFunction(fmt, ctx.undefined, v);
    if (shown.error) {
      shown.error.dispose();
      text = show(ctx.dump(v));
    } else {
      text = ctx.getString(shown.value);
      shown.value.dispose();
    }
  }
  if (!state.notAPromise) v.dispose();
  return text === undefined ? {} : { text };
}
