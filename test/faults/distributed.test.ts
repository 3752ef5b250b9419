import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../../src/backend/select.ts';
import { latestCheckpoint } from '../../src/train/checkpoints/checkpoint.ts';
import { CausalLM } from '../../src/model/causal-lm.ts';
import { HARNESS, NODE_ARGS, microConfig, sharp } from '../cli-helpers.ts';
import { HAVE_REDIS, NO_REDIS_MESSAGE, startRedis, type RedisServer } from '../distributed/redis.ts';
import { spawnWorker, type WorkerProcess } from '../distributed/workers.ts';

/**
 * Faults of a distributed `sharp train` (real redis-server, 2 real `sharp worker` processes, a micro
 * run of 3 steps): whatever happens, the run ends with the metrics and weights of the same run made in
 * the trainer process (rollout.distributed.local, same seed).
 */
if (!HAVE_REDIS) console.warn(NO_REDIS_MESSAGE);

const STEPS = 3;
type Metric = Record<string, unknown>;
const metricsOf = (run: string): Metric[] =>
  readFileSync(join(run, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) =>
      Object.fromEntries(
        Object.entries(JSON.parse(l) as Metric).filter(([k]) => !k.startsWith('perf/') && k !== 'time'),
      ),
    );
const runDirOf = (runs: string, name: string): string => {
  const d = readdirSync(runs).filter((n) => n.startsWith(`${name}-`));
  expect(d).toHaveLength(1);
  return join(runs, d[0] as string);
};
async function weightsOf(run: string): Promise<number[][]> {
  const c = await latestCheckpoint(run);
  const m = await CausalLM.load(c?.dir as string);
  const out = await Promise.all(m.trainableVariables().map(async (v) => Array.from((await v.data()) as Float32Array)));
  m.dispose();
  return out;
}

describe.skipIf(!HAVE_REDIS)('distributed sharp train: faults', () => {
  let root: string;
  let redis: RedisServer;
  const workers: WorkerProcess[] = []; // every worker spawned, so a failed case leaves none behind
  let reference: { metrics: Metric[]; weights: number[][] };
  const dist = (queue: string): string[] => [
    '--set',
    `rollout.distributed.redis=${redis.url}`,
    '--set',
    `rollout.distributed.queue=${queue}`,
    '--set',
    'rollout.distributed.jobTimeoutS=240',
  ];

  beforeAll(async () => {
    await initBackend('wasm');
    root = mkdtempSync(join(tmpdir(), 'sharp-dist-faults-'));
    redis = await startRedis();
    const ref = await sharp(root, [
      'train',
      '--config',
      microConfig(root, 'ref', STEPS),
      '--set',
      'rollout.distributed.local=true',
    ]);
    expect(ref.code, ref.stderr).toBe(0);
    const run = runDirOf(join(root, 'runs'), 'ref');
    reference = { metrics: metricsOf(run), weights: await weightsOf(run) };
  });
  afterAll(async () => {
    await Promise.all(workers.map((w) => w.stop()));
    await redis?.dispose();
    rmSync(root, { recursive: true, force: true });
  });

  const startWorkers = (queue: string): WorkerProcess[] => {
    const two = [spawnWorker(redis.url, queue, ['--lock-s', '3']), spawnWorker(redis.url, queue, ['--lock-s', '3'])];
    workers.push(...two);
    return two;
  };
  const expectReference = async (run: string): Promise<void> => {
    expect(metricsOf(run)).toEqual(reference.metrics);
    expect(await weightsOf(run)).toEqual(reference.weights);
  };

  it('2 workers give the in-process run; a worker killed with -9 mid-job has its job re-run by the other', async () => {
    const [a, b] = startWorkers('kill9') as [WorkerProcess, WorkerProcess];
    const train = sharp(root, ['train', '--config', microConfig(root, 'kill9', STEPS), ...dist('kill9')]);
    const first = await Promise.race([a.waitFor(/start rollout .*\.s2\.q0/), b.waitFor(/start rollout .*\.s2\.q0/)]);
    const victim = a.lines.includes(first) ? a : b;
    const other = victim === a ? b : a;
    victim.proc.kill('SIGKILL');
    const r = await train;
    expect(r.code, r.stderr).toBe(0);
    const id = /start rollout (\S+)/.exec(first)?.[1] as string;
    expect(other.lines).toContain(`worker ${other.proc.pid}: done rollout ${id}`);
    await expectReference(runDirOf(join(root, 'runs'), 'kill9'));
    // A duplicate of a finished job is the same job: adding it again changes nothing.
    const queue = new Queue('kill9', { connection: { host: '127.0.0.1', port: redis.port } });
    const before = await queue.getJobCounts();
    const dup = await queue.add('rollout', {}, { jobId: id });
    expect(dup.id).toBe(id);
    expect(await queue.getJobState(id)).toBe('completed');
    expect(await queue.getJobCounts()).toEqual(before);
    await queue.close();
    await other.stop();
  }, 600_000);

  it('Redis restarting mid-step is survived: the step completes on reconnect', async () => {
    const [a, b] = startWorkers('restart') as [WorkerProcess, WorkerProcess];
    const train = sharp(root, ['train', '--config', microConfig(root, 'restart', STEPS), ...dist('restart')]);
    await Promise.race([a.waitFor(/start rollout .*\.s2\./), b.waitFor(/start rollout .*\.s2\./)]);
    // Down for 3 s (longer than the trainer's poll and the workers' lock), then back from its append-only file.
    await redis.stop();
    await new Promise((res) => setTimeout(res, 3000));
    await redis.start();
    const r = await train;
    expect(r.code, r.stderr).toBe(0);
    const lines = r.stderr.split('\n');
    expect(
      lines.filter((l) =>
        /^rollout step 2: redis unreachable \(.+\); retrying until rollout\.distributed\.jobTimeoutS$/.test(l),
      ),
    ).toHaveLength(1);
    expect(lines.filter((l) => /^rollout step 2: redis reconnected after \d+\.\d s$/.test(l))).toHaveLength(1);
    expect([...a.lines, ...b.lines].some((l) => / redis: .* \(reconnecting\)$/.test(l))).toBe(true);
    await expectReference(runDirOf(join(root, 'runs'), 'restart'));
    await Promise.all([a.stop(), b.stop()]);
  }, 600_000);

  it('Redis gone for good: the step fails with one clear line', async () => {
    const r = await sharp(root, [
      'train',
      '--config',
      microConfig(root, 'gone', STEPS),
      '--set',
      'rollout.distributed.redis=redis://127.0.0.1:1',
      '--set',
      'rollout.distributed.jobTimeoutS=3',
    ]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(
      /^sharp: rollout\.distributed: step 1: Redis at redis:\/\/127\.0\.0\.1:1 unreachable for \d+ s \(.+\)$/,
    );
  }, 300_000);

  it('a trainer killed mid-run and resumed re-attaches to its step and ends as the uninterrupted run', async () => {
    const [a, b] = startWorkers('resume') as [WorkerProcess, WorkerProcess];
    const cfg = microConfig(root, 'resume', STEPS);
    const child = spawn(process.execPath, [...NODE_ARGS, HARNESS, 'train', '--config', cfg, ...dist('resume')], {
      cwd: root,
      stdio: 'ignore',
    });
    await Promise.race([a.waitFor(/start rollout .*\.s2\./), b.waitFor(/start rollout .*\.s2\./)]);
    child.kill('SIGKILL');
    await new Promise((res) => child.once('exit', res));
    const run = runDirOf(join(root, 'runs'), 'resume');
    const r = await sharp(root, ['train', '--resume', run, ...dist('resume')]);
    expect(r.code, r.stderr).toBe(0);
    await expectReference(run);
    await Promise.all([a.stop(), b.stop()]);
  }, 600_000);
});
