import { spawn } from 'node:child_process';
import { HARNESS, NODE_ARGS } from '../cli-helpers.ts';

/**
 * Test support of the fault suite: the real `sharp` program, killed after `timeoutMs` so that a
 * command that would hang (a named pipe opened for reading) fails the test instead of stalling it.
 */
export function sharpTimed(
  args: string[],
  cwd: string,
  timeoutMs = 60_000,
): Promise<{ code: number | null; stdout: string; stderr: string; ms: number; timedOut: boolean }> {
  const t0 = Date.now();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [...NODE_ARGS, HARNESS, ...args], {
      cwd,
      env: { ...process.env, FORCE_COLOR: '0' },
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr, ms: Date.now() - t0, timedOut });
    });
  });
}
