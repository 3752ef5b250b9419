/**
 * Shared-prompt-prefix detection for batched generation ("the shared prefix is not
 * recomputed where the KV cache allows"). Counterfactual replays (src/rollout/replay.ts) send many
 * requests whose prompts are one planner context up to the first masked report, differing only in
 * their tails; generate() prefills each distinct prefix once and tiles its keys/values.
 * Pure host code: no tensors.
 */

/** One group of requests that share the first `length` prompt tokens. */
export interface PrefixGroup {
  /** Indices into the prompts given to findSharedPrefixes, ascending. */
  members: number[];
  /** Shared prefix length; every member keeps at least one token of its own after it. */
  length: number;
}

/** Length of the longest common prefix of a and b. */
export function commonPrefixLength(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Lexicographic order of token arrays (a proper prefix sorts first). */
function compareIds(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const d = (a[i] as number) - (b[i] as number);
    if (d !== 0) return d;
  }
  return a.length - b.length;
}

/**
 * Groups of two or more prompts that share a prefix of at least minTokens tokens. In lexicographic
 * order the common prefix of a set of prompts is the minimum of the neighbours' common prefixes,
 * so groups are maximal runs of sorted neighbours whose common prefix is >= minTokens. The shared
 * length is capped at (shortest member - 1): the last prompt token must be run by the suffix
 * prefill, whose last column gives the first logits. minTokens 0 disables sharing (no groups).
 * A run whose shared length ends up below minTokens after the cap is not a group.
 */
export function findSharedPrefixes(prompts: readonly (readonly number[])[], minTokens: number): PrefixGroup[] {
  if (!Number.isInteger(minTokens) || minTokens < 0)
    throw new Error(`generate: prefixMinTokens must be a non-negative integer (got ${minTokens})`);
  if (minTokens <= 0 || prompts.length < 2) return [];
  const order = prompts
    .map((_, i) => i)
    .sort((x, y) => compareIds(prompts[x] as number[], prompts[y] as number[]) || x - y);
  const groups: PrefixGroup[] = [];
  let run: number[] = [order[0] as number];
  let runLcp = Number.POSITIVE_INFINITY;
  const close = (): void => {
    if (run.length >= 2) {
      const shortest = Math.min(...run.map((i) => (prompts[i] as number[]).length));
      const length = Math.min(runLcp, shortest - 1);
      if (length >= minTokens) groups.push({ members: [...run].sort((a, b) => a - b), length });
    }
  };
  for (let k = 1; k < order.length; k++) {
    const i = order[k] as number;
    const lcp = commonPrefixLength(prompts[order[k - 1] as number] as number[], prompts[i] as number[]);
    if (lcp >= minTokens) {
      run.push(i);
      runLcp = Math.min(runLcp, lcp);
    } else {
      close();
      run = [i];
      runLcp = Number.POSITIVE_INFINITY;
    }
  }
  close();
  // Stable output order: by first member.
  return groups.sort((a, b) => (a.members[0] as number) - (b.members[0] as number));
}

/**
 * The prefixes a batch shares at every branch of its token trie (the nodes where prompts part, as
 * in SGLang's RadixAttention): for lexicographic neighbours a, b the prefix of length
 * min(lcp(a, b), |a| - 1, |b| - 1) when it is >= minTokens, without duplicates and without a
 * prefix of another one (an entry that extends a prefix serves it). Prefilling these, and then
 * again the branches among them, computes every shared token once: counterfactual replays that
 * mask nested sets of reports share ever longer prefixes. minTokens 0: none.
 */
export function branchPrefixes(prompts: readonly (readonly number[])[], minTokens: number): number[][] {
  if (!Number.isInteger(minTokens) || minTokens < 0)
    throw new Error(`generate: prefixMinTokens must be a non-negative integer (got ${minTokens})`);
  if (minTokens <= 0 || prompts.length < 2) return [];
  const sorted = [...prompts].sort(compareIds);
  const found = new Map<string, number[]>();
  for (let k = 1; k < sorted.length; k++) {
    const a = sorted[k - 1] as readonly number[];
    const b = sorted[k] as readonly number[];
    const len = Math.min(commonPrefixLength(a, b), a.length - 1, b.length - 1);
    if (len >= minTokens) found.set(a.slice(0, len).join(','), a.slice(0, len));
  }
  const cands = [...found.values()].sort(compareIds);
  // In lexicographic order a prefix of another candidate is a prefix of the next one.
  return cands.filter((c, i) => {
    const next = cands[i + 1];
    return !(next && next.length > c.length && commonPrefixLength(c, next) === c.length);
  });
}
