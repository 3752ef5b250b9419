import { resolve } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { creditSection } from '../config/sections/credit.ts';
import type { Episode } from '../data/episode.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { tokenLogprobs } from '../model/logprobs.ts';
import { getProtocol } from '../rollout/protocol/index.ts';
import { roleSpecs } from '../rollout/protocol/tool-specs.ts';
import { cachedPromptIds } from '../rollout/prompt-cache.ts';
import type { Trajectory } from '../rollout/types.ts';
import { Tokenizer } from '../tokenizer/tokenizer.ts';
import { makeTrajectory } from '../../test/credit-fixtures.ts';
import { computeCredits } from './compute.ts';
import { likelihoodContext } from './likelihood-context.ts';
import {
  checkGoldAnswerTokens,
  goldAnswerIds,
  lmLikelihoodScorer,
  type LikelihoodScorer,
} from './likelihood-scorer.ts';

/**
 * The likelihood value on the shipped starting policy of the parallel world (models/sharp-tiny-sft-parallel), which
 * learnt from the scripted expert to answer with what its workers report. Trajectories are hand-built in the tags
 * protocol with the role prompts the policy was trained on.
 */
const MODEL = resolve(import.meta.dirname, '../../models/sharp-tiny-sft-parallel');
const tags = getProtocol('tags');
const placeholder = '[no report]';
const plannerPrompt =
  'You are the planner. Delegate single-hop subtasks, independent ones together, then give the final answer.';

const episode: Episode = {
  id: 'ep',
  question: 'What is the official language of the country where Trirailk is located?',
  answers: ['Zhoskaic'],
  paragraphs: [],
};

/** A two-hop chain: where Trirailk is, then that country's language; `second` is the language report. */
function chain(id: string, second: string): Trajectory {
  const t = makeTrajectory({
    id,
    workers: [
      { subtask: 'In which country is Trirailk located?', answer: 'Draizourv' },
      { subtask: 'What is the official language of Draizourv?', answer: second },
    ],
    finalAnswer: second,
  });
  t.messages[0]!.text = tags.systemPrompt(plannerPrompt, roleSpecs('planner'), 2);
  t.messages[1]!.text = episode.question;
  return t;
}

describe('the likelihood value over a causal LM', () => {
  let model: CausalLM;
  let tok: Tokenizer;
  let score: LikelihoodScorer;
  beforeAll(async () => {
    await initBackend('wasm');
    model = await CausalLM.load(MODEL);
    tok = await Tokenizer.load(MODEL);
    score = lmLikelihoodScorer(model, tok, { protocol: tags, placeholder });
  });
  afterAll(() => model?.dispose());

  it('v_lik is the mean of the gold tokens log-probs computed directly by a full forward pass', async () => {
    const t = chain('a', 'Zhoskaic');
    const ctx = likelihoodContext(t, tags, placeholder, { masked: [1] });
    const prompt = [...cachedPromptIds(tok, ctx.messages), ...tok.encode('<answer>', { addSpecialTokens: false })];
    const gold = tok.encode('Zhoskaic', { addSpecialTokens: false });
    const ids = [...prompt, ...gold];
    const lp = tf.tidy(() =>
      tokenLogprobs(model, tf.tensor2d([ids], [1, ids.length], 'int32'), tf.ones([1, ids.length], 'int32')),
    ); // [1, T-1]
    const row = (lp.arraySync() as number[][])[0]!;
    lp.dispose();
    // Gold token j sits at position p + j and is predicted at row index p + j - 1.
    const direct = gold.reduce((s, _, j) => s + row[prompt.length + j - 1]!, 0) / gold.length;
    const before = tf.memory().numTensors;
    const [v] = await score([{ traj: t, episode, point: { masked: [1] } }]);
    expect(v).toBeCloseTo(direct, 4);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('LOO: a report naming the gold answer gains, a wrong entity loses, no report is exactly 0', async () => {
    const cfg = creditSection.parse({ method: 'loo', value: 'likelihood' });
    const run = async (t: Trajectory): Promise<readonly number[]> =>
      (await computeCredits([t], episode, () => Promise.reject(new Error('no replays')), cfg, { scorer: score }))
        .trajectories[0]!.deltas;
    const [, right] = await run(chain('right', 'Zhoskaic'));
    const [, wrong] = await run(chain('wrong', 'Draizourv'));
    const [, none] = await run(chain('none', placeholder));
    expect(right).toBeGreaterThan(0);
    expect(wrong).toBeLessThan(0);
    expect(none).toBe(0);
  });

  it('Shapley over v_lik is efficient: sum phi = v_lik(N) - v_lik(empty); the sequential gains telescope', async () => {
    const t = chain('s', 'Zhoskaic');
    const cfg = creditSection.parse({ method: 'shapley', value: 'likelihood' });
    const never = (): Promise<Trajectory[]> => Promise.reject(new Error('no replays'));
    const c = (await computeCredits([t], episode, never, cfg, { scorer: score })).trajectories[0]!;
    const v = new Map(c.values);
    expect(c.phi!.reduce((a, b) => a + b, 0)).toBeCloseTo(v.get(3)! - v.get(0)!, 10);
    expect(c.efficiencyResidual).toBeCloseTo(0, 10);
    // The reward part is tanh(phi / scale), the nats stay in phi.
    expect(c.workerMarginal).toEqual(c.phi!.map((p) => Math.tanh(p)));
    const seq = creditSection.parse({ method: 'loo', value: 'likelihood', likelihood: { form: 'sequential' } });
    const s = (await computeCredits([t], episode, never, seq, { scorer: score })).trajectories[0]!;
    const r = s.readThrough!;
    expect(r).toHaveLength(3);
    expect(s.deltas).toEqual([r[1]! - r[0]!, r[2]! - r[1]!]);
    // After the last report the cut context is the final-answer turn's: v_lik(N).
    expect(r[2]).toBeCloseTo(v.get(3)!, 5);
  });

  it('several gold aliases: the best one counts', async () => {
    const t = chain('a', 'Zhoskaic');
    const point = { masked: [] as number[] };
    const one = async (answers: string[]): Promise<number> =>
      (await score([{ traj: t, episode: { ...episode, answers }, point }]))[0]!;
    const [gold, other] = [await one(['Zhoskaic']), await one(['Draizourv'])];
    expect(gold).toBeGreaterThan(other);
    expect(await one(['Draizourv', 'Zhoskaic'])).toBeCloseTo(gold, 6);
    expect(await one(['Zhoskaic', 'Draizourv'])).toBeCloseTo(gold, 6);
  });

  it('refuses in one line an episode without a gold answer or whose answer tokenises to nothing', () => {
    expect(() => goldAnswerIds({ ...episode, answers: [] }, tok)).toThrow(
      /^credit.value=likelihood: episode ep has no gold answer/,
    );
    expect(() => goldAnswerIds({ ...episode, answers: ['  '] }, tok)).toThrow(
      /gold answer " {2}" tokenises to nothing$/,
    );
    expect(goldAnswerIds({ ...episode, answers: ['', 'Zhoskaic', 'Zhoskaic '] }, tok)).toHaveLength(1);
  });

  it("an alias longer than the planner's answer turn is not forced; with no other alias, one line before any step", async () => {
    const n = tok.encode('Zhoskaic', { addSpecialTokens: false }).length;
    const long = 'Zhoskaic '.repeat(60).trim(); // more tokens than any answer turn of 48
    expect(tok.encode(long, { addSpecialTokens: false }).length).toBeGreaterThan(48);
    expect(goldAnswerIds({ ...episode, answers: [long, 'Zhoskaic'] }, tok, 48)).toEqual([
      tok.encode('Zhoskaic', { addSpecialTokens: false }),
    ]);
    expect(() => goldAnswerIds({ ...episode, answers: [long] }, tok, 48)).toThrow(
      /^credit.value=likelihood: episode ep: its shortest gold answer has \d+ tokens, more than the 48 of the planner's answer turn \(rollout.maxNewTokens\)/,
    );
    expect(() => goldAnswerIds({ ...episode, answers: ['Zhoskaic'] }, tok, n - 1)).toThrow(
      new RegExp(`shortest gold answer has ${n} tokens, more than the ${n - 1} `),
    );
    expect(() =>
      checkGoldAnswerTokens([episode, { ...episode, id: 'far', answers: [long] }], tok, 48, 'train'),
    ).toThrow(/^train: credit.value=likelihood: episode far: its shortest gold answer/);
    // The scorer drops the long alias: the value is the short alias's alone.
    const t = chain('a', 'Zhoskaic');
    const point = { masked: [] as number[] };
    const bounded = lmLikelihoodScorer(model, tok, { protocol: tags, placeholder, maxAnswerTokens: 48 });
    const [both] = await bounded([{ traj: t, episode: { ...episode, answers: [long, 'Zhoskaic'] }, point }]);
    const [alone] = await score([{ traj: t, episode, point }]);
    expect(both).toBe(alone);
  });

  it("without a bound, an alias longer than the model's positions is refused in one line, not forced past them", async () => {
    const huge = 'Zhoskaic '.repeat(model.config.maxPositions).trim();
    const t = chain('a', 'Zhoskaic');
    await expect(score([{ traj: t, episode: { ...episode, answers: [huge] }, point: { masked: [] } }])).rejects.toThrow(
      new RegExp(`more than the ${model.config.maxPositions - 1} of the planner's answer turn`),
    );
  });
});
