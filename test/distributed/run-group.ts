import { writeFileSync } from 'node:fs';
import { initBackend } from '../../src/backend/select.ts';
import { planStep } from '../../src/credit/plan.ts';
import { assignStep } from '../../src/credit/assign.ts';
import type { CreditConfig } from '../../src/credit/config.ts';
import type { RolloutJobData } from '../../src/distributed/jobs.ts';
import { PolicyCache } from '../../src/distributed/policy-store.ts';
import { plannedFor, replayTrajectory, rolloutGroup, wire } from '../../src/distributed/units.ts';
import { groupSeed, replaySeed } from '../../src/random/step-seeds.ts';
import { closeCodeSandbox } from '../../src/tools/code.ts';

/**
 * A group's rollout job and its replay jobs in a process of their own, as a worker runs them but
 * without the queue: the policy version loaded from the published folder, the rollout, the plan
 * (the trainer's), one replay unit per trajectory (each from JSON, as its job would be), then the
 * credit (the trainer's). Usage: tsx test/distributed/run-group.ts JOB.json OUT.json
 */
interface GroupJob {
  job: RolloutJobData;
  credit: CreditConfig;
  stepSeed: number;
}

async function main(): Promise<void> {
  const [jobFile, outFile] = process.argv.slice(2) as [string, string];
  const { readFileSync } = await import('node:fs');
  const { job: d, credit, stepSeed } = JSON.parse(readFileSync(jobFile, 'utf8')) as GroupJob;
  await initBackend('wasm');
  const cache = new PolicyCache();
  const { policy, release } = await cache.acquire(d.policy);
  const rolled = await rolloutGroup(policy, d.episode, d.rollout, groupSeed(stepSeed, d.q));
  // Question q of the step: its plan draws from the stream of position q.
  const groups = Array.from({ length: d.q + 1 }, (_, q) => ({
    episode: d.episode,
    trajectories: q === d.q ? wire(rolled.trajectories) : [],
  }));
  const plan = planStep(groups, credit, stepSeed)[d.q]!;
  const replays = [];
  for (const [t, tp] of plan.trajectories.entries())
    replays.push(
      ...(await replayTrajectory(
        policy,
        wire(tp.traj),
        d.episode,
        plannedFor(plan, t),
        d.rollout,
        credit,
        replaySeed(groupSeed(stepSeed, d.q), t),
      )),
    );
  const out = (await assignStep([plan], [replays], [[]], credit, {})).groups[0];
  release();
  await cache.dispose();
  await closeCodeSandbox();
  writeFileSync(outFile, JSON.stringify({ out, loads: cache.loads }));
}
void main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  },
);
