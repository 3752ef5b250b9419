/**
 * `sharp view RUN_DIR [--port N] [--host H] [--export FILE.html]`: the run viewer (src/recipes/view.ts).
 * Serves the page on 127.0.0.1 until Ctrl-C, or writes one self-contained HTML file with --export.
 */
import { existsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { mkdirOut } from '../../fs/out-dir.ts';
import { UserError } from '../errors.ts';
import { isLoopback } from '../../view/server.ts';
import { exportView, serveView, checkRunDir } from '../../recipes/view.ts';

export interface ViewOptions {
  runDir: string;
  port?: number;
  host?: string;
  export?: string;
}

export async function run(opts: ViewOptions): Promise<void> {
  try {
    checkRunDir(opts.runDir);
  } catch (err) {
    throw new UserError(`sharp view: ${(err as Error).message}`);
  }
  const port = opts.port ?? 8080;
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UserError(`sharp view: --port ${port} is not a port number (0-65535)`);
  if (opts.export !== undefined) {
    if (existsSync(opts.export) && statSync(opts.export).isDirectory()) throw new UserError(`sharp view --export: ${opts.export} is a folder (give a file name, e.g. run.html)`);
    mkdirOut(dirname(opts.export), 'sharp view --export:');
    let bytes: number;
    try {
      bytes = exportView(opts.runDir, opts.export);
    } catch (err) {
      throw new UserError(`sharp view --export: ${(err as Error).message.split('\n')[0]}`);
    }
    process.stdout.write(`${opts.export} (${(bytes / 1024).toFixed(0)} KiB; opens without a server)\n`);
    return;
  }
  let server;
  try {
    server = await serveView(opts.runDir, { host: opts.host ?? '127.0.0.1', port });
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'EADDRINUSE') throw new UserError(`sharp view: port ${port} is in use (pick another with --port)`);
    throw new UserError(`sharp view: ${e.message.split('\n')[0]}`);
  }
  process.stdout.write(`sharp view: ${server.url}  (Ctrl-C to stop)\n`);
  if (opts.host !== undefined && !isLoopback(opts.host)) process.stderr.write(`sharp view: bound to ${opts.host}: anyone who can reach this address can read the run\n`);
  await new Promise<void>((done) => {
    const stop = (): void => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      void server.close().then(done);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
