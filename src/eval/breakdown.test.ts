import { describe, expect, it } from 'vitest';
import { successFunction } from '../credit/success.ts';
import type { Episode } from '../data/episode.ts';
import type { AgentRecord, Message, ToolCall, Trajectory } from '../rollout/types.ts';
import { formatRate, goldHopQuestions, matchHop, stageBreakdown, wilsonInterval } from './breakdown.ts';

const episode: Episode = {
  id: 'e1',
  question: 'In which country was the founder of Zorvex Labs born?',
  answers: ['Kelmar'],
  paragraphs: [],
  decomposition: [
    { id: 1, question: 'Who founded Zorvex Labs?', answer: 'Alin Marek', paragraphSupportIdx: 3 },
    { id: 2, question: 'In which country was #1 born?', answer: 'Kelmar', paragraphSupportIdx: 7 },
  ],
};
const episodes = new Map([[episode.id, episode]]);
const em = successFunction('em', { f1Threshold: 0.5 });

/** A worker that searched (returning `idx`) and reported `answer` for `subtask`. */
interface W {
  subtask: string;
  answer: string | null;
  idx?: number[];
  invalid?: boolean;
}

function traj(id: string, finalAnswer: string | null, workers: W[]): Trajectory {
  const agents: AgentRecord[] = [
    { id: 0, role: 'planner', delegation: null, answer: finalAnswer, endReason: 'answer' },
  ];
  const messages: Message[] = [];
  const msg = (agent: number, toolCalls: ToolCall[]): void => {
    messages.push({
      index: messages.length,
      agent,
      role: agent === 0 ? 'planner' : 'worker',
      chatRole: 'assistant',
      text: '',
      tokenIds: [],
      logprobs: [],
      toolCalls,
    });
  };
  workers.forEach((w, i) => {
    agents.push({
      id: i + 1,
      role: 'worker',
      delegation: i,
      subtask: w.subtask,
      answer: w.answer,
      endReason: 'answer',
    });
    msg(0, [{ name: 'delegate', args: w.subtask, valid: true, workerAgent: i + 1 }]);
    if (w.idx) msg(i + 1, [{ name: 'search', args: w.subtask, valid: true, retrievedIdx: w.idx }]);
    if (w.invalid) msg(i + 1, [{ name: 'calculate', args: '1 +', valid: false, error: 'parse' }]);
  });
  return { id, episodeId: episode.id, sample: 0, messages, agents, finalAnswer };
}

describe('stageBreakdown', () => {
  it('gold hop questions are filled with gold answers and normalised', () => {
    expect(goldHopQuestions(episode.decomposition ?? [])).toEqual([
      'who founded zorvex labs',
      'in which country was alin marek born',
    ]);
    expect(
      matchHop({ subtask: 'In which country was Alin Marek born?' }, goldHopQuestions(episode.decomposition ?? [])),
    ).toBe(1);
    expect(
      matchHop({ subtask: 'In which country was Bo Tan born?' }, goldHopQuestions(episode.decomposition ?? [])),
    ).toBe(-1);
  });

  it('counts each stage on hand-built trajectories', () => {
    const ts = [
      // Perfect: both hops asked, retrieved, reported; final correct.
      traj('a', 'Kelmar', [
        { subtask: 'Who founded Zorvex Labs?', answer: 'Alin Marek', idx: [3, 1] },
        { subtask: 'In which country was Alin Marek born?', answer: 'Kelmar', idx: [7] },
      ]),
      // Worker 1 answered without searching, wrongly; hop 2 then asked about the wrong person.
      traj('b', 'Vask', [
        { subtask: 'Who founded Zorvex Labs?', answer: 'Bo Tan' },
        { subtask: 'In which country was Bo Tan born?', answer: 'Vask', idx: [2] },
      ]),
      // Both reports right but the planner answered wrongly; an extra irrelevant worker with an invalid call.
      traj('c', 'Alin Marek', [
        { subtask: 'Who founded Zorvex Labs?', answer: 'Alin Marek', idx: [0, 3] },
        { subtask: 'Which paragraph describes the weather?', answer: 'unknown', invalid: true },
        { subtask: 'In which country was Alin Marek born?', answer: 'Kelmar', idx: [5, 6] },
      ]),
    ];
    const b = stageBreakdown(ts, episodes, em);
    expect(b.accuracy).toEqual({ num: 1, den: 3, rate: 1 / 3 });
    // Hops asked: a 2/2, b 1/2, c 2/2.
    expect(b.subQuestion).toEqual({ num: 5, den: 6, rate: 5 / 6 });
    expect(b.subQuestionByHop.map((r) => r.rate)).toEqual([1, 2 / 3]);
    // Matched fact-hop workers: a1 (3 retrieved), a2 (7), b1 (no search), c1 (3), c3 (7 not in [5, 6]).
    expect(b.retrieval).toEqual({ num: 3, den: 5, rate: 3 / 5 });
    // Reports of the matched workers: a1, a2, c1, c3 right; b1 wrong.
    expect(b.report).toEqual({ num: 4, den: 5, rate: 4 / 5 });
    // Every hop reported correctly in a and c; only a's final answer is right.
    expect(b.finalGivenReports).toEqual({ num: 1, den: 2, rate: 1 / 2 });
    // Tool calls: a 2 delegate + 2 search, b 2 + 1, c 3 delegate + 2 search + 1 invalid = 13.
    expect(b.invalidCalls).toEqual({ num: 1, den: 13, rate: 1 / 13 });
    expect(b.offPlan).toEqual({ num: 2, den: 7, rate: 2 / 7 });
  });

  it('counts no sub-question stage for an agent system that cannot delegate', () => {
    // A lone agent: no workers, one search, the right answer.
    const lone = traj('s', 'Kelmar', []);
    const multi = stageBreakdown([lone], episodes, em);
    expect(multi.subQuestion).toEqual({ num: 0, den: 2, rate: 0 });
    const single = stageBreakdown([lone], episodes, em, { agents: 'single' });
    expect(single.accuracy).toEqual({ num: 1, den: 1, rate: 1 });
    expect(single.subQuestion).toEqual({ num: 0, den: 0, rate: null });
    expect(single.subQuestionByHop).toEqual([]);
    expect(single.finalGivenReports.rate).toBeNull();
  });

  it('refuses a trajectory of an unknown episode', () => {
    expect(() => stageBreakdown([{ ...traj('x', null, []), episodeId: 'nope' }], episodes, em)).toThrow(
      'unknown episode nope',
    );
  });
});

describe('wilsonInterval', () => {
  it('matches hand-computed values', () => {
    // p = 0.5, n = 100: centre 0.5, half = 1.96 * sqrt(0.0025 + 0.000096) / 1.0384 = 0.09614.
    const [lo, hi] = wilsonInterval(50, 100);
    expect(lo).toBeCloseTo(0.4038, 4);
    expect(hi).toBeCloseTo(0.5962, 4);
    // 0 of 10: [0, z^2 / (n + z^2)] = [0, 3.8415 / 13.8415].
    expect(wilsonInterval(0, 10)[0]).toBe(0);
    expect(wilsonInterval(0, 10)[1]).toBeCloseTo(0.27753, 4);
    expect(formatRate({ num: 50, den: 100, rate: 0.5 })).toBe('0.50 [0.40, 0.60] (n = 100)');
  });
});
