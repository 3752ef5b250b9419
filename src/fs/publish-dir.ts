import { rename, rm } from 'node:fs/promises';

/**
 * Moves a fully written temp folder to its final name, for outputs that several processes may
 * create at once (two fresh runs sharing one `model.path`). rename(2) onto an existing non-empty
 * folder fails (ENOTEMPTY or EEXIST), so exactly one process wins; a loser whose rival's folder is
 * complete (`isComplete`) drops its own copy and reports 'existing', which counts as success.
 * Anything else (an incomplete folder in the way, another errno) is rethrown with the temp removed.
 */
export async function publishDir(
  tmp: string,
  dir: string,
  isComplete: (dir: string) => boolean,
): Promise<'created' | 'existing'> {
  try {
    await rename(tmp, dir);
    return 'created';
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    const code = (err as NodeJS.ErrnoException).code;
    if ((code === 'ENOTEMPTY' || code === 'EEXIST') && isComplete(dir)) return 'existing';
    throw err;
  }
}
