import type { Tool, ToolOutcome } from './types.ts';
import type { CodeOptions } from './sandbox.ts';
import type { CodeRequest } from './code-worker.ts';
import { builtWorkerUrl } from './build.ts';
import { WorkerHost } from './worker-host.ts';

export type { CodeOptions } from './sandbox.ts';

/**
 * `code` tool: each program runs in a fresh QuickJS sandbox
 * (sandbox.ts) inside one long-lived worker thread (code-worker.ts) that loads the WASM module once.
 *
 * Why a worker: QuickJS polls its interrupt handler only every ~10,000 bytecode branches, so a loop
 * whose body is one slow native call (`for(;;) new Array(1e5).fill(1)`) ran 14 s past a 500 ms limit
 * when measured on the main thread, and the main thread cannot interrupt synchronous WASM. Here the
 * host keeps a hard deadline (limit + HARD_KILL_SLACK_MS): past it the worker is terminated (V8 stops
 * WASM too) and a fresh one starts on the next call. A crash of the WASM module (an abort) is
 * contained the same way. Programs run one at a time, in call order.
 */

/** Grace after the program's own limit before the worker is killed (message latency, JIT warmup). */
const HARD_KILL_SLACK_MS = 250;

class SandboxHost {
  private readonly host = new WorkerHost<Omit<CodeRequest, 'id'>>({
    entry: builtWorkerUrl('code-worker'),
    errorPrefix: 'code error',
    // A thread suffices: the program's memory is QuickJS's, inside the WASM heap it limits itself.
    isolation: { kind: 'thread', resourceLimits: { stackSizeMb: 8 } },
  });

  get started(): number {
    return this.host.started;
  }

  run(code: string, opts: CodeOptions): Promise<ToolOutcome> {
    return this.host.run(
      { code, opts },
      opts.timeoutMs + HARD_KILL_SLACK_MS,
      `code error: timeout: program ran longer than ${opts.timeoutMs} ms`,
    );
  }

  close(): Promise<void> {
    return this.host.close();
  }
}

let host: SandboxHost | undefined;

function sharedHost(): SandboxHost {
  host ??= new SandboxHost();
  return host;
}

function validateOptions(opts: CodeOptions): void {
  for (const key of ['timeoutMs', 'memoryBytes', 'maxOutputChars'] as const) {
    if (!Number.isInteger(opts[key]) || opts[key] <= 0)
      throw new Error(`code: ${key} must be a positive integer, got ${opts[key]}`);
  }
}

/** The `code` tool with the given limits; all code tools of a process share one sandbox worker. */
export function createCode(opts: CodeOptions): Tool {
  validateOptions(opts);
  return (args: string) => sharedHost().run(args, opts);
}

/** Workers started by this process so far (for tests of the kill-and-restart path). */
export function sandboxWorkersStarted(): number {
  return host?.started ?? 0;
}

/** Terminates the sandbox worker, if any (call at shutdown or in a test's afterAll). */
export async function closeCodeSandbox(): Promise<void> {
  await host?.close();
}
