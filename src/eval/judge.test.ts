import { describe, it, expect } from 'vitest';
import type { Episode } from '../data/episode.ts';
import { answerJudgePrompt, judgeAccuracy, llmAnswerJudge } from './judge.ts';

const ep = (id: string, answers: string[]): Episode => ({ id, question: `q${id}`, answers, paragraphs: [] });

describe('LLM answer judge', () => {
  it('compares logp(yes) with logp(no) on the judge prompt', async () => {
    const prompts: string[] = [];
    // A scorer that prefers " yes" when the predicted line contains "Greyhithe".
    const judge = llmAnswerJudge({
      score: (prompt, cands) => {
        prompts.push(prompt);
        expect(cands).toEqual([' yes', ' no']);
        return Promise.resolve(/Predicted answer: .*Greyhithe/.test(prompt) ? [-0.1, -2.3] : [-2.3, -0.1]);
      },
    });
    const eps = [ep('a', ['Greyhithe']), ep('b', ['Lowmere']), ep('c', [])];
    const preds = [
      { id: 'a', answer: 'It is Greyhithe, the capital.', supportIdx: [], answerable: true },
      { id: 'b', answer: 'Saltings', supportIdx: [], answerable: true },
      { id: 'c', answer: 'x', supportIdx: [], answerable: true },
    ];
    const r = await judgeAccuracy(preds, eps, judge);
    expect(r).toEqual({ judge_accuracy: 0.5, items: [1, 0, null] });
    expect(prompts[0]).toBe(answerJudgePrompt('qa', 'It is Greyhithe, the capital.', ['Greyhithe']));
    expect(prompts).toHaveLength(2); // no gold, no call
  });
  it('an empty prediction is wrong without asking; a broken scorer is an error', async () => {
    let calls = 0;
    const judge = llmAnswerJudge({
      score: () => {
        calls += 1;
        return Promise.resolve([Number.NaN, 0]);
      },
    });
    expect(await judge('q', '  ', ['a'])).toBe(false);
    expect(calls).toBe(0);
    await expect(judge('q', 'a', ['a'])).rejects.toThrow('answer judge: scorer returned [null,0] for 2 candidates');
  });
});
