import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';

/** Test support: the real `sharp` program (bin/sharp.js) as a child process. */
const BIN = resolve(import.meta.dirname, '../../bin/sharp.js');

export function sharp(
  args: string[],
  cwd = resolve(import.meta.dirname, '../..'),
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd, env: { ...process.env, FORCE_COLOR: '0' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => res({ code, stdout, stderr }));
  });
}

/** Starts a long-running command and resolves with the child and the first stdout line matching `ready`. */
export function start(args: string[], ready: RegExp): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, FORCE_COLOR: '0' } });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      const m = ready.exec(out);
      if (m) res({ child, match: m });
    });
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('close', (code) => rej(new Error(`exited ${code} before ready: ${err}`)));
  });
}
