import type { AddressInfo } from 'node:net';
import { UserError } from '../errors.ts';
import { listenPortProblem } from '../tools/retrieval/ports.ts';
import { SearchPool } from '../tools/retrieval/search-pool.ts';
import { createRetrievalServer } from '../tools/retrieval/server.ts';
import { isLoopback } from '../net/loopback.ts';
import type { ServeRetrievalFlags } from './commands.ts';

/**
 * `sharp serve retrieval --index DIR [--host H] [--port N] [--max-term-share P]`: the index behind Search-R1's
 * `POST /retrieve` (tools/retrieval/server.ts), so `sharp worker` processes on other hosts search one
 * index with `rollout.search.backend: remote`. Loopback only unless --host says otherwise; the server
 * has no authentication. The searches run on a few worker threads (tools/retrieval/search-pool.ts),
 * so a slow request never stalls /health or the others. Runs until SIGINT or SIGTERM.
 */
export async function run(opts: ServeRetrievalFlags): Promise<void> {
  // Checked before the index is opened: listen() throws a stack trace on a port out of range, and a
  // port fetch refuses would serve nobody.
  const problem = listenPortProblem(opts.port);
  if (problem !== null) throw new UserError(`serve retrieval: --port ${problem}`);
  const pool = await SearchPool.open(opts.index, { maxTermShare: opts.maxTermShare });
  const server = createRetrievalServer(pool, { health: { passages: pool.manifest.passages, index: pool.index.dir } });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', (err: NodeJS.ErrnoException) =>
        reject(
          new UserError(`serve retrieval: cannot listen on ${opts.host}:${opts.port} (${err.code ?? err.message})`),
        ),
      );
      server.listen(opts.port, opts.host, resolve);
    });
  } catch (err) {
    await pool.close();
    throw err;
  }
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  process.stdout.write(
    `serving ${pool.index.dir} (${pool.manifest.passages} passages) at http://${host}:${addr.port}/retrieve\n`,
  );
  if (!isLoopback(opts.host))
    process.stderr.write(
      `sharp serve retrieval: listening on ${opts.host}, reachable from other machines, without authentication\n`,
    );
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      server.close(() => resolve());
      server.closeAllConnections();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await pool.close();
}
