/**
 * `sharp ablate --config X [--out DIR]`: the ablation of src/recipes/stages/run-ablation.ts in DIR (default
 * ablation.out, else <run.dir>/<run.name>). Running the same command again resumes: finished runs are skipped, an
 * unfinished one continues from its checkpoint. Ctrl-C finishes the current RL step, saves, writes
 * the partial report and exits 0. One process per ablation folder: a second one is refused (run.lock).
 * `--report` writes the report from the finished runs alone, trains nothing and takes no lock; its
 * folder must already be an ablation folder. The folder is an earlier ablation's, new or empty
 * (src/fs/output-guard.ts).
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { UserError } from '../errors.ts';
import { claimOutDir, markOutDir } from '../fs/output-guard.ts';
import { acquireRunLock, LOCK_FILE } from '../run/run-lock.ts';
import type { AblateFlags } from './commands.ts';
import { ablate, checkAblationConfig } from './stages/run-ablation.ts';
import { checkBf16Base } from './stages/preflight.ts';
import { configFrom, startTools, withRun } from './stages/run-setup.ts';

/**
 * An ablation folder: marked by an earlier `sharp ablate`, or holding its report or one of its `<method>-s<seed>` runs.
 */
function isAblationFolder(dir: string): boolean {
  if (existsSync(join(dir, 'ablation.json'))) return true;
  return readdirSync(dir).some((f) => /^[a-z-]+-s\d+$/.test(f) && existsSync(join(dir, f, 'config.yaml')));
}

function ablationDir(dir: string, reportOnly: boolean, modelPath: string): string {
  const claim = {
    command: 'ablate',
    flag: 'ablate: --out',
    inputs: [{ path: modelPath, what: 'model.path' }],
    forceable: false,
  };
  if (reportOnly) {
    let st;
    try {
      st = statSync(dir);
    } catch {
      throw new UserError(`ablate --report: ${dir} not found (the folder of an ablation already run)`);
    }
    if (!st.isDirectory()) throw new UserError(`ablate --report: ${dir} is not a folder`);
    claimOutDir(dir, { ...claim, force: isAblationFolder(dir) });
    if (!isAblationFolder(dir))
      throw new UserError(`ablate --report: ${dir} holds no ablation runs (nothing to report)`);
    return dir;
  }
  // A folder another live `sharp ablate` holds: its lock names that process, a clearer refusal than the ownership one.
  if (existsSync(join(dir, LOCK_FILE))) acquireRunLock(dir);
  claimOutDir(dir, { ...claim, force: existsSync(dir) && statSync(dir).isDirectory() && isAblationFolder(dir) });
  return markOutDir(dir, claim);
}

export async function run(opts: AblateFlags): Promise<void> {
  const cfg = configFrom(opts);
  checkAblationConfig(cfg);
  if (opts.report !== true) await checkBf16Base(cfg, opts.backend, 'ablate');
  // The user tools start before the ablation folder is claimed: one that cannot start leaves none.
  if (opts.report !== true) await startTools(cfg);
  const dir = ablationDir(
    resolve(opts.out || cfg.ablation.out || join(cfg.run.dir, cfg.run.name)),
    opts.report === true,
    cfg.model.path,
  );
  const reportOnly = opts.report === true;
  if (!reportOnly) acquireRunLock(dir);
  await withRun({ cfg, backendFlag: opts.backend, logDir: dir, sigint: true }, async ({ log, backend, stop }) => {
    log.info(
      {
        dir,
        backend: backend.backend,
        native: backend.native,
        methods: cfg.ablation.methods,
        seeds: cfg.ablation.seeds,
        reportOnly,
      },
      'ablation',
    );
    const command = ['sharp ablate', ...process.argv.slice(3)].join(' ');
    await ablate({ cfg, dir, log, stop, command, reportOnly });
  });
}
