import type { AddressInfo } from 'node:net';
import { UserError } from '../errors.ts';
import { Bm25Index } from '../tools/retrieval/bm25-index.ts';
import { createRetrievalServer } from '../tools/retrieval/server.ts';
import { isLoopback } from '../view/server.ts';
import type { ServeRetrievalFlags } from './commands.ts';

/**
 * `sharp serve retrieval --index DIR [--host H] [--port N] [--max-term-share P]`: the index behind Search-R1's
 * `POST /retrieve` (tools/retrieval/server.ts), so `sharp worker` processes on other hosts search one
 * index with `rollout.search.backend: remote`. Loopback only unless --host says otherwise; the server
 * has no authentication. Runs until SIGINT or SIGTERM.
 */
export async function run(opts: ServeRetrievalFlags): Promise<void> {
  const index = new Bm25Index(opts.index, { maxTermShare: opts.maxTermShare });
  const server = createRetrievalServer(index, { health: { passages: index.manifest.passages, index: index.dir } });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(new UserError(`serve retrieval: cannot listen on ${opts.host}:${opts.port} (${err.code ?? err.message})`)),
    );
    server.listen(opts.port, opts.host, resolve);
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  process.stdout.write(
    `serving ${index.dir} (${index.manifest.passages} passages) at http://${host}:${addr.port}/retrieve\n`,
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
  index.close();
}
