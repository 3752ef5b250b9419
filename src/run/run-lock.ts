import {
  closeSync,
  existsSync,
  fsyncSync,
  linkSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { UserError } from '../errors.ts';

/**
 * One writer per run folder. A process that trains, fine-tunes or resumes a run holds
 * `<run>/run.lock` from the moment it has the folder until it exits; a second process is refused
 * with one line. The file is created exclusively (O_EXCL), so two processes can never both create
 * it. It names its holder by pid and the process's start time (Linux /proc/<pid>/stat), so a lock
 * left by a process that died (kill -9, power cut) is recognised as stale, also when the pid has
 * since been reused, and taken over. A lock written on another host (a shared file system) cannot be
 * checked from here and is always respected.
 */
export const LOCK_FILE = 'run.lock';

export interface LockInfo {
  pid: number;
  /** Start time of the process in clock ticks since boot (/proc/<pid>/stat field 22); null off Linux. */
  start: string | null;
  host: string;
  /** What holds it (`sharp train --resume ...`), for the refusal message. */
  command: string;
  /** ISO time the lock was taken. */
  since: string;
}

export interface RunLock {
  file: string;
  /** Removes the lock (only while it is still this process's). Also done at process exit. */
  release: () => void;
}

/** Start time of process `pid` (clock ticks since boot), or null when it cannot be read. */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may hold spaces: count fields after the last ')'.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return rest[19] ?? null; // field 22 = index 19 after fields 1 and 2
  } catch {
    return null;
  }
}

function ownInfo(): LockInfo {
  return {
    pid: process.pid,
    start: processStartTime(process.pid),
    host: hostname(),
    command: ['sharp', ...process.argv.slice(2)].join(' ').slice(0, 300),
    since: new Date().toISOString(),
  };
}

function readLock(file: string): LockInfo | undefined {
  try {
    const v = JSON.parse(readFileSync(file, 'utf8')) as Partial<LockInfo>;
    if (typeof v.pid !== 'number' || typeof v.host !== 'string') return undefined;
    return {
      pid: v.pid,
      start: typeof v.start === 'string' ? v.start : null,
      host: v.host,
      command: String(v.command ?? '?'),
      since: String(v.since ?? '?'),
    };
  } catch {
    return undefined;
  }
}

/** Whether the process a lock names may still be running (true when it cannot be told). */
export function holderAlive(info: LockInfo): boolean {
  if (info.host !== hostname()) return true;
  try {
    process.kill(info.pid, 0);
  } catch (err) {
    // EPERM: it exists under another user.
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
  }
  if (info.start === null) return true;
  const now = processStartTime(info.pid);
  // A live process with another start time reused the pid: the holder is gone.
  return now === null || now === info.start;
}

/** Locks this process holds, by file (re-taking one it holds is a no-op). */
const held = new Map<string, LockInfo>();
let exitHook = false;

function sameHolder(a: LockInfo | undefined, b: LockInfo): boolean {
  return a !== undefined && a.pid === b.pid && a.start === b.start && a.host === b.host && a.since === b.since;
}

function releaseFile(file: string): void {
  const mine = held.get(file);
  if (!mine) return;
  held.delete(file);
  try {
    if (sameHolder(readLock(file), mine)) unlinkSync(file);
  } catch {
    // Already gone (the run folder removed): nothing to release.
  }
}

/** A lock file younger than this with no readable content is being written by its creator. */
const WRITING_GRACE_MS = 10_000;

/**
 * Moves a stale lock out of the way. The rename takes whatever file is there now; if that is not
 * the stale one (another process broke it first and took the lock), it is linked back, which fails
 * only if yet another lock appeared meanwhile.
 */
function breakStale(file: string, staleIno: number): void {
  const aside = `${file}.stale-${process.pid}-${Date.now()}`;
  try {
    renameSync(file, aside);
  } catch {
    return; // gone already: someone else broke it
  }
  try {
    if (statSync(aside).ino !== staleIno) {
      try {
        linkSync(aside, file);
      } catch {
        // A third process locked meanwhile; the one moved aside was already taken over.
      }
    }
  } finally {
    try {
      unlinkSync(aside);
    } catch {
      // best effort
    }
  }
}

function refusal(dir: string, info: LockInfo | undefined): UserError {
  if (!info)
    return new UserError(
      `run folder ${dir} is being locked by another process (${LOCK_FILE} is being written); only one process may ` +
        `write a run at a time`,
    );
  const where = info.host === hostname() ? `process ${info.pid}` : `process ${info.pid} on host ${info.host}`;
  return new UserError(
    `run folder ${dir} is in use by ${where} (${info.command}, since ${info.since}); only one process may write a ` +
      `run at a time (if that process is gone, delete ${join(dir, LOCK_FILE)})`,
  );
}

/**
 * Takes the lock of run folder `dir` for the rest of this process's life (or until `release`), or
 * throws a UserError naming the process that holds it. Stale locks (dead holder) are taken over.
 */
export function acquireRunLock(dir: string): RunLock {
  const file = join(dir, LOCK_FILE);
  const release = (): void => releaseFile(file);
  if (held.has(file)) return { file, release };
  const me = ownInfo();
  for (let attempt = 0; attempt < 5; attempt++) {
    let fd: number;
    try {
      fd = openSync(file, 'wx');
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && !existsSync(dir)) throw new UserError(`run folder not found: ${dir}`);
      if (code !== 'EEXIST')
        throw new UserError(`cannot lock run folder ${dir}: ${(err as Error).message.split('\n')[0]}`);
      let ino: number;
      let age: number;
      try {
        const st = statSync(file);
        ino = st.ino;
        age = Date.now() - st.mtimeMs;
      } catch {
        continue; // removed between the open and the stat: try again
      }
      const info = readLock(file);
      if (info ? holderAlive(info) : age < WRITING_GRACE_MS) throw refusal(dir, info);
      breakStale(file, ino);
      continue;
    }
    try {
      writeSync(fd, `${JSON.stringify(me)}\n`);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    held.set(file, me);
    if (!exitHook) {
      exitHook = true;
      // 'exit' runs on return, process.exit() and uncaught errors; kill -9 leaves a stale lock, which the next process
      // takes over.
      process.on('exit', () => {
        for (const f of [...held.keys()]) releaseFile(f);
      });
    }
    return { file, release };
  }
  throw refusal(dir, readLock(file));
}
