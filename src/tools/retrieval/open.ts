import { resolve } from 'node:path';
import type { Config } from '../../config/schema.ts';
import { UserError } from '../../errors.ts';
import { Bm25Index } from './bm25-index.ts';
import { RemoteRetriever } from './remote.ts';
import type { Retriever } from './retriever.ts';

type SearchConfig = Config['rollout']['search'];

/**
 * The retriever of `rollout.search` (null for the episode backend), opened once per process and
 * shared by every episode's `search` tool: one SQLite handle per index, one client per server.
 */
const opened = new Map<string, Retriever>();

function keyOf(s: SearchConfig): string | null {
  if (s.backend === 'index') return `index\u0000${resolve(s.index)}\u0000${s.maxTermShare}`;
  if (s.backend === 'remote') return `remote\u0000${s.url}\u0000${s.timeoutMs}\u0000${s.retries}`;
  return null;
}

export function retrieverFor(s: SearchConfig): Retriever | null {
  const key = keyOf(s);
  if (key === null) return null;
  let r = opened.get(key);
  if (!r) {
    if (s.backend === 'index') {
      if (s.index === '') throw new UserError("rollout.search.index: required when rollout.search.backend is 'index'");
      r = new Bm25Index(s.index, { maxTermShare: s.maxTermShare });
    } else {
      if (s.url === '') throw new UserError("rollout.search.url: required when rollout.search.backend is 'remote'");
      try {
        r = new RemoteRetriever({ url: s.url, timeoutMs: s.timeoutMs, retries: s.retries });
      } catch (err) {
        throw new UserError(`rollout.search.url: ${(err as Error).message}`);
      }
    }
    opened.set(key, r);
  }
  return r;
}

/**
 * Asks the configured retriever one query before any rollout, so a missing index or a server that
 * is down stops the command with one line instead of failing every search of the run.
 */
export async function checkRetriever(s: SearchConfig): Promise<void> {
  const r = retrieverFor(s);
  if (!r) return;
  try {
    await r.search(['retrieval check'], 1);
  } catch (err) {
    throw new UserError(`rollout.search: ${(err instanceof Error ? err.message : String(err)).split('\n')[0]}`);
  }
}
