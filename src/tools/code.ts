import { existsSync } from 'node:fs';
import { Worker } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Tool, ToolOutcome } from './types.ts';
import type { CodeOptions } from './sandbox.ts';
import type { CodeRequest } from './code-worker.ts';

export type { CodeOptions } from './sandbox.ts';

/**
 * `code` tool (DESIGN.md section 4, issue 4 item 4): each program runs in a fresh QuickJS sandbox
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
/** Longest wait for a new worker to load tsx + QuickJS (measured ~1 s on a busy 2-core machine). */
const START_TIMEOUT_MS = 30_000;

type Reply = { id: number; outcome: ToolOutcome } | { ready: true };

/**
 * The worker runs TypeScript, so it starts through tsx's ESM API exactly as bin/sharp.js does. The
 * module path comes from tsx's `esm/api` export (import condition) next to its main loader.
 */
function bootstrapSource(): string {
  const require = createRequire(import.meta.url);
  const apiPath = join(dirname(require.resolve('tsx')), 'esm', 'api', 'index.mjs');
  if (!existsSync(apiPath)) throw new Error(`tsx ESM API not found at ${apiPath}`);
  const tsxApi = pathToFileURL(apiPath).href;
  const entry = new URL('./code-worker.ts', import.meta.url).href;
  return `import(${JSON.stringify(tsxApi)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}); })`;
}

class SandboxHost {
  private worker: Worker | undefined;
  private starting: Promise<Worker> | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 0;
  /** Workers started so far (tests check that a kill leads to exactly one restart). */
  started = 0;

  run(code: string, opts: CodeOptions): Promise<ToolOutcome> {
    const job = this.queue.then(() => this.runNow(code, opts));
    this.queue = job.catch(() => undefined);
    return job;
  }

  private start(): Promise<Worker> {
    this.starting ??= new Promise<Worker>((resolve, reject) => {
      const w = new Worker(bootstrapSource(), { eval: true, resourceLimits: { stackSizeMb: 8 } });
      this.started++;
      const timer = setTimeout(() => {
        void w.terminate();
        reject(new Error(`sandbox did not start within ${START_TIMEOUT_MS} ms`));
      }, START_TIMEOUT_MS);
      const fail = (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      };
      w.once('error', fail);
      w.once('exit', (c) => fail(new Error(`sandbox exited with code ${c} while starting`)));
      w.once('message', (m: Reply) => {
        clearTimeout(timer);
        w.removeAllListeners('error');
        w.removeAllListeners('exit');
        // An idle worker must not keep the process alive (the CLI exits when its work is done).
        w.unref();
        w.on('exit', () => {
          if (this.worker === w) this.worker = undefined;
        });
        if ('ready' in m) resolve(w);
        else reject(new Error('sandbox sent a reply before it was ready'));
      });
    }).finally(() => {
      this.starting = undefined;
    });
    return this.starting.then((w) => (this.worker = w));
  }

  private async runNow(code: string, opts: CodeOptions): Promise<ToolOutcome> {
    let worker: Worker;
    try {
      worker = this.worker ?? (await this.start());
    } catch (e) {
      return { ok: false, output: `code error: sandbox unavailable: ${(e as Error).message}` };
    }
    const id = this.nextId++;
    return new Promise<ToolOutcome>((resolve) => {
      const done = (outcome: ToolOutcome, kill: boolean) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        if (kill) {
          this.worker = undefined;
          void worker.terminate();
        }
        resolve(outcome);
      };
      const onMessage = (m: Reply) => {
        if ('id' in m && m.id === id) done(m.outcome, false);
      };
      const onError = (e: Error) => done({ ok: false, output: `code error: sandbox crashed: ${e.message.split('\n')[0]}` }, true);
      const onExit = (c: number) => done({ ok: false, output: `code error: sandbox exited with code ${c}` }, true);
      const timer = setTimeout(
        () => done({ ok: false, output: `code error: timeout: program ran longer than ${opts.timeoutMs} ms` }, true),
        opts.timeoutMs + HARD_KILL_SLACK_MS,
      );
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      const req: CodeRequest = { id, code, opts };
      worker.postMessage(req);
    });
  }

  /** Stops the worker (tests, shutdown). A later call starts a new one. */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
  }
}

let host: SandboxHost | undefined;

function sharedHost(): SandboxHost {
  host ??= new SandboxHost();
  return host;
}

function validateOptions(opts: CodeOptions): void {
  for (const key of ['timeoutMs', 'memoryBytes', 'maxOutputChars'] as const) {
    if (!Number.isInteger(opts[key]) || opts[key] <= 0) throw new Error(`code: ${key} must be a positive integer, got ${opts[key]}`);
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
