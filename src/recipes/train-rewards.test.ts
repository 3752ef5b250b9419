import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sharp } from '../../test/cli-helpers.ts';
import { loadConfig } from '../config/load.ts';
import { defineReward } from '../credit/user-reward.ts';
import { UserError } from '../errors.ts';
import { readMetrics } from '../train/metrics/jsonl.ts';
import { createLogger } from '../run/logger.ts';
import { ablate } from './stages/run-ablation.ts';
import { train } from './train.ts';

/**
 * User rewards through the whole `train` recipe: a reward that cannot score stops the run before
 * its first step with one line and no run folder left, from the API and from the CLI; a working one
 * is the broadcast reward the RL step records.
 */
const repo = resolve(import.meta.dirname, '../..');
const root = mkdtempSync(join(tmpdir(), 'sharp-rewards-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A short run on the user JSONL sample and the shipped tiny model: no SFT, 1 RL step of 2 questions x 2. */
const tree = (name: string) => ({
  run: { name, dir: join(root, 'runs'), seed: 0, backend: 'wasm' as const },
  model: { path: join(repo, 'models/tiny-random') },
  data: { source: 'jsonl' as const, path: join(repo, 'data/jsonl/questions_sample.jsonl'), benchmarkHeldOut: 2 },
  rollout: { groupSize: 2, maxNewTokens: 8, maxContext: 512, maxPlannerTurns: 2, maxDelegations: 1, maxWorkerTurns: 1 },
  train: { steps: 1, batchQuestions: 2, microBatch: 8, sft: { steps: 0 } },
  eval: { validationShare: 0 },
  credit: { method: 'broadcast' as const },
});
const runsOf = (name: string) =>
  existsSync(join(root, 'runs')) ? readdirSync(join(root, 'runs')).filter((d) => d.startsWith(`${name}-`)) : [];

async function userErrorOf(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UserError);
  const msg = (err as Error).message;
  expect(msg).not.toContain('\n');
  return msg;
}

describe('train with user rewards', () => {
  it.each([
    ['NaN', () => Number.NaN, "reward 'bad' returned NaN on a probe of question "],
    ['Infinity', () => Number.NEGATIVE_INFINITY, "reward 'bad' returned -Infinity on a probe of question "],
    ['a string', () => 'high' as unknown as number, 'reward \'bad\' returned a string ("high") on a probe of '],
    [
      'a throw',
      () => {
        throw new Error('gold missing');
      },
      "reward 'bad' threw on a probe of question ",
    ],
  ])('a reward returning %s stops the API run before step 1, leaving no run folder', async (what, score, message) => {
    const name = `bad-${what.replace(/\W/g, '')}`;
    const msg = await userErrorOf(train(loadConfig({ tree: tree(name) }), { rewards: [defineReward(score, 'bad')] }));
    expect(msg).toContain(message);
    expect(msg).toContain('before training');
    expect(runsOf(name)).toEqual([]);
  });

  it('a reward module named in the config that throws: `sharp train` prints one line and exits 2', async () => {
    const module = join(root, 'throws.ts');
    writeFileSync(module, "export default (): number => { throw new Error('no scorer configured'); };\n");
    const config = join(root, 'cli.yaml');
    const t = { ...tree('cli'), credit: { method: 'broadcast', rewards: [{ module }] } };
    writeFileSync(config, JSON.stringify(t));
    const r = await sharp(root, ['train', '--config', config]);
    expect(r.code).toBe(2);
    const lines = r.stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(
      /^sharp: reward 'throws\.ts#default' threw on a probe of question \S+ \(answer ".+"\), before training: no scorer configured$/,
    );
    expect(runsOf('cli')).toEqual([]);
  });

  it('a working reward is the broadcast reward of the RL step, and the log names it', async () => {
    const quarter = defineReward(({ answer }) => (answer === null ? 0.25 : 0.75), 'quarter');
    const res = await train(loadConfig({ tree: tree('good') }), { rewards: [{ reward: quarter, weight: 2 }] });
    const [m] = readMetrics(join(res.runDir, 'metrics.jsonl'));
    const b = m?.['reward/broadcast/planner'] as number;
    // Every trajectory's R_b is 2 x 0.25 or 2 x 0.75, so the step's mean lies in [0.5, 1.5] on a grid of 0.25.
    expect(b).toBeGreaterThanOrEqual(0.5);
    expect(b).toBeLessThanOrEqual(1.5);
    expect((b * 4) % 1).toBeCloseTo(0, 9);
    // The accuracy metric stays the share of right answers (the untrained model answers none), not R_b > 0.
    expect(m?.accuracy).toBe(0);
    expect(readFileSync(join(res.runDir, 'log.jsonl'), 'utf8')).toContain(
      '"rewards":[{"name":"quarter","weight":2}],"msg":"user rewards"',
    );
  });

  it('`sharp ablate` loads the same credit.rewards: a missing module stops it before its folder exists', async () => {
    const module = join(root, 'missing.ts');
    const cfg = loadConfig({
      tree: { ...tree('abl'), credit: { rewards: [{ module }] }, ablation: { methods: ['loo', 'broadcast'] } },
    });
    const dir = join(root, 'ablation');
    const { log, close } = createLogger({ level: 'fatal', terminal: null });
    try {
      const msg = await userErrorOf(ablate({ cfg, dir, log, stop: { requested: false }, command: 'test' }));
      expect(msg).toBe(`credit.rewards[0] (${module}): no such file ${module}`);
    } finally {
      await close();
    }
    expect(existsSync(dir)).toBe(false);
  });
});
