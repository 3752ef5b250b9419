import * as tf from '@tensorflow/tfjs';
import type { CausalLM } from '../../model/causal-lm.ts';
import { tokenLogprobs } from '../../model/logprobs.ts';
import type { Tokenizer } from '../../tokenizer/tokenizer.ts';
import type { CandidateScorer } from './llm.ts';

/**
 * The LLM judge's scorer over a causal LM (the policy or another checkpoint): log p(candidate |
 * prompt) = sum of the candidate tokens' logprobs, for all candidates in one forward pass. The prompt
 * and each candidate are tokenised separately and concatenated, so every candidate is scored after
 * the same prompt tokens (a joint tokenisation could merge across the boundary and give the
 * candidates different prefixes). Prompts longer than `maxTokens` keep their last tokens (the
 * question sits at the end).
 */
export function lmCandidateScorer(model: CausalLM, tokenizer: Tokenizer, maxTokens = 1024): CandidateScorer {
  return (prompt, candidates) => {
    if (candidates.length === 0) return Promise.resolve([]);
    const cand = candidates.map((c, i) => {
      const ids = tokenizer.encode(c, { addSpecialTokens: false });
      if (ids.length === 0) throw new Error(`lm scorer: candidate ${i} (${JSON.stringify(c)}) has no tokens`);
      return ids;
    });
    const longest = Math.max(...cand.map((c) => c.length));
    let promptIds = tokenizer.encode(prompt, { addSpecialTokens: false });
    const room = maxTokens - longest - (tokenizer.bosId !== undefined ? 1 : 0);
    if (room < 1) throw new Error(`lm scorer: maxTokens ${maxTokens} leaves no room for the prompt`);
    if (promptIds.length > room) promptIds = promptIds.slice(promptIds.length - room);
    if (tokenizer.bosId !== undefined) promptIds = [tokenizer.bosId, ...promptIds];
    const p = promptIds.length;
    const t = p + longest;
    const b = cand.length;
    const ids = new Int32Array(b * t).fill(tokenizer.padId);
    const mask = new Int32Array(b * t);
    cand.forEach((c, i) => {
      ids.set(promptIds, i * t);
      ids.set(c, i * t + p);
      mask.fill(1, i * t, i * t + p + c.length); // right padding
    });
    const lp = tf.tidy(() => {
      const idT = tf.tensor2d(ids, [b, t], 'int32'); // [C, T]
      const maskT = tf.tensor2d(mask, [b, t], 'int32'); // [C, T]
      return tokenLogprobs(model, idT, maskT); // [C, T-1]
    });
    // One host read per judge question (not per token).
    const rows = lp.arraySync();
    lp.dispose();
    // Token j of candidate i sits at position p + j and is predicted at row index p + j - 1.
    return Promise.resolve(cand.map((c, i) => c.reduce((s, _, j) => s + rows[i][p + j - 1], 0)));
  };
}
