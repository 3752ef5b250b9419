/**
 * The index of `sharp serve retrieval` searched by a small pool of worker threads
 * (search-thread.ts), each with its own read-only SQLite connection. SQLite runs a query to its end
 * on the thread that started it, and one query of common words over a large index takes seconds:
 * on the server's own thread that stalled every other request, /health included. Here the main
 * thread only parses, schedules and answers.
 *
 * Scheduling is per query, round-robin over the requests waiting, so a request of 64 slow queries
 * does not hold back a request of one. A request whose SearchControl aborts (its client went away)
 * or whose deadline passes is rejected at once with SearchStopped: its queries not yet started are
 * dropped, and those running stop within a millisecond of scoring (the shared cancel cell and the
 * deadline are checked while SQLite scores).
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import { Bm25Index } from './bm25-index.ts';
import { SearchStopped, type Hit, type Retriever, type SearchControl } from './retriever.ts';
import type { ThreadInit, ThreadReply, ThreadTask } from './search-thread.ts';

export interface PoolOptions {
  maxTermShare?: number;
  /** Worker threads (default: the cores, 2 to 4). */
  threads?: number;
}

interface Job {
  queries: readonly string[];
  k: number;
  deadline: number;
  hits: (Hit[] | undefined)[];
  next: number;
  left: number;
  resolve: (hits: Hit[][]) => void;
  reject: (err: Error) => void;
  /** Removes the job's abort listener and deadline timer. */
  cleanup: () => void;
}

interface Thread {
  worker: Worker;
  cancel: Int32Array;
  /** The task it runs, or undefined when idle. */
  task?: { id: number; job: Job; slot: number };
}

const ENTRY = new URL('./search-thread.mjs', import.meta.url);

const defaultThreads = (): number => Math.min(4, Math.max(2, availableParallelism()));

export class SearchPool implements Retriever {
  readonly name: string;
  private readonly threads: Thread[] = [];
  private jobs: Job[] = [];
  private turn = 0;
  private nextId = 1;
  private closed = false;

  private constructor(
    readonly index: Bm25Index,
    private readonly init: Omit<ThreadInit, 'cancel'>,
  ) {
    this.name = index.name;
  }

  /**
   * Opens `dir` on this thread first (a missing or damaged index is one UserError before any thread
   * starts), then starts the threads and waits until each has opened it.
   */
  static async open(dir: string, opts: PoolOptions = {}): Promise<SearchPool> {
    const maxTermShare = opts.maxTermShare ?? 1;
    const pool = new SearchPool(new Bm25Index(dir, { maxTermShare }), { dir, maxTermShare });
    try {
      await Promise.all(Array.from({ length: opts.threads ?? defaultThreads() }, () => pool.start()));
    } catch (err) {
      await pool.close();
      throw err;
    }
    return pool;
  }

  get manifest(): Bm25Index['manifest'] {
    return this.index.manifest;
  }

  private start(): Promise<void> {
    const cancel = new SharedArrayBuffer(4);
    const worker = new Worker(ENTRY, { workerData: { ...this.init, cancel } satisfies ThreadInit });
    const t: Thread = { worker, cancel: new Int32Array(cancel) };
    return new Promise((resolve, reject) => {
      const early = (code: number): void =>
        reject(new Error(`${this.name}: search thread exited (${code}) before it started`));
      worker.once('error', reject);
      worker.once('exit', early);
      worker.on('message', (m: ThreadReply) => {
        if ('ready' in m) {
          worker.off('error', reject);
          worker.off('exit', early);
          worker.on('error', (err) => this.lost(t, err.message));
          worker.on('exit', (code) => this.lost(t, `exited with code ${code}`));
          this.threads.push(t);
          resolve();
          this.pump();
        } else if ('fatal' in m) {
          reject(new Error(m.fatal));
          void worker.terminate();
        } else this.reply(t, m);
      });
    });
  }

  /** A thread that died: its task's request fails, and a new thread takes its place. */
  private lost(t: Thread, why: string): void {
    const i = this.threads.indexOf(t);
    if (i < 0) return;
    this.threads.splice(i, 1);
    if (t.task) this.finish(t.task.job, new Error(`${this.name}: search thread failed (${why})`));
    if (!this.closed) this.start().catch(() => undefined);
  }

  search(queries: readonly string[], k: number, control: SearchControl = {}): Promise<Hit[][]> {
    if (this.closed) return Promise.reject(new Error(`${this.name}: closed`));
    if (queries.length === 0) return Promise.resolve([]);
    if (control.signal?.aborted) return Promise.reject(new SearchStopped('cancelled'));
    return new Promise((resolve, reject) => {
      const deadline = control.deadline ?? Infinity;
      const job: Job = {
        queries,
        k,
        deadline,
        hits: new Array<Hit[] | undefined>(queries.length),
        next: 0,
        left: queries.length,
        resolve,
        reject,
        cleanup: () => undefined,
      };
      const onAbort = (): void => this.finish(job, new SearchStopped('cancelled'));
      control.signal?.addEventListener('abort', onAbort, { once: true });
      // The threads check the deadline too; this timer answers a request whose queries still wait.
      const timer = Number.isFinite(deadline)
        ? setTimeout(() => this.finish(job, new SearchStopped('deadline')), Math.max(0, deadline - Date.now()))
        : undefined;
      job.cleanup = () => {
        control.signal?.removeEventListener('abort', onAbort);
        clearTimeout(timer);
      };
      this.jobs.push(job);
      this.pump();
    });
  }

  /** Gives each idle thread the next query, taking the waiting requests in turn. */
  private pump(): void {
    for (const t of this.threads) {
      if (t.task || this.jobs.length === 0) continue;
      this.turn %= this.jobs.length;
      const job = this.jobs[this.turn] as Job;
      const slot = job.next++;
      if (job.next >= job.queries.length) this.jobs.splice(this.turn, 1);
      else this.turn += 1;
      const id = this.nextId++;
      t.task = { id, job, slot };
      t.worker.postMessage({
        id,
        query: job.queries[slot] as string,
        k: job.k,
        deadline: job.deadline,
      } satisfies ThreadTask);
    }
  }

  private reply(t: Thread, m: Exclude<ThreadReply, { ready: true } | { fatal: string }>): void {
    const task = t.task;
    t.task = undefined;
    if (task && task.id === m.id) {
      const { job, slot } = task;
      if ('hits' in m) {
        job.hits[slot] = m.hits;
        job.left -= 1;
        if (job.left === 0) this.finish(job);
      } else if ('stopped' in m) this.finish(job, new SearchStopped(m.stopped));
      else this.finish(job, new Error(m.error));
    }
    this.pump();
  }

  /** Settles a job once: its queries still waiting are dropped and its running ones told to stop. */
  private finish(job: Job, err?: Error): void {
    if (job.left < 0) return;
    job.cleanup();
    const i = this.jobs.indexOf(job);
    if (i >= 0) this.jobs.splice(i, 1);
    if (err) {
      job.left = -1;
      for (const t of this.threads) if (t.task?.job === job) Atomics.store(t.cancel, 0, t.task.id);
      job.reject(err);
    } else {
      job.left = -1;
      job.resolve(job.hits as Hit[][]);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const job of [...this.jobs]) this.finish(job, new Error(`${this.name}: closed`));
    const threads = this.threads.splice(0);
    await Promise.all(threads.map((t) => t.worker.terminate()));
    this.index.close();
  }
}
