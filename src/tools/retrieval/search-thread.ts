/**
 * One worker thread of search-pool.ts: its own read-only connection to the index, one query at a
 * time. A query stops (SearchStopped) when the main thread writes its task id into the shared
 * `cancel` cell or when its deadline passes; Bm25Index asks while SQLite scores the matches, so a
 * stopped query ends within about a millisecond of scoring, not when it would have finished.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Bm25Index, type StopCheck } from './bm25-index.ts';
import { SearchStopped, type Hit } from './retriever.ts';

export interface ThreadInit {
  dir: string;
  maxTermShare: number;
  /** One Int32 cell: the id of the task to stop (0: none). */
  cancel: SharedArrayBuffer;
}

export interface ThreadTask {
  id: number;
  query: string;
  k: number;
  /** Date.now() after which the query stops; Infinity for none. */
  deadline: number;
}

export type ThreadReply =
  | { ready: true }
  | { fatal: string }
  | { id: number; hits: Hit[] }
  | { id: number; stopped: SearchStopped['reason'] }
  | { id: number; error: string };

const port = parentPort;
if (!port) throw new Error('search-thread.ts: must run in a worker thread');
const init = workerData as ThreadInit;
const cancel = new Int32Array(init.cancel);
let index: Bm25Index | undefined;
try {
  index = new Bm25Index(init.dir, { maxTermShare: init.maxTermShare });
  port.postMessage({ ready: true } satisfies ThreadReply);
} catch (err) {
  port.postMessage({ fatal: (err instanceof Error ? err.message : String(err)).split('\n')[0] } satisfies ThreadReply);
}

port.on('message', (t: ThreadTask) => {
  if (!index) return;
  const stop: StopCheck = () =>
    Atomics.load(cancel, 0) === t.id ? 'cancelled' : Date.now() > t.deadline ? 'deadline' : null;
  let reply: ThreadReply;
  try {
    reply = { id: t.id, hits: index.searchOne(t.query, t.k, stop) };
  } catch (err) {
    reply =
      err instanceof SearchStopped
        ? { id: t.id, stopped: err.reason }
        : { id: t.id, error: (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? 'error' };
  }
  port.postMessage(reply);
});
