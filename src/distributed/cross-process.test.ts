import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { Rng } from '../random/rng.ts';
import { companionFiles } from '../recipes/stages/save-model.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import { closeCodeSandbox } from '../tools/code.ts';
import { NODE_ARGS } from '../../test/cli-helpers.ts';
import { MODEL, stepConfig, stepEpisodes } from '../../test/distributed/step.ts';
import { policyVersion } from './ids.ts';
import type { RolloutJobData } from './jobs.ts';
import { localStages } from './stages.ts';
import { publishPolicy } from './policy-store.ts';
import { runStepStages } from '../../test/step-stages.ts';
import type { CreditedGroup } from '../credit/credited.ts';

/**
 * The equality a distributed step rests on, with two real processes and no queue in between: each
 * group job, run in a process of its own from the published policy version (weights read back from
 * the shared folder), gives exactly the group of the in-process reference step with the same seed
 * (trajectories with their token logprobs, replays, credits).
 */
const RUNNER = join(import.meta.dirname, '../../test/distributed/run-group.ts');

function runGroup(job: string, out: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [...NODE_ARGS, RUNNER, job, out], {
      env: { ...process.env, FORCE_COLOR: '0' },
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => res({ code, stderr }));
  });
}

describe("a group's jobs in other processes", () => {
  let root: string;
  let model: CausalLM;
  let tokenizer: Tokenizer;
  beforeAll(async () => {
    await initBackend('wasm');
    root = mkdtempSync(join(tmpdir(), 'sharp-xproc-'));
    model = await CausalLM.load(MODEL);
    tokenizer = await Tokenizer.load(MODEL);
  });
  afterAll(async () => {
    model?.dispose();
    await closeCodeSandbox();
    rmSync(root, { recursive: true, force: true });
  });

  it('two processes give the in-process step: trajectories and credits identical', async () => {
    const cfg = stepConfig(2, { local: true });
    const episodes = stepEpisodes(2);
    const local = await runStepStages(
      localStages({ tokenizer, rollout: cfg.rollout, credit: cfg.credit }),
      cfg.credit,
      episodes,
      model,
      new Rng(7),
      3,
    );
    // The step had counterfactual replays (the children of a group job).
    expect(local.metrics?.['credit/replays']).toBeGreaterThan(0);

    const policy = await publishPolicy(model, join(root, 'policies'), 'run', policyVersion(3), companionFiles(MODEL));
    expect(policy).toBe(join(root, 'policies', 'run', 'v3'));
    const stepSeed = new Rng(7).int(0, 0x7fffffff);
    const runs = episodes.map((episode, q) => {
      const job: RolloutJobData = { run: 'run', step: 3, q, policy, episode, rollout: cfg.rollout, seed: 0 };
      writeFileSync(join(root, `job${q}.json`), JSON.stringify({ job, credit: cfg.credit, stepSeed }));
      return runGroup(join(root, `job${q}.json`), join(root, `out${q}.json`));
    });
    const done = await Promise.all(runs);
    expect(done.map((d) => [d.code, d.stderr])).toEqual([
      [0, ''],
      [0, ''],
    ]);
    const outs = episodes.map(
      (_, q) => JSON.parse(readFileSync(join(root, `out${q}.json`), 'utf8')) as { out: CreditedGroup; loads: number },
    );
    expect(outs.map((o) => o.loads)).toEqual([1, 1]);
    expect(outs.map((o) => o.out)).toEqual(JSON.parse(JSON.stringify(local.groups)));
    expect(
      local.groups
        .flatMap((g) => g.trajectories)
        .some((ct) => ct.trajectory.messages.some((m) => m.logprobs.length > 0)),
    ).toBe(true);
  }, 900_000);
});
