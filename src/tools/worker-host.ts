/**
 * One long-lived worker that runs tool jobs one at a time, in call order, under a hard wall-clock
 * deadline and a heap limit. A job that runs past its deadline, exhausts the worker's heap or
 * crashes it is answered with an error outcome; the worker is killed and a fresh one starts at once,
 * so the next call finds it (nearly) ready.
 *
 * The worker is a thread (worker_threads with `resourceLimits`) or a child process. A thread is
 * cheaper, but V8 ends the whole process, not only the thread, when a single allocation fails (a
 * large array or hash table grown past the heap, a string or BigInt of the maximum size): a tool that
 * runs arbitrary library code on model input (`calculate`) therefore runs in a child process, whose
 * fatal error is only its own exit. `terminate()` or SIGKILL stops synchronous JavaScript and WASM
 * alike (https://nodejs.org/api/worker_threads.html#workerterminate).
 *
 * The entry is a plain JavaScript ES module (the tools' entries are built to src/tools/built/ by
 * build.ts): a new worker loads one file, with no TypeScript loader. It must post `{ ready: true }`
 * once loaded, then answer each `{ id, ...request }` with `{ id, outcome, recycle? }` (worker-port.ts).
 * The worker's stdout and stderr are captured, not passed to the host's: a WASM abort or a V8 fatal
 * error message is reported in the outcome, never on the console.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker, type ResourceLimits } from 'node:worker_threads';
import type { ToolOutcome } from './types.ts';

/**
 * Longest wait for a new worker to load its module: about a second on 2 cores shared with training
 * jobs (npm run bench), far longer when they are overloaded. An agent's call must get the tool's answer however long
 * the start took (a start given up on would answer "sandbox unavailable", so a rollout's tool results, and every token
 * after them, would depend on the machine's load). The limit only catches a worker that hangs while
 * loading: one that fails reports 'error' or 'exit'.
 */
const START_TIMEOUT_MS = 600_000;
/** Tail of a child process's stderr kept to name its crash (V8 prints its fatal error there). */
const STDERR_TAIL_CHARS = 4096;

/**
 * `recycle`: the worker answered but must not be reused (it left state it could not free).
 * `{ started }`: the worker took job `started` up (optional; the deadline then counts from here).
 */
type Reply =
  | { id: number; outcome: ToolOutcome; recycle?: boolean }
  | { started: number }
  /** `info`: what the worker says of itself once loaded (a user tool module: its name and schema). */
  | { ready: true; info?: unknown };

type Isolation =
  | { kind: 'thread'; resourceLimits: ResourceLimits }
  /** `heapMb`: the child's V8 old-space limit (--max-old-space-size); `args`: its argv after the entry. */
  | { kind: 'process'; heapMb: number; args?: readonly string[] };

export interface WorkerHostOptions {
  /** The worker's entry: a plain JavaScript ES module. */
  entry: URL;
  /** Prefix of every error outcome this host produces, e.g. 'code error'. */
  errorPrefix: string;
  isolation: Isolation;
}

/** What the host needs of a worker, thread or process alike. */
interface Channel {
  post(message: unknown): void;
  on(event: 'message', f: (m: Reply) => void): void;
  off(event: 'message', f: (m: Reply) => void): void;
  /** `reason`: in words, why the worker stopped (crash or exit). Called at most once. */
  onDown(f: (reason: string) => void): () => void;
  kill(): Promise<void>;
  /** An idle worker must not keep the process alive (the CLI exits when its work is done)... */
  unref(): void;
  /** ...but one running a job, or being killed, must (the caller awaits it). */
  ref(): void;
}

/** First line of a worker error, in words the agent can read. */
function describeCrash(e: Error): string {
  if ((e as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY') return 'out of memory';
  const first = e.message.split('\n')[0] ?? 'unknown error';
  // emscripten's abort text ("Aborted(Assertion failed: ... quickjs.c ...)") means nothing to an agent.
  return /^Aborted\(/.test(first) ? 'the sandbox runtime aborted' : first;
}

function threadChannel(entry: URL, resourceLimits: ResourceLimits): Channel {
  const w = new Worker(entry, { resourceLimits, stdout: true, stderr: true });
  // Drained and dropped: tool output travels in messages, and a crash is reported by its error.
  w.stdout.resume();
  w.stderr.resume();
  // A crash after the host stopped listening (while idle or killed) must not become an unhandled 'error' event.
  w.on('error', () => undefined);
  return {
    post: (m) => w.postMessage(m),
    on: (_e, f) => w.on('message', f),
    off: (_e, f) => w.off('message', f),
    onDown: (f) => {
      let fired = false;
      const once = (reason: string) => {
        if (fired) return;
        fired = true;
        f(reason);
      };
      const onError = (e: Error) => once(`sandbox crashed: ${describeCrash(e)}`);
      const onExit = (c: number) => once(`sandbox exited with code ${c}`);
      w.on('error', onError);
      w.on('exit', onExit);
      return () => {
        w.off('error', onError);
        w.off('exit', onExit);
      };
    },
    kill: async () => {
      await w.terminate();
    },
    unref: () => w.unref(),
    ref: () => w.ref(),
  };
}

/** The words for a child process that stopped: V8's fatal errors (heap, invalid size) are memory. */
function describeExit(code: number | null, signal: NodeJS.Signals | null, stderr: string): string {
  if (/heap out of memory|invalid (table |array )?(size|length)|Allocation failed|out of memory/i.test(stderr))
    return 'sandbox crashed: out of memory';
  if (signal !== null) return `sandbox crashed: killed by ${signal}`;
  return `sandbox exited with code ${code}`;
}

function processChannel(entry: URL, heapMb: number, args: readonly string[]): Channel {
  const env = { ...process.env };
  // The child is plain JavaScript: it needs none of the parent's loader flags (tsx, vitest).
  delete env.NODE_OPTIONS;
  const child: ChildProcess = fork(fileURLToPath(entry), [...args], {
    execArgv: [`--max-old-space-size=${heapMb}`],
    env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    serialization: 'advanced',
  });
  let stderr = '';
  // The pipes never keep the host alive: the child and its IPC channel are ref'd while a job runs.
  for (const pipe of [child.stdout, child.stderr]) (pipe as { unref?: () => void } | null)?.unref?.();
  child.stdout?.resume();
  child.stderr?.setEncoding('utf8');
  child.stderr?.on('data', (s: string) => {
    stderr = (stderr + s).slice(-STDERR_TAIL_CHARS);
  });
  // A failed spawn or a send to a dead child reports 'error'; the exit that follows says what happened.
  child.on('error', () => undefined);
  let exited: Promise<void> | undefined = new Promise((resolve) => child.once('exit', () => resolve()));
  return {
    post: (m) => {
      child.send(m as never, (err) => {
        // The child died between the check and the send: its 'exit' answers the job.
        void err;
      });
    },
    on: (_e, f) => child.on('message', f),
    off: (_e, f) => child.off('message', f),
    onDown: (f) => {
      const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
        // stderr may still be arriving after 'exit'; 'close' follows once the pipes are drained.
        child.once('close', () => f(describeExit(code, signal, stderr)));
      };
      if (child.exitCode !== null || child.signalCode !== null) {
        queueMicrotask(() => f(describeExit(child.exitCode, child.signalCode, stderr)));
        return () => undefined;
      }
      child.once('exit', onExit);
      return () => child.off('exit', onExit);
    },
    kill: async () => {
      child.ref();
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
      exited = undefined;
    },
    unref: () => {
      child.unref();
      child.channel?.unref();
    },
    ref: () => {
      child.ref();
      child.channel?.ref();
    },
  };
}

export class WorkerHost<Req extends object> {
  private worker: Channel | undefined;
  private starting: Promise<Channel> | undefined;
  /** The worker being started, until it is ready: close() must stop one that hangs while loading. */
  private loading: Channel | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private nextId = 0;
  /** Workers started so far (tests check that a kill leads to exactly one restart). */
  started = 0;
  /** The `info` of the last worker's ready message. */
  private info: unknown;

  constructor(private readonly opts: WorkerHostOptions) {}

  /**
   * Runs one job; `deadlineMs` counts from when the worker takes the job up (its `{ started }`
   * message; from the post if it sends none), so neither a slow worker start nor a worker thread
   * waiting for a core on a busy machine eats into a job's time. `timeoutMessage` is the outcome
   * past the deadline.
   */
  run(req: Req, deadlineMs: number, timeoutMessage: string): Promise<ToolOutcome> {
    const job = this.queue.then(() => this.runNow(req, deadlineMs, timeoutMessage));
    this.queue = job.catch(() => undefined);
    return job;
  }

  private spawn(): Channel {
    const { entry, isolation } = this.opts;
    if (entry.protocol === 'file:' && !existsSync(fileURLToPath(entry)))
      throw new Error(`${fileURLToPath(entry)} is missing (run npm run build:tools)`);
    return isolation.kind === 'thread'
      ? threadChannel(entry, isolation.resourceLimits)
      : processChannel(entry, isolation.heapMb, isolation.args ?? []);
  }

  private start(): Promise<Channel> {
    this.starting ??= new Promise<Channel>((resolve, reject) => {
      const w = this.spawn();
      this.loading = w;
      this.started++;
      const timer = setTimeout(() => {
        void w.kill();
        reject(new Error(`worker did not start within ${START_TIMEOUT_MS} ms`));
      }, START_TIMEOUT_MS);
      const offDown = w.onDown((reason) => {
        clearTimeout(timer);
        reject(new Error(`${reason} while starting`));
      });
      const onReady = (m: Reply) => {
        clearTimeout(timer);
        offDown();
        w.off('message', onReady);
        w.unref();
        w.onDown(() => {
          if (this.worker === w) this.worker = undefined;
        });
        if ('ready' in m) {
          this.info = m.info;
          resolve(w);
        } else reject(new Error('worker sent a reply before it was ready'));
      };
      w.on('message', onReady);
    }).finally(() => {
      this.starting = undefined;
      this.loading = undefined;
    });
    return this.starting.then((w) => (this.worker = w));
  }

  private async runNow(req: Req, deadlineMs: number, timeoutMessage: string): Promise<ToolOutcome> {
    const prefix = this.opts.errorPrefix;
    let worker: Channel;
    try {
      worker = this.worker ?? (await this.start());
    } catch (e) {
      return { ok: false, output: `${prefix}: sandbox unavailable: ${(e as Error).message.split('\n')[0]}` };
    }
    const id = this.nextId++;
    return new Promise<ToolOutcome>((resolve) => {
      let settled = false;
      const done = (outcome: ToolOutcome, kill: boolean) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        worker.off('message', onMessage);
        offDown();
        worker.unref();
        if (kill) {
          if (this.worker === worker) this.worker = undefined;
          void worker.kill();
          // Start the replacement now, while the agent reads the error: the next call should not wait for it.
          this.start().catch(() => undefined);
        }
        resolve(outcome);
      };
      const onMessage = (m: Reply) => {
        if ('id' in m && m.id === id) done(m.outcome, m.recycle === true);
        else if ('started' in m && m.started === id) {
          clearTimeout(timer);
          timer = setTimeout(expire, deadlineMs);
        }
      };
      const offDown = worker.onDown((reason) => done({ ok: false, output: `${prefix}: ${reason}` }, true));
      // At the deadline the worker is killed, unless its answer is already waiting: a host thread
      // that was off its core finds the timer and the answer due together, and timers run first in
      // Node's event loop; setImmediate runs after the pending messages are read.
      const expire = () =>
        setImmediate(() => {
          if (!settled) done({ ok: false, output: timeoutMessage }, true);
        });
      let timer = setTimeout(expire, deadlineMs);
      worker.on('message', onMessage);
      worker.ref();
      worker.post({ id, ...req });
    });
  }

  /**
   * Starts the worker now (or finds it running) and returns what it said of itself when ready: a
   * caller that must know a worker loads (a user's tool module) finds out before any job.
   */
  async ready(): Promise<unknown> {
    if (!this.worker) await this.start();
    return this.info;
  }

  /** Stops the worker (tests, shutdown). A later call starts a new one. */
  async close(): Promise<void> {
    const w = this.worker;
    const loading = this.loading;
    this.worker = undefined;
    if (w) await w.kill();
    if (loading) await loading.kill();
  }
}
