import type { Config } from '../config/schema.ts';
import { successFunction } from '../credit/success.ts';
import type { Episode } from '../data/episode.ts';
import { LmPolicy } from '../generation/lm-policy.ts';
import type { CausalLM } from '../model/causal-lm.ts';
import { Rng } from '../random/rng.ts';
import { rollout } from '../rollout/engine.ts';
import type { Policy } from '../rollout/policy.ts';
import type { Tokenizer } from '../tokenizer/tokenizer.ts';

/**
 * Held-out accuracy of the multi-agent system (issue 6 item 7: "held-out accuracy before and after
 * RL"): one greedy trajectory per held-out episode through the real engine with the LM as every
 * agent's policy, scored by the training success function (credit.success), so the number is the
 * one RL optimises. Greedy, so it does not depend on the sampling RNG.
 */
export interface AccuracyResult {
  accuracy: number;
  correct: number;
  total: number;
  /** Trajectories that ended with a final answer at all (protocol learned), as a fraction. */
  answered: number;
  seconds: number;
}

export async function heldOutAccuracy(model: CausalLM, tokenizer: Tokenizer, episodes: readonly Episode[], cfg: Pick<Config, 'rollout' | 'credit'>): Promise<AccuracyResult> {
  const r = cfg.rollout;
  const policy = new LmPolicy(model, tokenizer, { temperature: 0, topK: 0, topP: 1, maxContext: r.maxContext, rng: new Rng(0) });
  return policyAccuracy(policy, episodes, cfg);
}

/** Accuracy of any policy (one trajectory per episode through the real engine). */
export async function policyAccuracy(policy: Policy, episodes: readonly Episode[], cfg: Pick<Config, 'rollout' | 'credit'>): Promise<AccuracyResult> {
  if (episodes.length === 0) throw new Error('held-out accuracy: no held-out episodes');
  const t0 = performance.now();
  const { trajectories } = await rollout(policy, episodes, { cfg: cfg.rollout, groupSize: 1 });
  const success = successFunction(cfg.credit.success, { f1Threshold: cfg.credit.f1Threshold });
  const byId = new Map(episodes.map((e) => [e.id, e]));
  let correct = 0;
  let answered = 0;
  for (const t of trajectories) {
    if (t.finalAnswer !== null) answered++;
    correct += success(t.finalAnswer, byId.get(t.episodeId)?.answers ?? []);
  }
  const total = trajectories.length;
  return { accuracy: correct / total, correct, total, answered: answered / total, seconds: (performance.now() - t0) / 1000 };
}
