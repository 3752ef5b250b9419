import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../config/schema.ts';
import { loadTrainData } from './train-data.ts';
import { ensureTranscripts, expertTranscripts, weighCopyTurns } from './expert-transcripts.ts';
import { closeCodeSandbox } from '../../tools/code.ts';

afterAll(async () => closeCodeSandbox());

describe('expert transcripts', () => {
  const cfg = configSchema.parse({ data: { synthetic: { seed: 1, train: 4, heldOut: 1, minHops: 2, maxHops: 2 } } });
  const { train } = loadTrainData(cfg.data);

  it(
    'the scripted expert solves 2-hop episodes: one transcript per agent (planner + 2 workers), assistant turns ' +
      'trained',
    async () => {
      const got = await expertTranscripts(train, cfg);
      expect(got.solved).toBe(4);
      expect(got.transcripts).toHaveLength(4 * 3);
      for (const t of got.transcripts) {
        expect(t.messages[0]?.role).toBe('system');
        expect(t.messages.every((m) => m.train === (m.role === 'assistant'))).toBe(true);
      }
      // The planner's last turn answers with the gold answer in the tags protocol.
      const planner = got.transcripts[0];
      expect(planner?.messages.at(-1)?.content).toBe(`<answer>${train[0]?.answers[0]}</answer>`);
    },
  );

  it(
    'train.sft.expert.trustPlanted reaches the expert: trusting workers repeat the planted claims of a misleading ' +
      'world',
    async () => {
      const world = {
        synthetic: { seed: 2, train: 40, heldOut: 1, shapes: { chain: 0, comparison: 1 }, misleading: { rate: 1 } },
      };
      const careful = configSchema.parse({
        data: world,
        train: { sft: { expert: { noSearch: 0, distractor: 0, redundant: 0, irrelevant: 0 } } },
      });
      const trusting = configSchema.parse({
        data: world,
        train: { sft: { expert: { noSearch: 0, distractor: 0, redundant: 0, irrelevant: 0, trustPlanted: 1 } } },
      });
      const eps = loadTrainData(careful.data).train;
      expect((await expertTranscripts(eps, { ...careful, expert: careful.train.sft.expert })).solved).toBe(40);
      // Most planted claims are shown to the worker asked that fact, and each one shown flips the comparison.
      const solved = (await expertTranscripts(eps, { ...trusting, expert: trusting.train.sft.expert })).solved;
      expect(solved).toBeLessThan(20);
    },
  );

  it('ensureTranscripts writes the file once, then reads it back unchanged', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sharp-expert-')), 'sub', 't.jsonl');
    const a = await ensureTranscripts(file, train, cfg);
    expect(a.generated?.solved).toBe(4);
    const text = readFileSync(file, 'utf8');
    expect(text.trim().split('\n')).toHaveLength(12);
    const b = await ensureTranscripts(file, [], cfg); // no episodes needed: the file exists
    expect(b.generated).toBeUndefined();
    expect(b.transcripts).toEqual(a.transcripts);
    expect(b.stale).toBe(false);
    const other = configSchema.parse({ rollout: { plannerPrompt: 'Plan.', workerPrompt: 'Work.' } });
    expect((await ensureTranscripts(file, [], other)).stale).toBe(true);
  });

  it('limits too tight for the hops: one-line error', async () => {
    const tight = configSchema.parse({ rollout: { maxDelegations: 1 } });
    await expect(
      ensureTranscripts(join(mkdtempSync(join(tmpdir(), 'sharp-expert-')), 't.jsonl'), train, tight),
    ).rejects.toThrow(/solved none of 4 episodes/);
  });

  it(
    'copyWeight marks the copy turns of real expert transcripts: planner calls after the first, worker and ' +
      'lone-agent answers',
    async () => {
      const weighted = configSchema.parse({
        data: { synthetic: { seed: 1, train: 4, heldOut: 1, minHops: 2, maxHops: 2 } },
        train: {
          sft: {
            expert: {
              copyWeight: 3,
              agents: ['multi', 'single'],
              noSearch: 0,
              distractor: 0,
              redundant: 0,
              irrelevant: 0,
            },
          },
        },
      });
      const got = await expertTranscripts(train, { ...weighted, expert: weighted.train.sft.expert });
      const marked = (t: (typeof got.transcripts)[number]) =>
        t.messages.filter((m) => m.train).map((m) => `${m.content.match(/^<(\w+)>/)?.[1]}:${m.weight ?? 1}`);
      // 2-hop multi-agent: planner, worker 1, worker 2; then the lone agent of the single-agent run.
      expect(marked(got.transcripts[0])).toEqual(['delegate:1', 'delegate:3', 'answer:1']);
      expect(marked(got.transcripts[1])).toEqual(['search:1', 'answer:3']);
      expect(marked(got.transcripts[12])).toEqual(['search:1', 'search:3', 'answer:3']);
      const plain = await expertTranscripts(train, {
        ...weighted,
        expert: { ...weighted.train.sft.expert, copyWeight: 1 },
      });
      expect(plain.transcripts.every((t) => t.messages.every((m) => m.weight === undefined))).toBe(true);
    },
  );

  it(
    "weighCopyTurns on hand-built transcripts: a planner's calls after the first, the answer of an agent that " +
      'delegates nothing',
    () => {
      const t = {
        messages: [
          { role: 'user' as const, content: 'q', train: false },
          { role: 'assistant' as const, content: '<delegate>a</delegate>', train: true },
          { role: 'tool' as const, content: '<result>x</result>', train: false },
          { role: 'assistant' as const, content: '<delegate>b x</delegate>', train: true },
          { role: 'assistant' as const, content: '<answer>x</answer>', train: true },
        ],
      };
      expect(weighCopyTurns(t, 'planner', 2).messages.map((m) => m.weight)).toEqual([
        undefined,
        undefined,
        undefined,
        2,
        undefined,
      ]);
      // An agent that delegates nothing: its answer is weighted, searched or not.
      const guess = {
        messages: [t.messages[0], { role: 'assistant' as const, content: '<answer>y</answer>', train: true }],
      };
      expect(weighCopyTurns(guess, 'planner', 2).messages.map((m) => m.weight)).toEqual([undefined, 2]);
      expect(weighCopyTurns(t, 'planner', 1)).toBe(t);
    },
  );
});
