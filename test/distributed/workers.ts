import { spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';

/** `sharp worker` processes for the distributed tests (the real binary), with their stderr lines. */
const BIN = join(resolve(import.meta.dirname, '../..'), 'bin/sharp.js');

export interface WorkerProcess {
  proc: ChildProcess;
  lines: string[];
  /** Resolves with the first line matching `re` (rejects after `ms`). */
  waitFor: (re: RegExp, ms?: number) => Promise<string>;
  /** SIGTERM and wait for the exit. */
  stop: () => Promise<void>;
}

export function spawnWorker(redisUrl: string, queue: string, extra: string[] = []): WorkerProcess {
  const proc = spawn(
    process.execPath,
    [BIN, 'worker', '--redis', redisUrl, '--queue', queue, '--backend', 'wasm', ...extra],
    { env: { ...process.env, FORCE_COLOR: '0' }, stdio: ['ignore', 'ignore', 'pipe'] },
  );
  const lines: string[] = [];
  const waiters: { re: RegExp; res: (l: string) => void }[] = [];
  let buf = '';
  proc.stderr?.on('data', (d: Buffer) => {
    buf += d.toString();
    const parts = buf.split('\n');
    buf = parts.pop() ?? '';
    for (const l of parts) {
      lines.push(l);
      for (const w of [...waiters]) {
        if (!w.re.test(l)) continue;
        waiters.splice(waiters.indexOf(w), 1);
        w.res(l);
      }
    }
  });
  const waitFor = (re: RegExp, ms = 120_000): Promise<string> => {
    const hit = lines.find((l) => re.test(l));
    if (hit) return Promise.resolve(hit);
    return new Promise((res, rej) => {
      const t = setTimeout(
        () => rej(new Error(`worker ${proc.pid}: no line matching ${re} within ${ms} ms; got:\n${lines.join('\n')}`)),
        ms,
      );
      waiters.push({ re, res: (l) => (clearTimeout(t), res(l)) });
    });
  };
  const stop = (): Promise<void> =>
    proc.exitCode !== null || proc.signalCode !== null
      ? Promise.resolve()
      : new Promise((res) => {
          proc.once('exit', () => res());
          proc.kill('SIGTERM');
        });
  return { proc, lines, waitFor, stop };
}
