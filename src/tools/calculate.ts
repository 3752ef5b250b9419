import type { Tool, ToolOutcome } from './types.ts';
import type { CalculateRequest } from './calculate-worker.ts';
import { builtWorkerUrl } from './build.ts';
import { WorkerHost } from './worker-host.ts';

/**
 * `calculate` tool: mathjs in a locked scope (calculate-core.ts), evaluated in a worker process with
 * a deadline and a heap limit. Every function that builds a collection is bounded by element count
 * before it runs; the deadline and the heap limit bound the rest (`map` with a callback that builds
 * matrices, long loops of small steps).
 */

export { calculate, formatNumber } from './calculate-core.ts';

/** Longest expression accepted. */
const MAX_EXPRESSION_CHARS = 500;

/**
 * Longest result returned: the element bound keeps a matrix to 10,000 numbers, yet their text (or a
 * string built by repetition) can still run to megabytes; a calculator's answer worth reading is
 * short, and the agent's context is not the place for the rest.
 */
const MAX_RESULT_CHARS = 4_000;

/**
 * Hard wall-clock limit of one evaluation in the worker. Ordinary expressions take well under a
 * millisecond; the size guards bound what one function builds, the deadline bounds how many steps
 * an expression takes (`map` over 10,000 elements with a callback that builds 10,000 more).
 */
const CALCULATE_TIMEOUT_MS = 2000;
/**
 * V8 heap of the calculate worker: mathjs itself needs ~40 MB; anything bigger is a runaway
 * expression. The worker is a child process, not a thread: a V8 fatal allocation error (which the
 * element bounds should leave no way to reach) then ends only the worker, never the host.
 */
const WORKER_HEAP_MB = 256;

let host: WorkerHost<Omit<CalculateRequest, 'id'>> | undefined;

function sharedHost(): WorkerHost<Omit<CalculateRequest, 'id'>> {
  host ??= new WorkerHost({
    entry: builtWorkerUrl('calculate-worker'),
    errorPrefix: 'calculate error',
    isolation: { kind: 'process', heapMb: WORKER_HEAP_MB },
  });
  return host;
}

/**
 * The `calculate` tool: the expression's value, or a one-line error for the agent. Evaluation runs
 * in one shared worker process (calculate-worker.ts) with a deadline and a heap limit, so no
 * expression can hang or abort the process; the worker stays warm between calls.
 */
export function createCalculate(opts: { timeoutMs?: number } = {}): Tool {
  const timeoutMs = opts.timeoutMs ?? CALCULATE_TIMEOUT_MS;
  return async (args: string): Promise<ToolOutcome> => {
    const expression = args.trim();
    if (expression.length === 0) return { ok: false, output: 'calculate error: empty expression' };
    if (expression.length > MAX_EXPRESSION_CHARS) {
      return { ok: false, output: `calculate error: expression longer than ${MAX_EXPRESSION_CHARS} characters` };
    }
    const r = await sharedHost().run(
      { expression },
      timeoutMs,
      `calculate error: timeout: evaluation ran longer than ${timeoutMs} ms`,
    );
    if (r.output.length <= MAX_RESULT_CHARS) return r;
    return {
      ...r,
      output:
        `${r.output.slice(0, MAX_RESULT_CHARS)}\n[calculate result truncated at ${MAX_RESULT_CHARS} characters of ` +
        `${r.output.length}]`,
    };
  };
}

/** Workers started by this process so far (for tests of the kill-and-restart path). */
export function calculateWorkersStarted(): number {
  return host?.started ?? 0;
}

/** Terminates the calculate worker, if any (call at shutdown or in a test's afterAll). */
export async function closeCalculateWorker(): Promise<void> {
  await host?.close();
}
