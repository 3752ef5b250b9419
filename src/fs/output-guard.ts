import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmdirSync,
  rmSync,
  statSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { UserError } from '../errors.ts';
import { writeFileAtomic } from './atomic.ts';
import { mkdirOut, prepareOutFile } from './out-dir.ts';

/**
 * The one rule of every command that writes a path (docs/outputs.md): nothing is deleted or
 * replaced unless this program wrote it.
 *
 * - Each folder we write into holds a manifest, `.sharp-output.json`: the command that owns the
 *   folder (a folder output: export, init-model, eval, ...) and every file a command wrote there
 *   with its size (a file output: data synth, rollout, ...).
 * - An output path that exists and is not a previous output of the same command is refused with
 *   one line. `--force` lets a command write its files into a folder that holds others, and replace
 *   a file another sharp command wrote; a file sharp did not write is never replaced or removed,
 *   nor a file at a folder's path, a device, a pipe or a link.
 * - An output equal to or above one of the command's inputs, inside an input folder, or equal to
 *   or above the repository of the working directory, the home folder or `/`, is always refused.
 */
export const OUTPUT_MANIFEST = '.sharp-output.json';

interface Manifest {
  /** The command owning the whole folder (folder outputs). */
  folder?: string;
  /** File name -> the command that wrote it and its size then (a file edited since is no longer ours). */
  files: Record<string, { command: string; bytes: number }>;
}

/** An input the output must stay apart from: `what` names it in the message (`--model`). */
export interface Guarded {
  path: string;
  what: string;
}

/** What every claim needs: the command (`'export'`), the flag or key naming the path, --force, the inputs. */
export interface ClaimOptions {
  command: string;
  flag: string;
  force?: boolean;
  inputs?: readonly Guarded[];
  /** False for a command without a --force flag (the message then does not offer one). */
  forceable?: boolean;
  /** Names the command will write into a folder output, checked before any work (publishOutDir checks again). */
  writes?: readonly string[];
}

function readManifest(dir: string): Manifest | undefined {
  const file = join(dir, OUTPUT_MANIFEST);
  try {
    if (!statSync(file).isFile()) return undefined;
    const m = JSON.parse(readFileSync(file, 'utf8')) as Partial<Manifest>;
    const files = m.files !== null && typeof m.files === 'object' ? m.files : {};
    return { folder: typeof m.folder === 'string' ? m.folder : undefined, files };
  } catch {
    return undefined; // missing or damaged: nothing there is known to be ours
  }
}

function writeManifest(dir: string, m: Manifest): void {
  writeFileAtomic(join(dir, OUTPUT_MANIFEST), `${JSON.stringify(m, null, 2)}\n`);
}

/** True when `inner` is `outer` or lies inside it. */
function within(inner: string, outer: string): boolean {
  const r = relative(outer, inner);
  return r === '' || (!r.startsWith(`..${sep}`) && r !== '..' && !r.startsWith(sep) && !/^[a-zA-Z]:/.test(r));
}

/** The repository (a folder holding `.git`) around `dir`, if any. */
function repositoryOf(dir: string): string | undefined {
  for (let cur = resolve(dir); ; cur = dirname(cur)) {
    if (existsSync(join(cur, '.git'))) return cur;
    if (dirname(cur) === cur) return undefined;
  }
}

/**
 * Refuses an output `out` that would cover one of the inputs (equal to or above it), lie inside an
 * input folder, or cover the working directory's repository, the home folder or `/`.
 */
export function assertApart(out: string, flag: string, inputs: readonly Guarded[] = []): void {
  const abs = resolve(out);
  const fixed: Guarded[] = [
    { path: sep, what: 'the file system root' },
    { path: homedir(), what: 'the home folder' },
  ];
  const repo = repositoryOf(process.cwd());
  if (repo !== undefined) fixed.push({ path: repo, what: 'the repository of the working directory' });
  for (const g of [...inputs, ...fixed]) {
    const p = resolve(g.path);
    if (within(p, abs))
      throw new UserError(
        `${flag} ${out}: ${p === abs ? 'is' : 'holds'} ${g.what} (${p}); choose a separate output path`,
      );
  }
  for (const g of inputs) {
    const p = resolve(g.path);
    let isDir = false;
    try {
      isDir = statSync(p).isDirectory();
    } catch {
      // an input that does not exist yet: only the check above applies
    }
    if (isDir && within(abs, p))
      throw new UserError(`${flag} ${out}: lies inside ${g.what} (${p}); choose a path outside it`);
  }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/**
 * Checks an output folder before any work: returns its absolute path and whether it exists.
 * Refused (one line): a link; a path that is not a folder; a non-empty folder without this command's
 * manifest, unless `force`; see assertApart. A missing folder's parent is created (mkdirOut).
 */
export function claimOutDir(dir: string, o: ClaimOptions): { dir: string; existed: boolean } {
  const abs = resolve(dir);
  assertApart(dir, o.flag, o.inputs);
  // A link is refused as a file output's is: the command would write into, and replace files of,
  // whatever folder it names (stat below follows it).
  if (isLink(abs))
    throw new UserError(`${o.flag} ${dir}: is a link; it is not followed or replaced (choose another path)`);
  let st;
  try {
    st = statSync(abs);
  } catch {
    mkdirOut(dirname(abs), o.flag);
    // Created and removed at once: a folder that cannot be made (a pseudo file system, a full disk
    // of inodes) fails here in one line, before any work, not when the output is published.
    try {
      mkdirSync(abs);
      rmdirSync(abs);
    } catch (e) {
      throw new UserError(
        `${o.flag} ${dir}: cannot create folder (${(e as NodeJS.ErrnoException).code ?? 'error'} at ${abs})`,
      );
    }
    return { dir: abs, existed: false };
  }
  if (!st.isDirectory())
    throw new UserError(`${o.flag} ${dir}: exists and is not a folder; it is not replaced (choose another path)`);
  const entries = readdirSync(abs);
  const m = readManifest(abs);
  if (entries.length === 0 || m?.folder === o.command || o.force === true) {
    const foreign = (o.writes ?? []).find((f) => entries.includes(f) && m?.files[f] === undefined);
    if (foreign !== undefined)
      throw new UserError(
        `${o.flag} ${dir}: ${foreign} there was not written by sharp and is not replaced; choose a new folder`,
      );
    return { dir: abs, existed: true };
  }
  const owner =
    m?.folder !== undefined
      ? `holds the output of sharp ${m.folder}, not of sharp ${o.command}`
      : `is a folder not written by sharp ${o.command}`;
  const hint =
    o.forceable === false
      ? 'choose a new or empty folder'
      : "choose a new folder, or pass --force to add this command's files to it (nothing else there is touched)";
  throw new UserError(`${o.flag} ${dir}: ${owner}; ${hint}`);
}

/** Creates the claimed folder if needed and records the command as its owner (for outputs written in place). */
export function markOutDir(dir: string, o: Pick<ClaimOptions, 'command' | 'flag'>): string {
  const command = o.command;
  const abs = mkdirOut(dir, o.flag);
  const m = readManifest(abs) ?? { files: {} };
  if (m.folder !== command) writeManifest(abs, { ...m, folder: command });
  return abs;
}

/**
 * Moves the files of a fully written temp folder `tmp` into the claimed folder `dir`: the whole
 * folder by one rename when `dir` does not exist, else file by file (each rename atomic), then the
 * files this command wrote there before and did not write now are removed, and the manifest is
 * updated. Files of any other origin are never touched. `tmp` is removed.
 */
export function publishOutDir(tmp: string, dir: string, command: string): void {
  const names = readdirSync(tmp).filter((f) => f !== OUTPUT_MANIFEST);
  const files: Manifest['files'] = {};
  for (const f of names) files[f] = { command, bytes: statSync(join(tmp, f)).size };
  if (!existsSync(dir)) {
    writeManifest(tmp, { folder: command, files });
    try {
      renameSync(tmp, dir);
      return;
    } catch (err) {
      rmSync(tmp, { recursive: true, force: true });
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' || code === 'EEXIST')
        throw new UserError(`${dir}: created by another process meanwhile; not replaced`);
      throw err;
    }
  }
  try {
    const before = readManifest(dir);
    for (const f of names) {
      const target = join(dir, f);
      if (!existsSync(target)) continue;
      if (lstatSync(target).isDirectory()) throw new UserError(`${dir}: ${f} there is a folder; not replaced`);
      if (before?.files[f] === undefined)
        throw new UserError(`${dir}: ${f} there was not written by sharp and is not replaced; choose a new folder`);
    }
    for (const f of names) renameSync(join(tmp, f), join(dir, f));
    for (const [f, e] of Object.entries(before?.files ?? {})) {
      if (e.command !== command || f in files || basename(f) !== f) continue;
      const p = join(dir, f);
      if (existsSync(p) && lstatSync(p).isFile()) rmSync(p, { force: true });
    }
    const kept = Object.fromEntries(
      Object.entries(before?.files ?? {}).filter(([f, e]) => e.command !== command && !(f in files)),
    );
    writeManifest(dir, { folder: command, files: { ...kept, ...files } });
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}

/**
 * Checks an output file before any work: returns its absolute path. Refused (one line): a folder,
 * a device, a pipe or a link; an existing file sharp did not write (per the manifest of its
 * folder); one another command wrote or that changed since (size), unless `force`; see
 * assertApart. Its folder is created.
 */
export function claimOutFile(file: string, o: ClaimOptions): string {
  const abs = resolve(file);
  assertApart(file, o.flag, o.inputs);
  let st;
  try {
    st = lstatSync(abs);
  } catch {
    return prepareOutFile(abs, o.flag);
  }
  if (st.isDirectory()) throw new UserError(`${o.flag} ${file}: is a folder, expected a file path`);
  if (!st.isFile())
    throw new UserError(
      `${o.flag} ${file}: exists and is not a regular file (a link, device or pipe); it is not replaced`,
    );
  const entry = readManifest(dirname(abs))?.files[basename(abs)];
  if (entry === undefined)
    throw new UserError(
      `${o.flag} ${file}: exists and was not written by sharp; it is not replaced (choose another path)`,
    );
  const ours = entry.command === o.command && entry.bytes === st.size;
  if (!ours && o.force !== true) {
    const why =
      entry.command !== o.command ? `was written by sharp ${entry.command}` : 'was changed since sharp wrote it';
    const hint = o.forceable === false ? 'choose another path' : 'choose another path, or pass --force to replace it';
    throw new UserError(`${o.flag} ${file}: exists and ${why}; ${hint}`);
  }
  return prepareOutFile(abs, o.flag);
}

/** Records a written output file in its folder's manifest, so the same command may replace it later. */
export function recordOutFile(file: string, command: string): void {
  const abs = resolve(file);
  const dir = dirname(abs);
  const m = readManifest(dir) ?? { files: {} };
  m.files[basename(abs)] = { command, bytes: statSync(abs).size };
  writeManifest(dir, m);
}
