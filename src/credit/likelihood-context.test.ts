import { describe, expect, it } from 'vitest';
import { getProtocol } from '../rollout/protocol/index.ts';
import { makeTrajectory } from '../../test/credit-fixtures.ts';
import { answerOpener, likelihoodContext } from './likelihood-context.ts';

const tags = getProtocol('tags');
const traj = makeTrajectory({
  id: 't',
  workers: [
    { subtask: 'who founded X', answer: 'Ann' },
    { subtask: 'where was Ann born', answer: 'Paris' },
  ],
  finalAnswer: 'Paris',
});
const texts = (ms: { content: string }[]): string[] => ms.map((m) => m.content);

describe('likelihood contexts', () => {
  it("the final-answer turn: every planner message before its answer, the masked report as the placeholder's result", () => {
    expect(answerOpener(tags)).toBe('<answer>');
    const full = likelihoodContext(traj, tags, '[no report]', { masked: [] });
    expect(full.opener).toBe('<answer>');
    expect(texts(full.messages)).toEqual([
      'You are the planner.',
      'question',
      '<delegate>who founded X</delegate>',
      '<result>Ann</result>',
      '<delegate>where was Ann born</delegate>',
      '<result>Paris</result>',
    ]);
    const masked = likelihoodContext(traj, tags, '[no report]', { masked: [1] });
    expect(texts(masked.messages)).toEqual([
      'You are the planner.',
      'question',
      '<delegate>who founded X</delegate>',
      '<result>Ann</result>',
      '<delegate>where was Ann born</delegate>',
      '<result>[no report]</result>',
    ]);
    expect(masked.messages[5]?.role).toBe(full.messages[5]?.role);
  });

  it('the sequential cut points: just before report j is shown, and after the last one', () => {
    const at = (j: number): string[] =>
      texts(likelihoodContext(traj, tags, '[no report]', { masked: [], readThrough: j }).messages);
    expect(at(0)).toEqual(['You are the planner.', 'question', '<delegate>who founded X</delegate>']);
    expect(at(1)).toEqual([
      'You are the planner.',
      'question',
      '<delegate>who founded X</delegate>',
      '<result>Ann</result>',
      '<delegate>where was Ann born</delegate>',
    ]);
    expect(at(2)).toHaveLength(6);
    expect(() => likelihoodContext(traj, tags, 'x', { masked: [], readThrough: 3 })).toThrow(/outside \[0, 2\]/);
    expect(() => likelihoodContext(traj, tags, 'x', { masked: [2] })).toThrow(/masked delegation 2 does not exist/);
  });

  it('a report the planner never read (stopped by a limit while its worker ran): masking it changes nothing', () => {
    const stopped = makeTrajectory({
      id: 'w',
      workers: [
        { subtask: 'a', answer: 'x' },
        { subtask: 'b', answer: 'y' },
      ],
      finalAnswer: null,
    });
    // The engine shows no result once the planner is stopped: drop the second report and the last turn.
    stopped.messages = stopped.messages.filter(
      (m) => !(m.agent === 0 && (m.text === '<result>y</result>' || m.text === 'I am not sure.')),
    );
    const full = texts(likelihoodContext(stopped, tags, 'P', { masked: [] }).messages);
    expect(texts(likelihoodContext(stopped, tags, 'P', { masked: [1] }).messages)).toEqual(full);
    expect(full.at(-1)).toBe('<delegate>b</delegate>');
    const at = (j: number): string[] =>
      texts(likelihoodContext(stopped, tags, 'P', { masked: [], readThrough: j }).messages);
    // Report 1 is read nowhere: before it and after every report are the same context, so its gain is 0.
    expect(at(1)).toEqual(full);
    expect(at(2)).toEqual(full);
    expect(at(0)).toEqual(full.slice(0, 3));
  });

  it('a planner that never answered is asked after its whole conversation; an invalid delegation is no report', () => {
    const open = makeTrajectory({ id: 'u', workers: [{ subtask: 's', answer: 'a' }], finalAnswer: null });
    expect(texts(likelihoodContext(open, tags, 'x', { masked: [] }).messages).at(-1)).toBe('I am not sure.');
    const invalid = makeTrajectory({
      id: 'v',
      workers: [
        { subtask: 'bad', answer: 'err' },
        { subtask: 'good', answer: 'b' },
      ],
      delegateValid: [false, true],
      finalAnswer: 'b',
    });
    // The invalid call's result is shown but is no delegation's report: delegation 0 is the second call.
    const ctx = likelihoodContext(invalid, tags, '[no report]', { masked: [0] });
    expect(texts(ctx.messages).slice(3)).toEqual([
      '<result>err</result>',
      '<delegate>good</delegate>',
      '<result>[no report]</result>',
    ]);
  });
});
