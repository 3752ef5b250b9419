import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fitBpeTokenizer, writeTokenizerFiles } from '../../tokenizer/fit.ts';
import { Tokenizer } from '../../tokenizer/tokenizer.ts';
import { renderPromptIds } from '../../tokenizer/chat-prompt.ts';
import type { Message, Trajectory } from '../../rollout/types.ts';
import {
  capLength,
  completionIds,
  pairSequences,
  trajectorySequences,
  transcriptSequences,
  type ChatEncoder,
} from './sequences.ts';

let dir: string;
let tok: Tokenizer;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sharp-seq-'));
  const corpus = [
    'Who founded Zorvex? Alin Marek founded it.',
    '<search>Zorvex founder</search> <answer>1950</answer>',
    'system user assistant tool',
  ];
  await writeTokenizerFiles(dir, fitBpeTokenizer(corpus, 300)); // ChatML template, <|im_end|> = EOS
  tok = await Tokenizer.load(dir);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Text of the ids where mask is 1 (or 0). */
const textWhere = (ids: number[], mask: number[], on: number) => tok.decode(ids.filter((_, i) => mask[i] === on));

describe('transcriptSequences', () => {
  const transcript = {
    messages: [
      { role: 'system' as const, content: 'Be brief.', train: false },
      { role: 'user' as const, content: 'Who founded Zorvex?', train: false },
      { role: 'assistant' as const, content: '<search>Zorvex founder</search>', train: true },
      { role: 'tool' as const, content: '<result>Alin Marek</result>', train: false },
      { role: 'assistant' as const, content: '<answer>Alin Marek</answer>', train: true },
    ],
  };

  it('packed (default): the whole transcript is one sequence, trained on its assistant turns only', () => {
    const seqs = transcriptSequences(transcript, tok);
    expect(seqs).toHaveLength(1);
    const [seq] = seqs;
    expect(tok.decode(seq.ids)).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWho founded Zorvex?<|im_end|>\n' +
        '<|im_start|>assistant\n<search>Zorvex founder</search><|im_end|>\n<|im_start|>tool\n<result>Alin ' +
        'Marek</result><|im_end|>\n<|im_start|>assistant\n<answer>Alin Marek</answer><|im_end|>\n',
    );
    expect(textWhere(seq.ids, seq.trainMask, 1)).toBe(
      '<search>Zorvex founder</search><|im_end|>\n<answer>Alin Marek</answer><|im_end|>\n',
    );
    // The same trained tokens as the unpacked sequences, each after the same context.
    const unpacked = transcriptSequences(transcript, tok, { pack: false });
    expect(seq.trainMask.reduce((a, b) => a + b, 0)).toBe(
      unpacked.reduce((a, u) => a + u.trainMask.reduce((x, y) => x + y, 0), 0),
    );
    expect(seq.ids.slice(0, unpacked[1].ids.length)).toEqual(unpacked[1].ids);
  });

  it('unpacked: one sequence per trained turn; only the turn (with its end-of-turn marker) is trained', () => {
    const seqs = transcriptSequences(transcript, tok, { pack: false });
    expect(seqs).toHaveLength(2);
    // ChatML: the prompt is every earlier message plus the generation prompt; the trained part is the
    // reply and '<|im_end|>\n' as the template closes a turn.
    expect(textWhere(seqs[0].ids, seqs[0].trainMask, 0)).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWho founded Zorvex?<|im_end|>\n' +
        '<|im_start|>assistant\n',
    );
    expect(textWhere(seqs[0].ids, seqs[0].trainMask, 1)).toBe('<search>Zorvex founder</search><|im_end|>\n');
    expect(textWhere(seqs[1].ids, seqs[1].trainMask, 1)).toBe('<answer>Alin Marek</answer><|im_end|>\n');
    expect(textWhere(seqs[1].ids, seqs[1].trainMask, 0)).toContain(
      '<|im_start|>tool\n<result>Alin Marek</result><|im_end|>\n<|im_start|>assistant\n',
    );
    expect(seqs[1].trainMask[0]).toBe(0);
  });

  it("a message's loss weight marks its tokens instead of 1, packed and unpacked", () => {
    const weighted = { messages: transcript.messages.map((m, k) => (k === 4 ? { ...m, weight: 3 } : m)) };
    const [seq] = transcriptSequences(weighted, tok);
    expect(textWhere(seq.ids, seq.trainMask, 3)).toBe('<answer>Alin Marek</answer><|im_end|>\n');
    expect(textWhere(seq.ids, seq.trainMask, 1)).toBe('<search>Zorvex founder</search><|im_end|>\n');
    const unpacked = transcriptSequences(weighted, tok, { pack: false });
    expect(textWhere(unpacked[1].ids, unpacked[1].trainMask, 3)).toBe('<answer>Alin Marek</answer><|im_end|>\n');
    expect(unpacked[0].trainMask.every((w) => w === 0 || w === 1)).toBe(true);
  });

  it('rejects train = true on a non-assistant message', () => {
    expect(() => transcriptSequences({ messages: [{ role: 'user', content: 'x', train: true }] }, tok)).toThrow(
      "transcript message 0 has train = true but role 'user'",
    );
  });
});

describe('trajectorySequences', () => {
  const msg = (index: number, agent: number, chatRole: Message['chatRole'], text: string): Message => {
    const tokenIds = chatRole === 'assistant' ? tok.encode(text, { addSpecialTokens: false }) : [];
    return {
      index,
      agent,
      role: agent === 0 ? 'planner' : 'worker',
      chatRole,
      text,
      tokenIds,
      logprobs: tokenIds.map((_, k) => -0.1 * (k + 1)),
      toolCalls: [],
    };
  };
  const makeTraj = (): Trajectory => ({
    id: 't1',
    episodeId: 'e1',
    sample: 0,
    messages: [
      msg(0, 0, 'system', 'Plan.'),
      msg(1, 0, 'user', 'Who founded Zorvex?'),
      msg(2, 0, 'assistant', '<delegate>Zorvex founder</delegate>'),
      msg(3, 1, 'system', 'Work.'),
      msg(4, 1, 'user', 'Zorvex founder'),
      msg(5, 1, 'assistant', '<answer>Alin Marek</answer>'),
      msg(6, 0, 'tool', '<result>Alin Marek</result>'),
      msg(7, 0, 'assistant', '<answer>Alin Marek</answer>'),
    ],
    agents: [
      { id: 0, role: 'planner', delegation: null, answer: 'Alin Marek', endReason: 'answer' },
      { id: 1, role: 'worker', delegation: 0, subtask: 'Zorvex founder', answer: 'Alin Marek', endReason: 'answer' },
    ],
    finalAnswer: 'Alin Marek',
  });

  it(
    'unpacked: each generated turn in its agent context (as the policy rendered it), with tokens, logprobs, ' +
      'advantage',
    () => {
      const traj = makeTraj();
      const seqs = trajectorySequences(traj, [0.5, -1.25], tok, { pack: false });
      expect(seqs.map((s) => [s.source.message, s.source.agent, s.adv])).toEqual([
        [2, 0, 0.5],
        [5, 1, -1.25],
        [7, 0, 0.5],
      ]);
      const last = seqs[2];
      // The prompt is exactly what the LM policy renders for the planner's third turn (its own messages only).
      const prompt = renderPromptIds(tok, [
        { role: 'system', content: 'Plan.' },
        { role: 'user', content: 'Who founded Zorvex?' },
        { role: 'assistant', content: '<delegate>Zorvex founder</delegate>' },
        { role: 'tool', content: '<result>Alin Marek</result>' },
      ]);
      expect(last.ids).toEqual([...prompt, ...traj.messages[7].tokenIds]);
      expect(last.trainMask).toEqual([...prompt.map(() => 0), ...traj.messages[7].tokenIds.map(() => 1)]);
      expect(last.sampleLogp.slice(prompt.length)).toEqual(traj.messages[7].logprobs);
      expect(textWhere(seqs[1].ids, seqs[1].trainMask, 0)).not.toContain('Plan.'); // the worker never saw the planner
    },
  );

  it("packed (default): an agent's turns share one sequence when each turn's prompt extends the previous turn", () => {
    const traj = makeTraj();
    const [planner, worker, ...rest] = trajectorySequences(traj, [0.5, -1.25], tok);
    expect(rest).toEqual([]);
    expect(worker?.source.agent).toBe(1);
    // The packed planner sequence is the last turn's exact prompt plus its tokens; both turns are trained.
    const unpacked = trajectorySequences(traj, [0.5, -1.25], tok, { pack: false })[2];
    expect(planner?.ids).toEqual(unpacked?.ids);
    expect(textWhere(planner?.ids ?? [], planner?.trainMask ?? [], 1)).toBe(
      '<delegate>Zorvex founder</delegate><answer>Alin Marek</answer>',
    );
    // The gap between the turns (end of turn, tool result, new generation prompt) is not trained.
    expect(textWhere(planner?.ids ?? [], planner?.trainMask ?? [], 0)).toContain(
      '<|im_end|>\n<|im_start|>tool\n<result>Alin Marek</result>',
    );
    const firstTurn = traj.messages[2].logprobs;
    const lp = planner?.sampleLogp ?? [];
    expect(lp.filter((_, i) => planner?.trainMask[i] === 1)).toEqual([...firstTurn, ...traj.messages[7].logprobs]);
  });

  it('starts a new sequence when a prompt does not extend the previous turn', () => {
    // A template that numbers turns rewrites history: turn 2's prompt does not start with turn 1's sequence.
    let calls = 0;
    const rewriting = {
      encodeChat: (m: readonly { content: string }[]) => [++calls, ...m.flatMap((x) => [x.content.length])],
    };
    const seqs = trajectorySequences(makeTraj(), [0.5, -1.25], rewriting);
    expect(seqs).toHaveLength(3);
  });

  it("messageAdv: each turn's tokens carry their message's advantage, packed or not", () => {
    const traj = makeTraj();
    const messageAdv = new Map([
      [2, 0.75],
      [7, 0.25],
    ]); // planner turns; the worker's message 5 has none
    const [planner, worker] = trajectorySequences(traj, [0.5, -1.25], tok, { messageAdv });
    const trained = (s: typeof planner) => (s?.tokenAdv ?? []).filter((_, i) => s?.trainMask[i] === 1);
    expect(trained(planner)).toEqual([
      ...traj.messages[2].tokenIds.map(() => 0.75),
      ...traj.messages[7].tokenIds.map(() => 0.25),
    ]);
    expect(planner?.tokenAdv?.length).toBe(planner?.ids.length);
    expect((planner?.tokenAdv ?? []).filter((_, i) => planner?.trainMask[i] === 0).every((x) => x === 0)).toBe(true);
    expect(trained(worker)).toEqual(traj.messages[5].tokenIds.map(() => -1.25)); // falls back to the agent's
    expect(planner?.adv).toBe(0.5);
    const unpacked = trajectorySequences(traj, [0.5, -1.25], tok, { pack: false, messageAdv });
    expect(unpacked.map((s) => new Set(trained(s)))).toEqual([new Set([0.75]), new Set([-1.25]), new Set([0.25])]);
    expect(trajectorySequences(traj, [0.5, -1.25], tok)[0]?.tokenAdv).toBeUndefined();
  });

  it('names a missing advantage', () => {
    expect(() => trajectorySequences(makeTraj(), [0.5], tok)).toThrow('trajectory t1 has no advantage for agent 1');
  });
});

describe('pairSequences and completionIds', () => {
  it('builds chosen and rejected over the same prompt', () => {
    const p = pairSequences(
      {
        prefix: [{ role: 'user', content: 'Who founded Zorvex?' }],
        chosen: '<answer>Alin Marek</answer>',
        rejected: '<answer>1950</answer>',
        metadata: {
          trajectoryId: 't',
          episodeId: 'e',
          messageIndex: 1,
          agent: 0,
          role: 'planner',
          judge: 'rule',
          attempts: 1,
        },
      },
      tok,
    );
    const promptLen = p.chosen.trainMask.indexOf(1);
    expect(p.rejected.ids.slice(0, promptLen)).toEqual(p.chosen.ids.slice(0, promptLen));
    expect(textWhere(p.rejected.ids, p.rejected.trainMask, 1)).toBe('<answer>1950</answer><|im_end|>\n');
  });

  it('fails in one line on a template whose finished turn does not extend the generation prompt', () => {
    const odd: ChatEncoder = { encodeChat: (_m, o) => (o.addGenerationPrompt ? [1, 2, 3] : [1, 9, 3, 4]) };
    expect(() => completionIds(odd, [], 'x')).toThrow('does not start with its generation prompt');
  });

  it('caps lengths', () => {
    const { kept, dropped } = capLength(
      [
        { ids: [1, 2, 3], trainMask: [0, 1, 1] },
        { ids: [1, 2], trainMask: [0, 1] },
      ],
      2,
    );
    expect([kept.length, dropped]).toEqual([1, 1]);
  });
});
