import type { Policy, PolicyRequest, PolicyResponse } from './policy.ts';

/**
 * Gathers the generation requests of many concurrently running trajectories into one
 * `policy.generate` call per decoding step (all agents that are generating, across
 * trajectories and roles, decode together, never one agent at a time).
 *
 * Each trajectory runs as one async task (a planner waits while its workers run; parallel workers
 * of one message are branches of the task, `branch`). A task is "active" while it computes or
 * awaits a tool; it becomes "waiting" when it asks for a generation. When no task is active and
 * some wait, the batch is sent. Requests are ordered by task index, then lane (the agent), so the
 * batch does not depend on tool timing.
 */
export interface BatchStats {
  /** policy.generate calls made. */
  steps: number;
  /** Requests served (assistant messages generated). */
  requests: number;
  /** Largest batch sent. */
  maxBatch: number;
}

interface Waiting {
  order: number;
  /** Within a task: the agent's lane (parallel workers of one trajectory wait side by side). */
  lane: number;
  req: PolicyRequest;
  resolve: (r: PolicyResponse) => void;
  reject: (e: unknown) => void;
}

export class StepBatcher {
  readonly stats: BatchStats = { steps: 0, requests: 0, maxBatch: 0 };
  private waiting: Waiting[] = [];
  private active = 0;
  private inFlight = false;

  constructor(private readonly policy: Policy) {}

  /** Runs every task to completion; rethrows the first task error after all have settled. */
  async run<T>(
    tasks: readonly ((gen: (req: PolicyRequest, lane?: number) => Promise<PolicyResponse>) => Promise<T>)[],
  ): Promise<T[]> {
    this.active += tasks.length;
    const settled = await Promise.allSettled(
      tasks.map(async (task, order) => {
        try {
          return await task((req, lane = 0) => this.enqueue(order, req, lane));
        } finally {
          this.active--;
          this.maybeFlush();
        }
      }),
    );
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
  }

  /**
   * Runs `branches` of one task concurrently (the parallel workers of one planner message): each
   * counts as a task of its own until it settles, so the batch waits for all of them; the last one
   * to settle hands its slot back to the task, which goes on. Results in branch order; the first
   * error is rethrown after every branch has settled.
   */
  async branch<T>(branches: readonly (() => Promise<T>)[]): Promise<T[]> {
    if (branches.length === 0) return [];
    this.active += branches.length - 1;
    let open = branches.length;
    const settled = await Promise.allSettled(
      branches.map(async (b) => {
        try {
          return await b();
        } finally {
          open -= 1;
          if (open > 0) {
            this.active--;
            this.maybeFlush();
          }
        }
      }),
    );
    const failed = settled.find((x): x is PromiseRejectedResult => x.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.map((x) => (x as PromiseFulfilledResult<T>).value);
  }

  private enqueue(order: number, req: PolicyRequest, lane: number): Promise<PolicyResponse> {
    return new Promise<PolicyResponse>((resolve, reject) => {
      this.waiting.push({ order, lane, req, resolve, reject });
      this.active--;
      this.maybeFlush();
    });
  }

  private maybeFlush(): void {
    if (this.active > 0 || this.inFlight || this.waiting.length === 0) return;
    const batch = this.waiting.sort((a, b) => a.order - b.order || a.lane - b.lane);
    this.waiting = [];
    // The tasks of this batch count as active again from now: they resume when their response arrives.
    this.active += batch.length;
    this.inFlight = true;
    void this.flush(batch);
  }

  private async flush(batch: Waiting[]): Promise<void> {
    this.stats.steps++;
    this.stats.requests += batch.length;
    this.stats.maxBatch = Math.max(this.stats.maxBatch, batch.length);
    try {
      const responses = await this.policy.generate(batch.map((w) => w.req));
      if (responses.length !== batch.length)
        throw new Error(`policy.generate returned ${responses.length} responses for ${batch.length} requests`);
      batch.forEach((w, i) => w.resolve(responses[i] as PolicyResponse));
    } catch (err) {
      for (const w of batch) w.reject(err);
    } finally {
      this.inFlight = false;
    }
  }
}
