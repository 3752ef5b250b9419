import { describe, it, expect } from 'vitest';
import type { Episode } from '../../data/episode.ts';
import { TrajectoryBuilder } from '../../rollout/record.ts';
import type { AgentRecord, ToolCall, Trajectory } from '../../rollout/types.ts';
import { answeringAgents, citedIdx, predictionOf } from './prediction.ts';

const episode: Episode = {
  id: '2hop__1_2',
  question: 'Where was the founder of Acme born?',
  answers: ['Thornwick'],
  paragraphs: [
    { idx: 0, title: 'Ilsa Marrow', text: 'Ilsa Marrow was born in Thornwick.' },
    { idx: 1, title: 'Acme', text: 'Acme was founded by Ilsa Marrow.' },
    { idx: 2, title: 'Ezra Kindle', text: 'Ezra Kindle was born in Quillon.' },
    { idx: 3, title: 'Cold Looms', text: 'Cold Looms is a book by Ilsa Marrow.' },
  ],
};

/** One assistant message of `agent` carrying `calls`. */
function say(b: TrajectoryBuilder, agent: AgentRecord, text: string, calls: ToolCall[]): void {
  b.addAssistant(agent, { text, tokenIds: [], logprobs: [], finishReason: 'stop' }).toolCalls.push(...calls);
}

const search = (retrievedIdx: number[], valid = true): ToolCall => ({ name: 'search', args: 'q', valid, retrievedIdx });

/**
 * Planner with three delegations: worker 1 answers "Ilsa Marrow" after retrieving [1, 3] then [0];
 * worker 2 answers "Thornwick" after retrieving [2, 0]; worker 3 ran but its report was masked.
 */
function multiTrajectory(): Trajectory {
  const b = new TrajectoryBuilder('t', episode.id, 0);
  const planner = b.addAgent('planner', null);
  const w1 = b.addAgent('worker', 0, 'Who founded Acme?');
  say(b, w1, '<search>Acme</search>', [search([1, 3])]);
  say(b, w1, '<search>Ilsa</search>', [search([0])]);
  w1.answer = 'Ilsa Marrow';
  const w2 = b.addAgent('worker', 1, 'Where was Ilsa Marrow born?');
  say(b, w2, '<search>born</search>', [search([2, 0]), search([1], false)]);
  w2.answer = 'Thornwick';
  const w3 = b.addAgent('worker', 2, 'x');
  say(b, w3, '<search>x</search>', [search([3])]);
  w3.answer = 'Cold Looms';
  say(b, planner, '<delegate>a</delegate>', [{ name: 'delegate', args: 'a', valid: true, workerAgent: w1.id }]);
  say(b, planner, '<delegate>b</delegate>', [{ name: 'delegate', args: 'b', valid: true, workerAgent: w2.id }]);
  say(b, planner, '<delegate>c</delegate>', [
    { name: 'delegate', args: 'c', valid: true, workerAgent: w3.id, masked: true },
  ]);
  b.traj.finalAnswer = ' Thornwick ';
  return b.traj;
}

describe('predictionOf', () => {
  it('counts only workers whose report reached the planner', () => {
    expect(answeringAgents(multiTrajectory()).map((a) => a.id)).toEqual([1, 2]);
  });

  it('cites the retrieved paragraphs that state each worker answer', () => {
    const t = multiTrajectory();
    // Worker 1 ("Ilsa Marrow") retrieved 1, 3, 0: all three mention Ilsa Marrow.
    expect(citedIdx(t, t.agents[1], episode)).toEqual([1, 3, 0]);
    // Worker 2 ("Thornwick") retrieved 2 and 0 (its invalid search does not count): only 0 says Thornwick.
    expect(citedIdx(t, t.agents[2], episode)).toEqual([0]);
    // Union, sorted; the masked worker 3 adds nothing; the answer is trimmed. Retrieved: every valid
    // search of any agent (the masked worker's too), in first-retrieved order.
    expect(predictionOf(t, episode)).toEqual({
      id: episode.id,
      answer: 'Thornwick',
      supportIdx: [0, 1, 3],
      answerable: true,
      retrievedIdx: [1, 3, 0, 2],
    });
  });

  it('falls back to the top result of the last search when no paragraph states the answer', () => {
    const b = new TrajectoryBuilder('s', episode.id, 0);
    const root = b.addAgent('planner', null);
    say(b, root, '<search>a</search>', [search([3, 1])]);
    say(b, root, '<search>b</search>', [search([2, 1])]);
    root.answer = '1958';
    b.traj.finalAnswer = '1958';
    // Single-agent trajectory: the root's own searches; nothing states "1958", last search's top is 2.
    expect(predictionOf(b.traj, episode)).toEqual({
      id: episode.id,
      answer: '1958',
      supportIdx: [2],
      answerable: true,
      retrievedIdx: [3, 1, 2],
    });
  });

  it('an agent that never answered gives an empty, unanswerable prediction', () => {
    const b = new TrajectoryBuilder('n', episode.id, 0);
    const root = b.addAgent('planner', null);
    say(b, root, '<search>a</search>', [search([0])]);
    expect(predictionOf(b.traj, episode)).toEqual({
      id: episode.id,
      answer: '',
      supportIdx: [],
      answerable: false,
      retrievedIdx: [0],
    });
  });

  it('rejects a trajectory of another episode', () => {
    const t = multiTrajectory();
    expect(() => predictionOf(t, { ...episode, id: 'other' })).toThrow(/is for episode 2hop__1_2, not other/);
  });
});
