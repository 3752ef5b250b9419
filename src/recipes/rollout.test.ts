import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { readTrajectories } from '../rollout/jsonl.ts';
import { createTinyLm } from '../../test/tiny-lm.ts';
import { loadTrainData } from './stages/train-data.ts';
import { rolloutFlags, withDefaults, type GivenFlags } from './commands.ts';
import { run as runRollout } from './rollout.ts';
import { configFrom } from './stages/run-setup.ts';

const run = (opts: GivenFlags<typeof rolloutFlags>): Promise<void> => runRollout(withDefaults(rolloutFlags, opts));
const dir = mkdtempSync(join(tmpdir(), 'sharp-rollout-cmd-'));
beforeAll(async () => {
  await initBackend('wasm');
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function quiet(f: () => Promise<void>): Promise<string> {
  let text = '';
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => {
    text += String(s);
    return true;
  });
  try {
    await f();
  } finally {
    write.mockRestore();
  }
  return text;
}

describe('sharp rollout', () => {
  it('writes the scripted expert trajectories of synthetic episodes', async () => {
    const out = join(dir, 'expert.jsonl');
    // One shared world: the expert's tool calls stay simple lookups (fresh worlds add computed hops).
    const printed = await quiet(() =>
      run({ n: 5, out, policy: 'expert', set: ['rollout.groupSize=2', 'data.synthetic.worlds=shared'] }),
    );
    const trajs = readTrajectories(out);
    expect(trajs).toHaveLength(10);
    expect(trajs.map((t) => t.sample)).toEqual([0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
    expect(printed).toContain('10 trajectories (5 episodes x 2)');
    expect(printed).toContain('EM 1.000');
  });

  it('rolls out the first n training episodes of sharp train (same loader: worlds, names, hops)', async () => {
    const out = join(dir, 'random.jsonl');
    const sets = [
      'rollout.groupSize=2',
      'data.synthetic.maxHops=2',
      'data.synthetic.world.people=30',
      'data.synthetic.world.companies=12',
      'data.synthetic.world.cities=10',
      'data.synthetic.world.countries=4',
    ];
    await quiet(() => run({ n: 3, out, policy: 'expert', set: sets }));
    const want = loadTrainData(configFrom({ set: sets }).data).train.slice(0, 3);
    const trajs = readTrajectories(out).filter((t) => t.sample === 0);
    expect(trajs.map((t) => t.episodeId)).toEqual(want.map((e) => e.id));
    expect(trajs.map((t) => t.messages.find((m) => m.agent === 0 && m.chatRole === 'user')?.text)).toEqual(
      want.map((e) => e.question),
    );
  });

  it('runs a checkpoint through LmPolicy', async () => {
    const ckpt = join(dir, 'tiny');
    const lm = await createTinyLm({ seed: 1, dir: ckpt });
    await lm.model.save(ckpt);
    await lm.dispose();
    const out = join(dir, 'lm.jsonl');
    const printed = await quiet(() =>
      run({
        n: 2,
        out,
        set: [
          `model.path=${ckpt}`,
          'rollout.groupSize=2',
          'rollout.maxNewTokens=8',
          'rollout.plannerPrompt=Plan.',
          'rollout.workerPrompt=Work.',
        ],
      }),
    );
    const trajs = readTrajectories(out);
    expect(trajs).toHaveLength(4);
    expect(trajs.every((t) => t.messages.some((m) => m.tokenIds.length > 0))).toBe(true);
    expect(printed).toMatch(/4 trajectories \(2 episodes x 2\)/);
  });

  it('fails in one line on bad input', async () => {
    await expect(run({ n: 0, out: join(dir, 'x') })).rejects.toThrow(
      "rollout: --n expects an integer in 1..100000, got '0'",
    );
    await expect(run({ n: 1e9, out: join(dir, 'x') })).rejects.toThrow(
      "rollout: --n expects an integer in 1..100000, got '1000000000'",
    );
    // The model's position limit (2048) against rollout.maxContext, before any work.
    const long = ['model.path=models/tiny-random', 'rollout.maxContext=4096'];
    await expect(run({ n: 1, out: join(dir, 'x'), set: long })).rejects.toThrow(
      /^rollout: rollout\.maxContext \(4096\) is more than the model at model\.path models\/tiny-random holds \(2048 positions, max_position_embeddings\)/,
    );
    await expect(run({ n: 1, out: join(dir, 'x'), set: ['model.path=/nonexistent/m'] })).rejects.toThrow(
      "rollout: no checkpoint at model.path '/nonexistent/m'",
    );
    await expect(run({ n: 1, out: join(dir, 'x'), set: ['data.source=musique'] })).rejects.toThrow(
      "config: data.path is required when data.source is 'musique'",
    );
    await expect(
      run({ n: 1, out: join(dir, 'x'), set: ['data.source=musique', 'data.path=/nonexistent/d.jsonl'] }),
    ).rejects.toThrow('rollout: data.path not found: /nonexistent/d.jsonl');
  });
});
