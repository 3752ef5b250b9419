import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { closeCodeSandbox } from '../tools/code.ts';
import { rollout } from './engine.ts';
import { parseTrajectories, readTrajectories, writeTrajectories } from './jsonl.ts';
import { garbagePolicy } from './scripted/garbage.ts';
import { handEpisode, rolloutConfig } from '../../test/rollout-fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'sharp-jsonl-'));
afterAll(async () => {
  rmSync(dir, { recursive: true, force: true });
  await closeCodeSandbox();
});

describe('trajectory JSONL', () => {
  it('writes atomically and reads back identical trajectories', async () => {
    const cfg = rolloutConfig({ code: { timeoutMs: 50 } });
    const { trajectories } = await rollout(garbagePolicy(3), [handEpisode()], { cfg, groupSize: 10 });
    const file = join(dir, 'traj.jsonl');
    writeTrajectories(file, trajectories);
    expect(readdirSync(dir)).toEqual(['traj.jsonl']);
    expect(readTrajectories(file)).toEqual(trajectories);
  });

  it('names file, line and field of a bad record', () => {
    const good = {
      id: 'a',
      episodeId: 'e',
      sample: 0,
      messages: [],
      agents: [{ id: 0, role: 'planner', delegation: null, answer: null, endReason: 'answer' }],
      finalAnswer: null,
    };
    expect(parseTrajectories(JSON.stringify(good))).toHaveLength(1);
    expect(() => parseTrajectories(`${JSON.stringify(good)}\n{oops`, 'f.jsonl')).toThrow(/^f\.jsonl:2: not valid JSON/);
    expect(() => parseTrajectories(JSON.stringify({ ...good, sample: -1 }), 'f.jsonl')).toThrow(
      /^f\.jsonl:1: sample: /,
    );
    const badAgent = { ...good, agents: [{ ...good.agents[0], endReason: 'bored' }] };
    expect(() => parseTrajectories(JSON.stringify(badAgent), 'f.jsonl')).toThrow(/^f\.jsonl:1: agents\.0\.endReason: /);
    const badMsg = {
      ...good,
      messages: [
        { index: 1, agent: 0, role: 'planner', chatRole: 'user', text: 'q', tokenIds: [], logprobs: [], toolCalls: [] },
      ],
    };
    expect(() => parseTrajectories(JSON.stringify(badMsg), 'f.jsonl')).toThrow(
      'f.jsonl:1: messages.0.index: is 1, expected 0',
    );
    const file = join(dir, 'missing.jsonl');
    expect(() => readTrajectories(file)).toThrow(`trajectories: file not found: ${file}`);
    writeFileSync(join(dir, 'blank.jsonl'), '\n\n');
    expect(readTrajectories(join(dir, 'blank.jsonl'))).toEqual([]);
  });
});
