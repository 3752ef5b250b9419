import { describe, it, expect } from 'vitest';
import type { Episode } from '../../data/episode.ts';
import { getProtocol } from '../../rollout/protocol/index.ts';
import { makeTrajectory } from '../../../test/credit-fixtures.ts';
import { createJudge, protocolAnswer, protocolDelegation } from './index.ts';
import { locateFirstError } from '../first-error.ts';
import { llmJudge } from './llm.ts';
import { assignHop, hopNames, resolveHopQuestion, ruleJudge } from './rule.ts';

const episode: Episode = {
  id: 'ep',
  question: 'Where was the founder of Acme born?',
  answers: ['Lyon', 'Lyon, France'],
  paragraphs: [],
  decomposition: [
    { id: 1, question: 'Who founded Acme?', answer: 'Ada Byron', paragraphSupportIdx: 0 },
    { id: 2, question: 'Where was #1 born?', answer: 'Lyon', paragraphSupportIdx: 1 },
  ],
};
const parseAnswer = protocolAnswer(getProtocol('tags'));

describe('rule judge', () => {
  it('resolves #k and assigns subtasks to hops by token F1', () => {
    expect(resolveHopQuestion(episode.decomposition ?? [], 1)).toBe('Where was Ada Byron born?');
    const hops = episode.decomposition ?? [];
    expect(assignHop('who founded acme', hops, 0.5)).toBe(0);
    // "where was ada byron born" vs "where was ada born": P 1, R 4/5 -> F1 8/9
    expect(assignHop('Where was Ada born?', hops, 0.5)).toBe(1);
    expect(assignHop('What is the capital of Peru?', hops, 0.5)).toBeNull();
  });
  it('labels right reports +1, wrong -1, irrelevant 0, and the final answer', async () => {
    const traj = makeTrajectory({
      id: 't',
      workers: [
        { subtask: 'Who founded Acme?', answer: 'ada byron' },
        { subtask: 'What is the capital of Peru?', answer: 'Lima' },
        { subtask: 'Where was Ada Byron born?', answer: 'Paris' },
      ],
      finalAnswer: 'Paris',
    });
    const judge = ruleJudge({ parseAnswer });
    const labels = await judge.labelMessages({ traj, episode });
    const reportOf = (agent: number): number =>
      traj.messages.filter((m) => m.agent === agent && m.chatRole === 'assistant').at(-1)?.index ?? -1;
    expect(labels.get(reportOf(1))).toBe(1);
    expect(labels.has(reportOf(2))).toBe(false); // a report of no hop is not judged
    expect(labels.get(reportOf(3))).toBe(-1);
    expect(labels.get(reportOf(0))).toBe(-1); // final answer Paris, gold Lyon
    // The two delegations of a hop name its entity (+1); the irrelevant one and the searches are not judged.
    const delegationOf = (subtask: string): number =>
      traj.messages.find((m) => m.text === `<delegate>${subtask}</delegate>`)?.index ?? -1;
    expect(labels.get(delegationOf('Who founded Acme?'))).toBe(1);
    expect(labels.get(delegationOf('Where was Ada Byron born?'))).toBe(1);
    expect(labels.has(delegationOf('What is the capital of Peru?'))).toBe(false);
    expect(labels.size).toBe(5);
    // prefix fails exactly from the wrong report on
    expect(await judge.prefixFailed({ traj, episode }, reportOf(3) - 1)).toBe(false);
    expect(await judge.prefixFailed({ traj, episode }, reportOf(3))).toBe(true);
    // alternatives: judged as answers to the same hop; non-answers are not accepted
    expect(await judge.acceptsAlternative({ traj, episode }, reportOf(3), '<answer>Lyon</answer>')).toBe(true);
    expect(await judge.acceptsAlternative({ traj, episode }, reportOf(3), '<search>Lyon</search>')).toBe(false);
    expect(await judge.acceptsAlternative({ traj, episode }, reportOf(0), '<answer>lyon, france</answer>')).toBe(true);
    await expect(judge.prefixFailed({ traj, episode }, 999)).rejects.toThrow(/prefix end 999 outside messages/);
  });
  it("names each hop's entities: referenced gold answers and capitalised words after the first", () => {
    const hops = episode.decomposition ?? [];
    expect([...hopNames(hops, 0)]).toEqual(['acme']);
    expect([...hopNames(hops, 1)]).toEqual(['ada', 'byron']);
  });
  it('a delegation about the wrong entity is the first error; an alternative must name the right one', async () => {
    // The planner carries the question's entity into hop 2 instead of hop 1's answer.
    const traj = makeTrajectory({
      id: 't',
      workers: [
        { subtask: 'Who founded Acme?', answer: 'Ada Byron' },
        { subtask: 'Where was Acme born?', answer: 'Paris' },
      ],
      finalAnswer: 'Paris',
    });
    const judge = ruleJudge({ parseAnswer, parseDelegation: protocolDelegation(getProtocol('tags')) });
    const ctx = { traj, episode };
    const wrong = traj.messages.find((m) => m.text === '<delegate>Where was Acme born?</delegate>')?.index ?? -1;
    const labels = await judge.labelMessages(ctx);
    expect(labels.get(wrong)).toBe(-1);
    expect(await judge.prefixFailed(ctx, wrong - 1)).toBe(false);
    expect(await judge.prefixFailed(ctx, wrong)).toBe(true);
    expect((await locateFirstError(ctx, judge)).index).toBe(wrong);
    expect(await judge.acceptsAlternative(ctx, wrong, '<delegate>Where was Ada Byron born?</delegate>')).toBe(true);
    // "where was ada byron born" as gold: the original has F1 2/3; a paraphrase must beat it.
    expect(await judge.acceptsAlternative(ctx, wrong, '<delegate>Where was Ada Byron born, exactly?</delegate>')).toBe(
      true,
    ); // F1 10/11
    expect(await judge.acceptsAlternative(ctx, wrong, '<delegate>In which city did Ada Byron live?</delegate>')).toBe(
      false,
    ); // F1 1/3
    expect(await judge.acceptsAlternative(ctx, wrong, '<delegate>Where was Ada born?</delegate>')).toBe(false);
    expect(await judge.acceptsAlternative(ctx, wrong, '<answer>Lyon</answer>')).toBe(false);
    // Without a delegation parser no alternative delegation is accepted.
    expect(
      await ruleJudge({ parseAnswer }).acceptsAlternative(ctx, wrong, '<delegate>Where was Ada Byron born?</delegate>'),
    ).toBe(false);
  });
  it('a planner that never answered fails at its last message; episodes need a decomposition', async () => {
    const traj = makeTrajectory({
      id: 't',
      workers: [{ subtask: 'Who founded Acme?', answer: 'Ada Byron' }],
      finalAnswer: null,
    });
    const judge = ruleJudge({ parseAnswer });
    const last = traj.messages.length - 1;
    expect(await judge.prefixFailed({ traj, episode }, last - 1)).toBe(false);
    expect(await judge.prefixFailed({ traj, episode }, last)).toBe(true);
    await expect(judge.labelMessages({ traj, episode: { ...episode, decomposition: undefined } })).rejects.toThrow(
      /episode ep has no question_decomposition/,
    );
  });
});

describe('LLM judge', () => {
  // A scorer over a known rule stands in for the model here (the judge is what is tested: the
  // question it asks, and how it turns two logprobs into a verdict).
  const prompts: string[] = [];
  const score = (prompt: string, candidates: readonly string[]): Promise<number[]> => {
    prompts.push(prompt);
    expect(candidates).toEqual([' yes', ' no']);
    const transcript = prompt.slice(prompt.indexOf('Transcript:'));
    const wrong = transcript.includes('Paris');
    if (prompt.includes('Has any message above made an error'))
      return Promise.resolve(wrong ? [-0.1, -2.5] : [-3, -0.05]);
    // message question: is the LAST message fine?
    const last =
      transcript
        .split('\n')
        .filter((l) => l.startsWith('['))
        .at(-1) ?? '';
    return Promise.resolve(
      last.includes('Paris') ? [-2, -0.2] : last.includes('<answer>') ? [-0.2, -2] : [-0.7, -0.69],
    );
  };
  const traj = makeTrajectory({
    id: 't',
    workers: [
      { subtask: 'Who founded Acme?', answer: 'Ada Byron' },
      { subtask: 'Where was Ada Byron born?', answer: 'Paris' },
    ],
    finalAnswer: 'Paris',
  });
  it('prefix verdict compares logp(yes) and logp(no); gold and question are in the prompt', async () => {
    const judge = llmJudge({ score });
    const wrongReport = traj.messages.find((m) => m.text === '<answer>Paris</answer>')?.index ?? -1;
    expect(await judge.prefixFailed({ traj, episode }, wrongReport - 1)).toBe(false);
    expect(await judge.prefixFailed({ traj, episode }, wrongReport)).toBe(true);
    expect(prompts.at(-1)).toContain('Question: Where was the founder of Acme born?');
    expect(prompts.at(-1)).toContain('Correct final answer: Lyon');
  });
  it('labels with a margin: |diff| under the margin is 0', async () => {
    const judge = llmJudge({ score, margin: 0.5 });
    const labels = await judge.labelMessages({ traj, episode });
    const byText = (t: string): number | undefined => labels.get(traj.messages.find((m) => m.text === t)?.index ?? -1);
    expect(byText('<answer>Ada Byron</answer>')).toBe(1); // diff +1.8
    expect(byText('<answer>Paris</answer>')).toBe(-1); // diff -1.8
    expect(byText('<search>Who founded Acme?</search>')).toBe(0); // diff -0.01, inside the margin
    expect(
      await judge.acceptsAlternative(
        { traj, episode },
        traj.messages.find((m) => m.text === '<answer>Paris</answer>')?.index ?? -1,
        '<answer>Lyon</answer>',
      ),
    ).toBe(true);
  });
  it('rejects a malformed scorer result; createJudge needs a scorer for llm', async () => {
    const judge = llmJudge({ score: () => Promise.resolve([Number.NaN, 0]) });
    await expect(judge.prefixFailed({ traj, episode }, 3)).rejects.toThrow(
      /scorer returned \[null,0\] for 2 candidates/,
    );
    expect(() =>
      createJudge({ judge: 'llm', hopMatchF1: 0.5, judgeMargin: 0 }, { protocol: getProtocol('tags') }),
    ).toThrow(/credit.judge=llm needs a model scorer/);
    expect(
      createJudge({ judge: 'rule', hopMatchF1: 0.5, judgeMargin: 0 }, { protocol: getProtocol('tags') }).name,
    ).toBe('rule');
  });
});
