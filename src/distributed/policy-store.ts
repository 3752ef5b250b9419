import { existsSync } from 'node:fs';
import { copyFile, mkdir, readdir, rm } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { publishDir } from '../fs/publish-dir.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import type { Loaded } from './units.ts';

/**
 * Policy versions through a shared folder: the trainer writes the weights of step s to
 * <policyDir>/<run>/v<s> (config.json, model.safetensors and the tokenizer files) under a temp name
 * and renames it into place, so a worker sees a complete version or none. Every job names its
 * version; a worker loads it once and keeps it until a job names a newer one.
 */
const COMPLETE = 'model.safetensors';

const versionDir = (policyDir: string, run: string, version: string): string => join(policyDir, run, version);

const isComplete = (dir: string): boolean => existsSync(join(dir, COMPLETE)) && existsSync(join(dir, 'config.json'));

/** Publishes `model` as `version` (a re-publish after a resume finds it complete and keeps it). */
export async function publishPolicy(
  model: CausalLM,
  policyDir: string,
  run: string,
  version: string,
  companions: readonly string[],
  keep = 3,
): Promise<string> {
  const dir = versionDir(policyDir, run, version);
  if (isComplete(dir)) return dir;
  const tmp = join(policyDir, run, `.${version}.tmp-${process.pid}`);
  await rm(tmp, { recursive: true, force: true });
  await mkdir(tmp, { recursive: true });
  await model.save(tmp);
  for (const f of companions) await copyFile(f, join(tmp, basename(f)));
  await publishDir(tmp, dir, isComplete);
  await prune(join(policyDir, run), keep);
  return dir;
}

/** Keeps the newest `keep` versions (a retried job of the step before may still need its version). */
async function prune(runDir: string, keep: number): Promise<void> {
  const versions = (await readdir(runDir))
    .map((n) => /^v(\d+)$/.exec(n))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => b - a);
  for (const v of versions.slice(keep)) await rm(join(runDir, `v${v}`), { recursive: true, force: true });
}

interface Entry {
  dir: string;
  loaded: Promise<Loaded>;
  users: number;
}

/** A worker's loaded versions: the newest stays; older ones are freed once no job uses them. */
export class PolicyCache {
  private readonly entries = new Map<string, Entry>();
  private newest: string | undefined;
  loads = 0;

  async acquire(dir: string): Promise<{ policy: Loaded; release: () => void }> {
    let e = this.entries.get(dir);
    if (!e) {
      if (!isComplete(dir))
        throw new Error(
          `policy version ${dir} is not published (is rollout.distributed.policyDir shared with this worker at ` +
            `the same path?)`,
        );
      this.loads += 1;
      e = {
        dir,
        users: 0,
        loaded: Promise.all([CausalLM.load(dir), Tokenizer.load(dir)]).then(([model, tokenizer]) => ({
          model,
          tokenizer,
        })),
      };
      this.entries.set(dir, e);
      if (this.newest === undefined || versionNumber(dir) > versionNumber(this.newest)) this.newest = dir;
    }
    e.users += 1;
    const entry = e;
    try {
      const policy = await entry.loaded;
      return { policy, release: () => this.release(entry) };
    } catch (err) {
      entry.users -= 1;
      this.entries.delete(dir);
      throw err;
    }
  }

  private release(e: Entry): void {
    e.users -= 1;
    for (const [dir, other] of this.entries) {
      if (dir === this.newest || other.users > 0) continue;
      this.entries.delete(dir);
      void other.loaded.then(
        (p) => p.model.dispose(),
        () => undefined,
      );
    }
  }

  async dispose(): Promise<void> {
    for (const e of this.entries.values()) (await e.loaded.catch(() => undefined))?.model.dispose();
    this.entries.clear();
  }
}

const versionNumber = (dir: string): number => Number(/v(\d+)$/.exec(dir)?.[1] ?? -1);
