/**
 * Aggregation of per-item scores for reports: means over the items that carry a metric, overall
 * and per breakdown group (MuSiQue by hops, HotpotQA by type, FRAMES by reasoning type, ...).
 */
import type { Episode } from '../data/episode.ts';
import type { ItemScores } from './types.ts';

/** Mean of each metric over the items that have it. */
export function meanScores(items: readonly ItemScores[]): Record<string, number> {
  const sum: Record<string, number> = {};
  const n: Record<string, number> = {};
  for (const s of items) {
    for (const [k, v] of Object.entries(s)) {
      sum[k] = (sum[k] ?? 0) + v;
      n[k] = (n[k] ?? 0) + 1;
    }
  }
  return Object.fromEntries(Object.keys(sum).map((k) => [k, sum[k] / n[k]]));
}

interface GroupRow {
  group: string;
  /** Items in the group. */
  count: number;
  means: Record<string, number>;
}

/** dimension -> rows sorted by group name; an item in several groups counts in each. */
export type Breakdown = Record<string, GroupRow[]>;

export function breakdown(
  items: readonly ItemScores[],
  eps: readonly Episode[],
  groupsOf: (ep: Episode) => Record<string, string[]>,
): Breakdown {
  const buckets = new Map<string, Map<string, ItemScores[]>>();
  eps.forEach((ep, i) => {
    for (const [dim, groups] of Object.entries(groupsOf(ep))) {
      const byGroup = buckets.get(dim) ?? new Map<string, ItemScores[]>();
      for (const g of new Set(groups)) byGroup.set(g, [...(byGroup.get(g) ?? []), items[i]]);
      buckets.set(dim, byGroup);
    }
  });
  const out: Breakdown = {};
  for (const [dim, byGroup] of buckets) {
    out[dim] = [...byGroup.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([group, xs]) => ({ group, count: xs.length, means: meanScores(xs) }));
  }
  return out;
}
