import { writeFileSync } from 'node:fs';
import { initBackend } from '../../src/backend/select.ts';
import { replaySeed } from '../../src/distributed/ids.ts';
import type { GroupJobData } from '../../src/distributed/jobs.ts';
import { PolicyCache } from '../../src/distributed/policy-store.ts';
import { creditGroup, planReplays, replayTrajectory, rolloutGroup, wire } from '../../src/distributed/units.ts';
import { closeCodeSandbox } from '../../src/tools/code.ts';

/**
 * A group job's body in a process of its own, as a worker runs it but without the queue: the policy
 * version loaded from the published folder, the rollout, one replay unit per trajectory (each as
 * its own child job would: from the JSON the parent stored), then the credit.
 * Usage: tsx test/distributed/run-group.ts JOB.json OUT.json
 */
async function main(): Promise<void> {
  const [jobFile, outFile] = process.argv.slice(2) as [string, string];
  const { readFileSync } = await import('node:fs');
  const d = JSON.parse(readFileSync(jobFile, 'utf8')) as GroupJobData;
  await initBackend('wasm');
  const cache = new PolicyCache();
  const { policy, release } = await cache.acquire(d.policy);
  const rolled = await rolloutGroup(policy, d.episode, d.rollout, d.seed);
  const plan = await planReplays(rolled.trajectories, d.episode, d.credit, d.seed);
  const replays = [];
  for (const [t, planned] of plan.entries()) replays.push(await replayTrajectory(policy, wire(rolled.trajectories[t]!), d.episode, planned, d.rollout, d.credit, replaySeed(d.seed, t)));
  const out = await creditGroup(wire(rolled), d.episode, replays, d.credit, d.seed);
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
