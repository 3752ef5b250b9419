import { spawn, type ChildProcess } from 'node:child_process';
import { lockHolder } from '../../test/run-lock-holder.ts';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { UserError } from '../errors.ts';
import { acquireRunLock, holderAlive, LOCK_FILE, processStartTime, type LockInfo } from './run-lock.ts';

/**
 * The run folder lock with real processes: a live holder (another process) refuses a second
 * writer; a dead holder's lock, or one whose pid now belongs to another process, is taken over.
 */
const base = mkdtempSync(join(tmpdir(), 'sharp-run-lock-'));
const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  rmSync(base, { recursive: true, force: true });
});

const freshDir = (): string => mkdtempSync(join(base, 'run-'));
const writeLock = (dir: string, info: Partial<LockInfo>): void =>
  writeFileSync(
    join(dir, LOCK_FILE),
    `${JSON.stringify({
      pid: 1,
      start: null,
      host: hostname(),
      command: 'sharp train',
      since: '2026-01-01T00:00:00.000Z',
      ...info,
    })}\n`,
  );

async function holder(dir: string): Promise<ChildProcess> {
  const c = await lockHolder(dir);
  children.push(c);
  return c;
}
const exited = (c: ChildProcess): Promise<void> =>
  new Promise((r) => (c.exitCode !== null ? r() : c.once('exit', () => r())));

describe('run folder lock', () => {
  it('reads a process start time that differs between processes and is stable for one', () => {
    const mine = processStartTime(process.pid);
    if (process.platform !== 'linux') return;
    expect(mine).toMatch(/^\d+$/);
    expect(processStartTime(process.pid)).toBe(mine);
    expect(processStartTime(2 ** 22 + 7)).toBeNull();
  });

  it('a second process is refused while the holder lives, and gets the lock once it has exited normally', async () => {
    const dir = freshDir();
    const c = await holder(dir);
    const info = JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')) as LockInfo;
    expect(info.pid).toBe(c.pid);
    expect(holderAlive(info)).toBe(true);
    let err: unknown;
    try {
      acquireRunLock(dir);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toBe(
      `run folder ${dir} is in use by process ${c.pid} (${info.command}, since ${info.since}); only one process ` +
        `may write a run at a time (if that process is gone, delete ${join(dir, LOCK_FILE)})`,
    );
    c.stdin?.end();
    await exited(c);
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false); // released at exit
    const lock = acquireRunLock(dir);
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')).pid).toBe(process.pid);
    lock.release();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
  }, 60_000);

  it('a lock left by a process killed with SIGKILL is stale and taken over', async () => {
    const dir = freshDir();
    const c = await holder(dir);
    c.kill('SIGKILL');
    await exited(c);
    expect(existsSync(join(dir, LOCK_FILE))).toBe(true); // nothing ran at its death
    const lock = acquireRunLock(dir);
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')).pid).toBe(process.pid);
    expect(readdirSync(dir)).toEqual([LOCK_FILE]); // the stale file moved aside is gone
    lock.release();
  }, 60_000);

  it('a live pid with another start time (a reused pid) is stale; the same start time is held', async () => {
    if (process.platform !== 'linux') return;
    const dir = freshDir();
    const sleeper = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)']);
    children.push(sleeper);
    const pid = sleeper.pid as number;
    await new Promise((r) => setTimeout(r, 200));
    writeLock(dir, { pid, start: processStartTime(pid) });
    expect(() => acquireRunLock(dir)).toThrow(
      new RegExp(`^run folder .* is in use by process ${pid} \\(sharp train, since 2026-01-01T00:00:00.000Z\\)`),
    );
    writeLock(dir, { pid, start: '1' });
    const lock = acquireRunLock(dir);
    expect(JSON.parse(readFileSync(join(dir, LOCK_FILE), 'utf8')).pid).toBe(process.pid);
    lock.release();
    sleeper.kill('SIGKILL');
  }, 60_000);

  it(
    "another host's lock is respected; an unreadable fresh lock is being written; an old unreadable one is " + 'stale',
    () => {
      const dir = freshDir();
      writeLock(dir, { pid: 12345, host: 'elsewhere.example' });
      expect(() => acquireRunLock(dir)).toThrow(/is in use by process 12345 on host elsewhere\.example/);
      writeFileSync(join(dir, LOCK_FILE), '');
      expect(() => acquireRunLock(dir)).toThrow(
        `run folder ${dir} is being locked by another process (run.lock is being written); only one process may ` +
          `write a run at a time`,
      );
      // A lock its creator never finished writing, a minute ago.
      const old = new Date(Date.now() - 60_000);
      writeFileSync(join(dir, LOCK_FILE), '{"pi');
      utimesSync(join(dir, LOCK_FILE), old, old);
      const lock = acquireRunLock(dir);
      lock.release();
      expect(existsSync(join(dir, LOCK_FILE))).toBe(false);
    },
  );

  it('release leaves a lock that is no longer this process’s alone; taking a held lock again is a no-op', () => {
    const dir = freshDir();
    const a = acquireRunLock(dir);
    const b = acquireRunLock(dir);
    expect(b.file).toBe(a.file);
    writeLock(dir, { pid: 999_999, host: 'other' });
    a.release();
    expect(existsSync(join(dir, LOCK_FILE))).toBe(true);
  });
});
