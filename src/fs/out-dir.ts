import { accessSync, constants, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { UserError } from '../errors.ts';

/**
 * Creates an output folder (and its missing parents) or fails at once with one line naming it.
 *
 * Not `mkdirSync(dir, { recursive: true })`: on Node 20 that loops forever under a pseudo file
 * system that answers ENOENT to mkdir (`/proc/x`), and its errors name no option. Here each
 * missing component is created in turn, so every failure is a single errno, and the folder must
 * end up writable. `what` names the flag or key the folder came from, e.g. '--out'.
 */
export function mkdirOut(dir: string, what: string): string {
  return ensureDir(resolve(dir), `${what} ${dir}`);
}

/** mkdirOut of `abs`, its errors starting with `label`. */
function ensureDir(abs: string, label: string): string {
  const missing: string[] = [];
  let cur = abs;
  for (;;) {
    let st;
    try {
      st = statSync(cur);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // ENOTDIR: a file sits somewhere above; walk up to name it.
      if (code !== 'ENOENT' && code !== 'ENOTDIR')
        throw new UserError(`${label}: cannot create folder (${code} at ${cur})`);
      missing.push(cur);
      const up = dirname(cur);
      if (up === cur) break;
      cur = up;
      continue;
    }
    if (!st.isDirectory()) throw new UserError(`${label}: ${cur} is not a folder`);
    break;
  }
  for (const d of missing.reverse()) {
    try {
      mkdirSync(d);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // Another process may create the same parent at the same moment: that is success.
      if (code === 'EEXIST' && statSync(d).isDirectory()) continue;
      throw new UserError(`${label}: cannot create folder (${code} at ${d})`);
    }
  }
  try {
    accessSync(abs, constants.W_OK);
  } catch {
    throw new UserError(`${label}: folder ${abs} is not writable`);
  }
  return abs;
}

/**
 * Checks an output file path before any work is done: it must not be a folder, and its folder is
 * created (see mkdirOut) and writable. Returns the absolute path.
 */
export function prepareOutFile(file: string, what: string): string {
  const abs = resolve(file);
  let st;
  try {
    st = statSync(abs);
  } catch {
    st = undefined;
  }
  if (st?.isDirectory()) throw new UserError(`${what} ${file}: is a folder, expected a file path`);
  ensureDir(dirname(abs), `${what} ${file}`);
  return abs;
}
