import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomic } from '../../fs/atomic.ts';
import { UserError } from '../../errors.ts';

/**
 * What produced the predictions in an eval folder. A resumed eval ("skips ids already
 * predicted") may only reuse predictions made by the same setup, or the file would mix two systems'
 * answers; a mismatch is a one-line error naming the first differing setting.
 */
export type EvalSetup = Record<string, string | number | boolean>;

export const MANIFEST_FILE = 'eval-setup.json';

/**
 * Checks `setup` against the folder's manifest (writing it when absent). `limit` may differ: it only selects episodes.
 */
export function checkSetup(outDir: string, setup: EvalSetup): void {
  const file = join(outDir, MANIFEST_FILE);
  if (existsSync(file)) {
    let old: EvalSetup;
    try {
      old = JSON.parse(readFileSync(file, 'utf8')) as EvalSetup;
    } catch {
      throw new UserError(`${file}: not valid JSON (delete it or use another --out)`);
    }
    for (const k of new Set([...Object.keys(old), ...Object.keys(setup)])) {
      if (old[k] !== setup[k]) {
        throw new UserError(
          `${outDir} holds predictions of another setup (${k}: ${JSON.stringify(old[k])} there, ` +
            `${JSON.stringify(setup[k])} now); use another --out or delete that folder`,
        );
      }
    }
    return;
  }
  writeFileAtomic(file, `${JSON.stringify(setup, null, 2)}\n`);
}
