/**
 * Another process holding a run folder's lock: a node process that takes the lock of `dir` through
 * src/run/run-lock.ts, prints `locked`, then waits for its stdin to close (or a kill).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export function lockHolder(dir: string): Promise<ChildProcess> {
  const loader = pathToFileURL(join(import.meta.dirname, '../node_modules/tsx/dist/loader.mjs')).href;
  const mod = pathToFileURL(join(import.meta.dirname, '../src/run/run-lock.ts')).href;
  const code =
    `const { acquireRunLock } = await import(${JSON.stringify(mod)}); acquireRunLock(${JSON.stringify(dir)}); ` +
    `console.log('locked'); process.stdin.resume(); process.stdin.on('end', () => process.exit(0));`;
  const c = spawn(process.execPath, ['--import', loader, '--input-type=module', '-e', code], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  return new Promise((res, rej) => {
    c.stdout?.on('data', (d: Buffer) => (d.toString().includes('locked') ? res(c) : undefined));
    c.on('exit', (code) => rej(new Error(`lock holder exited ${String(code)}`)));
  });
}
