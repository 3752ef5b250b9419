import { existsSync } from 'node:fs';
import { Worker, type ResourceLimits } from 'node:worker_threads';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { ToolOutcome } from './types.ts';

/**
 * One long-lived worker thread that runs tool jobs one at a time, in call order, under a hard
 * wall-clock deadline and V8 heap limits (Node's worker_threads `resourceLimits`). A job that runs
 * past its deadline, exhausts the worker's heap or crashes it is answered with an error outcome; the
 * worker is terminated and a fresh one starts on the next call. Nothing a job does can stop the host
 * process: V8 aborts only the worker isolate when its own heap is full, and `terminate()` stops
 * synchronous JavaScript and WASM alike (https://nodejs.org/api/worker_threads.html#workerterminate).
 *
 * The worker entry must post `{ ready: true }` once loaded, then answer each `{ id, ...request }`
 * with `{ id, outcome, recycle? }`. The worker's stdout and stderr are captured, not passed to the
 * host's: a WASM abort message (emscripten prints it) is reported in the outcome, never on the console.
 */

/**
 * Longest wait for a new worker to load tsx and its module. It takes ~1 s on a busy 2-core machine,
 * but past 30 s when the cores are shared with training jobs; an agent's call must get the tool's
 * answer however long the start took (a start given up on would answer "sandbox unavailable", so a
 * rollout's tool results, and every token after them, would depend on the machine's load). The
 * limit only catches a worker that hangs while loading: one that fails reports 'error' or 'exit'.
 */
const START_TIMEOUT_MS = 600_000;

/** `recycle`: the worker answered but must not be reused (it left state it could not free). */
type Reply = { id: number; outcome: ToolOutcome; recycle?: boolean } | { ready: true };

export interface WorkerHostOptions {
  /** The worker's TypeScript entry module. */
  entry: URL;
  /** Prefix of every error outcome this host produces, e.g. 'code error'. */
  errorPrefix: string;
  resourceLimits: ResourceLimits;
}

/**
 * The worker runs TypeScript, so it starts through tsx's ESM API exactly as bin/sharp.js does. The
 * module path comes from tsx's `esm/api` export (import condition) next to its main loader.
 */
function bootstrapSource(entry: URL): string {
  const require = createRequire(import.meta.url);
  const apiPath = join(dirname(require.resolve('tsx')), 'esm', 'api', 'index.mjs');
  if (!existsSync(apiPath)) throw new Error(`tsx ESM API not found at ${apiPath}`);
  const tsxApi = pathToFileURL(apiPath).href;
  return `import(${JSON.stringify(tsxApi)}).then((m) => { m.register(); return import(${JSON.stringify(entry.href)}); })`;
}

/** First line of a worker error, in words the agent can read. */
function describeCrash(e: Error): string {
  if ((e as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY') return 'out of memory';
  const first = e.message.split('\n')[0] ?? 'unknown error';
  // emscripten's abort text ("Aborted(Assertion failed: ... quickjs.c ...)") means nothing to an agent.
  return /^Aborted\(/.test(first) ? 'the sandbox runtime aborted' : first;
}

export class WorkerHost<Req extends object> {
  private worker: Worker | undefined;
  private starting: Promise<Worker> | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 0;
  /** Workers started so far (tests check that a kill leads to exactly one restart). */
  started = 0;

  constructor(private readonly opts: WorkerHostOptions) {}

  /**
   * Runs one job; `deadlineMs` counts from when the job reaches the (started) worker, so a slow
   * worker start never eats into a job's time. `timeoutMessage` is the outcome past the deadline.
   */
  run(req: Req, deadlineMs: number, timeoutMessage: string): Promise<ToolOutcome> {
    const job = this.queue.then(() => this.runNow(req, deadlineMs, timeoutMessage));
    this.queue = job.catch(() => undefined);
    return job;
  }

  private start(): Promise<Worker> {
    this.starting ??= new Promise<Worker>((resolve, reject) => {
      const w = new Worker(bootstrapSource(this.opts.entry), { eval: true, resourceLimits: this.opts.resourceLimits, stdout: true, stderr: true });
      // Drained and dropped: tool output travels in messages, and a crash is reported by its error.
      w.stdout.resume();
      w.stderr.resume();
      this.started++;
      const timer = setTimeout(() => {
        void w.terminate();
        reject(new Error(`worker did not start within ${START_TIMEOUT_MS} ms`));
      }, START_TIMEOUT_MS);
      const fail = (e: unknown) => {
        clearTimeout(timer);
        reject(e instanceof Error ? e : new Error(String(e)));
      };
      w.once('error', fail);
      w.once('exit', (c) => fail(new Error(`worker exited with code ${c} while starting`)));
      w.once('message', (m: Reply) => {
        clearTimeout(timer);
        w.removeAllListeners('error');
        w.removeAllListeners('exit');
        // An idle worker must not keep the process alive (the CLI exits when its work is done).
        w.unref();
        w.on('exit', () => {
          if (this.worker === w) this.worker = undefined;
        });
        // A crash while idle (none expected) must not become an unhandled 'error' event in the host.
        w.on('error', () => undefined);
        if ('ready' in m) resolve(w);
        else reject(new Error('worker sent a reply before it was ready'));
      });
    }).finally(() => {
      this.starting = undefined;
    });
    return this.starting.then((w) => (this.worker = w));
  }

  private async runNow(req: Req, deadlineMs: number, timeoutMessage: string): Promise<ToolOutcome> {
    const prefix = this.opts.errorPrefix;
    let worker: Worker;
    try {
      worker = this.worker ?? (await this.start());
    } catch (e) {
      return { ok: false, output: `${prefix}: sandbox unavailable: ${(e as Error).message.split('\n')[0]}` };
    }
    const id = this.nextId++;
    return new Promise<ToolOutcome>((resolve) => {
      const done = (outcome: ToolOutcome, kill: boolean) => {
        clearTimeout(timer);
        worker.off('message', onMessage);
        worker.off('error', onError);
        worker.off('exit', onExit);
        if (kill) {
          if (this.worker === worker) this.worker = undefined;
          void worker.terminate();
          // Start the replacement now, while the agent reads the error: loading tsx and the tool's
          // module takes seconds on a busy machine, and the next call should not wait for it.
          this.start().catch(() => undefined);
        }
        resolve(outcome);
      };
      const onMessage = (m: Reply) => {
        if ('id' in m && m.id === id) done(m.outcome, m.recycle === true);
      };
      const onError = (e: Error) => done({ ok: false, output: `${prefix}: sandbox crashed: ${describeCrash(e)}` }, true);
      const onExit = (c: number) => done({ ok: false, output: `${prefix}: sandbox exited with code ${c}` }, true);
      const timer = setTimeout(() => done({ ok: false, output: timeoutMessage }, true), deadlineMs);
      worker.on('message', onMessage);
      worker.on('error', onError);
      worker.on('exit', onExit);
      worker.postMessage({ id, ...req });
    });
  }

  /** Stops the worker (tests, shutdown). A later call starts a new one. */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
  }
}
