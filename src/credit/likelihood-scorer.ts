/**
 * The likelihood value over a causal LM: `v_lik = (1/|a*|) sum_t log pi(a*_t | context, opener,
 * a*_<t)`, the mean log-probability per token of the gold answer a*, teacher-forced at the planner's
 * answer turn (likelihood-context.ts says which context), best over the gold aliases
 * (docs/architecture.md, "Credit"). Every request of a call is one batched generate with forced
 * tokens: its log-probabilities are the untempered ones (generation/sampling.ts), and the process's
 * KV prefix cache lets the contexts of one trajectory, which share everything up to their first
 * masked report, prefill their common prefix once.
 */
import type { Episode } from '../data/episode.ts';
import { UserError } from '../errors.ts';
import { generate, type GenerateRequest } from '../generation/generate.ts';
import { prefixCacheFor } from '../generation/prefix-cache.ts';
import type { CausalLM } from '../model/causal-lm.ts';
import { Rng } from '../random/rng.ts';
import { cachedPromptIds } from '../rollout/prompt-cache.ts';
import { getProtocol, type Protocol, type ProtocolName } from '../rollout/protocol/index.ts';
import type { Trajectory } from '../rollout/types.ts';
import type { Tokenizer } from '../tokenizer/tokenizer.ts';
import { likelihoodContext, type LikelihoodPoint } from './likelihood-context.ts';
import { type GroupPlan, likelihoodItems } from './plan.ts';

/** One value to score: a trajectory's planner context (masked reports, cut point) and the episode's gold answers. */
export interface LikelihoodItem {
  traj: Trajectory;
  episode: Episode;
  point: LikelihoodPoint;
}

/** v_lik of every item, in order. */
export type LikelihoodScorer = (items: readonly LikelihoodItem[]) => Promise<number[]>;

/**
 * The token ids of each gold alias (distinct, non-empty, at most `maxTokens` long), as the scorer forces
 * them: the reason in one line when there is nothing to force (no gold answer, every alias tokenises
 * to nothing, or every alias is longer than the planner's answer turn can be: rollout.maxNewTokens).
 */
export function goldAnswerIds(
  episode: Episode,
  tokenizer: Pick<Tokenizer, 'encode'>,
  maxTokens = Number.POSITIVE_INFINITY,
): number[][] {
  const what = `credit.value=likelihood: episode ${episode.id}`;
  if (episode.answers.length === 0)
    throw new UserError(`${what} has no gold answer (the likelihood value scores the gold final answer)`);
  const aliases = [...new Set(episode.answers.map((a) => a.trim()))];
  const ids = aliases.filter((a) => a !== '').map((a) => tokenizer.encode(a, { addSpecialTokens: false }));
  const nonEmpty = ids.filter((x) => x.length > 0);
  if (nonEmpty.length === 0)
    throw new UserError(`${what}: its gold answer ${JSON.stringify(episode.answers[0])} tokenises to nothing`);
  const kept = nonEmpty.filter((x) => x.length <= maxTokens);
  if (kept.length === 0) {
    const shortest = Math.min(...nonEmpty.map((x) => x.length));
    throw new UserError(
      `${what}: its shortest gold answer has ${shortest} tokens, more than the ${maxTokens} of the planner's ` +
        'answer turn (rollout.maxNewTokens); shorten the answer or raise rollout.maxNewTokens',
    );
  }
  return kept;
}

/**
 * Refuses, before the first step, episodes whose gold answers the scorer over `tokenizer` could not
 * force within `maxTokens` (rollout.maxNewTokens): the scorer's line, after `where`.
 */
export function checkGoldAnswerTokens(
  episodes: readonly Episode[],
  tokenizer: Pick<Tokenizer, 'encode'>,
  maxTokens: number,
  where: string,
): void {
  for (const e of episodes) {
    try {
      goldAnswerIds(e, tokenizer, maxTokens);
    } catch (err) {
      if (err instanceof UserError) throw new UserError(`${where}: ${err.message}`);
      throw err;
    }
  }
}

/**
 * Refuses, before anything runs, data the likelihood value cannot score, without a tokenizer: every
 * tokenizer gives tokens to text that is not blank, so a blank alias is the one that tokenises to nothing.
 */
export function checkLikelihoodData(episodes: readonly Episode[], where: string): void {
  const blankTokens = { encode: (text: string): number[] => (text.trim() === '' ? [] : [0]) };
  checkGoldAnswerTokens(episodes, blankTokens, Number.POSITIVE_INFINITY, where);
}

export interface LmLikelihoodOptions {
  protocol: Protocol;
  /** credit.placeholder: what a masked report reads. */
  placeholder: string;
  /** rollout.maxNewTokens: the longest gold alias forced (a longer one is one the planner cannot write). */
  maxAnswerTokens?: number;
}

export function lmLikelihoodScorer(model: CausalLM, tokenizer: Tokenizer, o: LmLikelihoodOptions): LikelihoodScorer {
  const opener = (text: string): number[] => (text === '' ? [] : tokenizer.encode(text, { addSpecialTokens: false }));
  const maxPositions = model.config.maxPositions;
  // An alias must leave the context at least one position.
  const maxAnswer = Math.min(o.maxAnswerTokens ?? Number.POSITIVE_INFINITY, maxPositions - 1);
  return async (items) => {
    if (items.length === 0) return [];
    const requests: GenerateRequest[] = [];
    // owner[i]: the requests of item i. Equal contexts are scored once, so a mask that changes nothing
    // (a report that already was the placeholder) changes v_lik by exactly 0, not by float rounding.
    const owner: number[][] = items.map(() => []);
    const seen = new Map<string, number>();
    items.forEach((item, i) => {
      const ctx = likelihoodContext(item.traj, o.protocol, o.placeholder, item.point);
      const prompt = [...cachedPromptIds(tokenizer, ctx.messages), ...opener(ctx.opener)];
      for (const gold of goldAnswerIds(item.episode, tokenizer, maxAnswer)) {
        // A context too long for the model keeps its last tokens (where the reports and the answer turn are).
        const room = Math.max(1, maxPositions - gold.length);
        const promptIds = prompt.length > room ? prompt.slice(prompt.length - room) : prompt;
        const key = `${promptIds.join(',')}|${gold.join(',')}`;
        let r = seen.get(key);
        if (r === undefined) {
          r = requests.push({ promptIds, maxNewTokens: gold.length, forcedTokens: gold }) - 1;
          seen.set(key, r);
        }
        owner[i]?.push(r);
      }
    });
    const out = await generate(model, requests, {
      temperature: 1,
      topK: 0,
      topP: 1,
      // Forced tokens draw nothing; the stream only exists because generate forks one per row.
      rng: new Rng(0),
      eosIds: tokenizer.eosIds,
      padId: tokenizer.padId,
      decoder: tokenizer,
      prefixCache: prefixCacheFor(model),
    });
    const means = out.map((g) => g.logprobs.reduce((a, b) => a + b, 0) / g.logprobs.length);
    const best = owner.map((rs) => Math.max(...rs.map((r) => means[r] as number)));
    return best;
  };
}

/**
 * Stage "score likelihoods" of one group (evaluation and the audit credit one group at a time): its
 * planned contexts, [] for a plan of the outcome value. A likelihood plan without a scorer is a
 * programming error: the recipes pass one over the checkpoint whenever credit.value is likelihood.
 */
export async function scorePlan(plan: GroupPlan, scorer: LikelihoodScorer | undefined): Promise<number[]> {
  if (plan.scores.length === 0) return [];
  if (!scorer) throw new Error('credit: credit.value likelihood needs a scorer');
  return scorer(likelihoodItems(plan));
}

/**
 * Stage "score likelihoods" of a whole step: every group's planned contexts in one scorer call (one
 * batched forward of all of them), split back per group; groups of the outcome value get [].
 */
export async function scorePlans(plans: readonly GroupPlan[], scorer: LikelihoodScorer): Promise<number[][]> {
  const items = plans.flatMap((p) => (p.scores.length > 0 ? likelihoodItems(p) : []));
  const all = items.length > 0 ? await scorer(items) : [];
  if (all.length !== items.length)
    throw new Error(`likelihood scorer returned ${all.length} values for ${items.length} contexts`);
  let at = 0;
  return plans.map((p) => all.slice(at, (at += p.scores.length)));
}

/** The scorer of a step's policy with the run's protocol and placeholder (every stage mode scores in the trainer). */
export function stepScorer(
  model: CausalLM,
  tokenizer: Tokenizer,
  rollout: { protocol: ProtocolName; maxNewTokens: number },
  credit: { placeholder: string },
): LikelihoodScorer {
  return lmLikelihoodScorer(model, tokenizer, {
    protocol: getProtocol(rollout.protocol),
    placeholder: credit.placeholder,
    maxAnswerTokens: rollout.maxNewTokens,
  });
}
