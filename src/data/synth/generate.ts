/**
 * `sharp data synth` logic: questions over one seeded world laid out as MuSiQue
 * records: 20 paragraphs (the support paragraphs, hard distractors that share names with the
 * question, random ones), shuffled and numbered 0..19. Deterministic per seed, and the first k
 * records do not depend on n.
 */
import { mixedHash32 } from '../../random/hash.ts';
import { Rng } from '../../random/rng.ts';
import { plantClaim } from './misleading.ts';
import {
  aggregationQuestion,
  comparisonQuestion,
  drawKind,
  makeQuestion,
  type GoldQuestion,
  type QuestionKind,
  type Shape,
} from './questions.ts';
import type { SynthRecord } from './record.ts';
import { substituteRefs } from './reader.ts';
import { RELATIONS, type RelationId } from './relations.ts';
import type { NameSplit } from './names.ts';
import { createWorld, DEFAULT_WORLD_SIZE, neighbourIndex, type Entity, type World, type WorldSize } from './world.ts';

export interface SynthOptions {
  seed: number;
  n: number;
  minHops?: number;
  maxHops?: number;
  /** Paragraphs per record (MuSiQue: 20). */
  paragraphs?: number;
  world?: WorldSize;
  /**
   * shared (default): every record asks about one world, so names recur across records. fresh:
   * each record gets a world of its own (seeded by seed and record index), so a name occurs in one
   * record only and a model can answer only by reading and copying from the paragraphs.
   */
  worlds?: 'shared' | 'fresh';
  /** Draw names from one part of the name space (names.ts namePartition); unset: all of it. */
  names?: NameSplit;
  /** Recombine names from a fixed pool of this many words (names.ts PoolNames); 0 or unset: fresh syllable words. */
  namePool?: number;
  /**
   * Weights of the question shapes (questions.ts): chain (today's mix of chains and two-sided year
   * questions), comparison, aggregation. Unset or chain alone: exactly the chain-only generator.
   */
  shapes?: Partial<Record<Shape, number>>;
  /** Items a comparison or aggregation question compares (default 2-3; at most 3, at most maxHops - 1). */
  compareItems?: { min: number; max: number };
  /** Share of records with a planted wrong claim about one needed fact (misleading.ts; default 0). */
  misleadingRate?: number;
  /** Called after each record with the count so far (a progress line for long runs). */
  onRecord?: (done: number) => void;
}

/** What one record asks: its shape, hop count, and the chain kind or the item count. */
type Plan =
  | { shape: 'chain'; hops: 2 | 3 | 4; kind: QuestionKind }
  | { shape: 'comparison' | 'aggregation'; hops: 2 | 3 | 4; items: number };

/** Hard distractors per record (MuSiQue's distractors are retrieved, hence related to the question). */
const HARD_DISTRACTORS = 8;
/**
 * Consecutive failed or duplicate tries before giving up: question kinds fail often by design
 * (rejection sampling), but this many in a row means the world has run out of distinct questions.
 */
const MAX_STALE_TRIES = 50_000;

const RELATION_INDEX = Object.fromEntries((Object.keys(RELATIONS) as RelationId[]).map((r, i) => [r, i])) as Record<
  RelationId,
  number
>;

/** Single-hop question id of a fact, as MuSiQue numbers its single-hop questions: stable per world. */
function factId(subject: Entity, relation: RelationId): number {
  return 10_000 + subject.id * 16 + RELATION_INDEX[relation];
}

class ArithmeticIds {
  private readonly ids = new Map<string, number>();
  /** Ids for arithmetic hops, by their question with the numbers filled in, first come first served. */
  get(key: string): number {
    let id = this.ids.get(key);
    if (id === undefined) {
      id = 900_000 + this.ids.size;
      this.ids.set(key, id);
    }
    return id;
  }
  peek(key: string): number {
    return this.ids.get(key) ?? 900_000 + this.ids.size;
  }
}

/** Hop ids of a question: fact ids, and arithmetic ids (reserved only when `commit`), plus `offset`. */
function hopIdsOf(q: GoldQuestion, ids: ArithmeticIds, commit: boolean, offset = 0): number[] {
  return q.hops.map((h, i) => {
    if (h.subject && h.relation) return offset + factId(h.subject, h.relation);
    // Keyed by the question with the gold numbers filled in, as MuSiQue ids one single-hop question.
    const key = substituteRefs(
      (q.hops[i] as GoldQuestion['hops'][number]).question,
      q.hops.map((x) => x.answer),
    );
    return offset + (commit ? ids.get(key) : ids.peek(key));
  });
}

/** A question laid out as a MuSiQue record with `size` shuffled paragraphs. */
function layoutRecord(
  world: World,
  neighbours: number[][],
  q: GoldQuestion,
  hopIds: number[],
  rng: Rng,
  size: number,
): SynthRecord {
  const support = [...new Set(q.hops.flatMap((h) => (h.subject ? [h.subject.id] : [])))];
  const chosen = new Set(support);
  const hard = rng.shuffle(
    [...new Set(q.entities.flatMap((e) => [e.id, ...(neighbours[e.id] ?? [])]))].filter((id) => !chosen.has(id)),
  );
  for (const id of hard.slice(0, HARD_DISTRACTORS)) chosen.add(id);
  while (chosen.size < size) chosen.add(rng.int(0, world.entities.length - 1));
  const order = rng.shuffle([...chosen]);
  const position = new Map(order.map((id, i) => [id, i]));
  return {
    id: `${q.shape}__${hopIds.join('_')}`,
    paragraphs: order.map((id, i) => {
      const e = world.entities[id] as Entity;
      return { idx: i, title: e.name, paragraph_text: e.text, is_supporting: support.includes(id) };
    }),
    question: q.question,
    question_decomposition: q.hops.map((h, i) => ({
      id: hopIds[i] as number,
      question: h.question,
      answer: h.answer,
      paragraph_support_idx: h.subject ? (position.get(h.subject.id) as number) : null,
    })),
    answer: q.answer,
    answer_aliases: q.aliases,
    answerable: true,
  };
}

interface Validated {
  minHops: 2 | 3 | 4;
  maxHops: 2 | 3 | 4;
  size: number;
  /** Shape weights in SHAPES order, or null for the chain-only generator (no shape draws at all). */
  weights: number[] | null;
  items: { min: number; max: number };
  misleading: number;
}

const SHAPES: readonly Shape[] = ['chain', 'comparison', 'aggregation'];

function validate(opts: SynthOptions): Validated {
  const minHops = opts.minHops ?? 2;
  const maxHops = opts.maxHops ?? 4;
  const size = opts.paragraphs ?? 20;
  if (!Number.isInteger(opts.seed) || opts.seed < 0)
    throw new Error(`synth: seed must be a non-negative integer, got ${opts.seed}`);
  if (!Number.isInteger(opts.n) || opts.n < 1) throw new Error(`synth: n must be a positive integer, got ${opts.n}`);
  for (const [k, v] of [
    ['min-hops', minHops],
    ['max-hops', maxHops],
  ] as const) {
    if (!Number.isInteger(v) || v < 2 || v > 4) throw new Error(`synth: ${k} must be 2, 3 or 4, got ${v}`);
  }
  if (minHops > maxHops) throw new Error(`synth: min-hops (${minHops}) is greater than max-hops (${maxHops})`);
  if (!Number.isInteger(size) || size < 2)
    throw new Error(`synth: paragraphs per record must be an integer >= 2, got ${size}`);
  const weights = SHAPES.map((k) => opts.shapes?.[k] ?? (k === 'chain' && opts.shapes === undefined ? 1 : 0));
  for (const [i, w] of weights.entries()) {
    if (!Number.isFinite(w) || w < 0)
      throw new Error(`synth: shape weight ${SHAPES[i]} must be a finite number >= 0, got ${w}`);
  }
  if (!weights.some((w) => w > 0)) throw new Error('synth: shape weights are all 0');
  const items = opts.compareItems ?? { min: 2, max: 3 };
  const parallel = (weights[1] as number) > 0 || (weights[2] as number) > 0;
  if (
    !Number.isInteger(items.min) ||
    !Number.isInteger(items.max) ||
    items.min < 2 ||
    items.max > 3 ||
    items.min > items.max
  ) {
    throw new Error(`synth: compare items must be integers with 2 <= min <= max <= 3, got ${items.min}-${items.max}`);
  }
  if (parallel && items.min + 1 > maxHops)
    throw new Error(
      `synth: a comparison or aggregation of ${items.min} items needs ${items.min + 1} hops, but max-hops is ` +
        `${maxHops}`,
    );
  const misleading = opts.misleadingRate ?? 0;
  if (!(misleading >= 0 && misleading <= 1))
    throw new Error(`synth: misleading rate must be in [0, 1], got ${misleading}`);
  // Chains alone draw nothing extra, so their records stay exactly those of the chain-only generator.
  const chainOnly = weights[1] === 0 && weights[2] === 0;
  return {
    minHops: minHops as 2 | 3 | 4,
    maxHops: maxHops as 2 | 3 | 4,
    size,
    weights: chainOnly ? null : weights,
    items,
    misleading,
  };
}

/**
 * What the next record asks. The shape comes from its own stream (`shapeRng`), the rest from the
 * question stream: chains draw exactly as the chain-only generator does.
 */
function drawPlan(rng: Rng, shapeRng: Rng, v: Validated): Plan {
  let shape: Shape = 'chain';
  if (v.weights) {
    const total = v.weights.reduce((a, b) => a + b, 0);
    let u = shapeRng.float() * total;
    shape =
      SHAPES.find((_, i) => (u -= v.weights?.[i] as number) < 0) ??
      (SHAPES[v.weights.findLastIndex((w) => w > 0)] as Shape);
  }
  if (shape === 'chain') {
    const hops = rng.int(v.minHops, v.maxHops) as 2 | 3 | 4;
    return { shape, hops, kind: drawKind(rng, hops) };
  }
  const items = rng.int(v.items.min, Math.min(v.items.max, v.maxHops - 1));
  // Items reached through one more hop make the question longer; three-item aggregations have none.
  const most = shape === 'aggregation' && items === 3 ? 4 : Math.min(v.maxHops, 2 * items + 1);
  return { shape, hops: rng.int(Math.max(v.minHops, items + 1), most) as 2 | 3 | 4, items };
}

function makeFromPlan(world: World, rng: Rng, plan: Plan): GoldQuestion | null {
  switch (plan.shape) {
    case 'chain':
      return makeQuestion(world, rng, plan.kind, plan.hops);
    case 'comparison':
      return comparisonQuestion(world, rng, plan.items, plan.hops);
    case 'aggregation':
      return aggregationQuestion(world, rng, plan.items, plan.hops);
  }
}

function planName(plan: Plan): string {
  return plan.shape === 'chain'
    ? `${plan.hops}-hop ${plan.kind}`
    : `${plan.hops}-hop ${plan.shape} of ${plan.items} items`;
}

/**
 * Seeds of the shape and planting streams, hashed from their own keys: xoroshiro's first draws from
 * seeds that differ by a constant XOR are correlated, and a shape or a claim must not follow from the
 * question stream's draws.
 */
function streamSeed(what: 'shape' | 'planted', seed: number, i: number | null, split: NameSplit | undefined): number {
  return mixedHash32(`${what}\u0000${seed}\u0000${i ?? 'shared'}\u0000${split ?? ''}`);
}

/** Record i with a planted claim at the configured rate. */
function maybePlant(
  v: Validated,
  opts: SynthOptions,
  i: number,
  world: World,
  q: GoldQuestion,
  record: SynthRecord,
): SynthRecord {
  if (v.misleading === 0) return record;
  const rng = new Rng(streamSeed('planted', opts.seed, i, opts.names));
  return rng.float() < v.misleading ? plantClaim(world, q, record, rng) : record;
}

/** `n` distinct records (distinct ids) from the world of `seed`, or from one fresh world each. */
export function generateSynth(opts: SynthOptions): SynthRecord[] {
  return opts.worlds === 'fresh' ? generateFresh(opts) : generateShared(opts);
}

/** Seed of record i's world: a bijective mix of (seed, i, split), so worlds never coincide. */
function freshSeed(seed: number, i: number, split: NameSplit | undefined): number {
  let h = (Math.imul(seed, 0x9e3779b1) ^ Math.imul(i + 1, 0x85ebca6b) ^ (split === 'held-out' ? 0x27d4eb2f : 0)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x7feb352d) >>> 0;
  return h ^ (h >>> 15);
}

/**
 * Hop ids of record i in fresh mode: its world's fact and arithmetic ids (< 1,000,000) shifted by
 * (i + 1) * 1,000,000, so ids stay unique across records whose worlds reuse entity numbers.
 */
const FRESH_ID_STRIDE = 1_000_000;

function generateFresh(opts: SynthOptions): SynthRecord[] {
  const v = validate(opts);
  const { size } = v;
  const worldSize = opts.world ?? DEFAULT_WORLD_SIZE;
  const out: SynthRecord[] = [];
  for (let i = 0; i < opts.n; i++) {
    const seed = freshSeed(opts.seed, i, opts.names);
    const rng = new Rng(seed ^ 0x5eed);
    const plan = drawPlan(rng, new Rng(streamSeed('shape', opts.seed, i, opts.names)), v);
    const { hops } = plan;
    let record: SynthRecord | null = null;
    // A world that admits no question of this kind (rare: small worlds) is redrawn from the same stream.
    for (let attempt = 0; attempt < 20 && !record; attempt++) {
      const world = createWorld((seed + attempt * 0x632be5ab) >>> 0, worldSize, {
        names: opts.names,
        pool: opts.namePool,
      });
      if (world.entities.length < size)
        throw new Error(`synth: the world has ${world.entities.length} paragraphs, fewer than ${size} per record`);
      let q: GoldQuestion | null = null;
      for (let k = 0; k < 200 && !q; k++) q = makeFromPlan(world, rng, plan);
      if (!q || q.hops.length !== hops) continue;
      const ids = hopIdsOf(q, new ArithmeticIds(), true, (i + 1) * FRESH_ID_STRIDE);
      record = maybePlant(v, opts, i, world, q, layoutRecord(world, neighbourIndex(world), q, ids, rng, size));
    }
    if (!record)
      throw new Error(`synth: no ${planName(plan)} question in 20 fresh worlds of this size; use a larger world`);
    out.push(record);
    opts.onRecord?.(out.length);
  }
  return out;
}

function generateShared(opts: SynthOptions): SynthRecord[] {
  const v = validate(opts);
  const { size } = v;
  const world = createWorld(opts.seed, opts.world ?? DEFAULT_WORLD_SIZE, { names: opts.names, pool: opts.namePool });
  if (world.entities.length < size)
    throw new Error(`synth: the world has ${world.entities.length} paragraphs, fewer than ${size} per record`);
  const neighbours = neighbourIndex(world);
  // A separate stream for questions (seed-derived), so the world does not shift when question code does.
  const rng = new Rng(opts.seed ^ 0x5eed);
  const shapeRng = new Rng(streamSeed('shape', opts.seed, null, opts.names));
  const ids = new ArithmeticIds();
  const seen = new Set<string>();
  const out: SynthRecord[] = [];
  let stale = 0;
  while (out.length < opts.n) {
    if (stale > MAX_STALE_TRIES) {
      throw new Error(
        `synth: produced only ${out.length} of ${opts.n} distinct questions; use a larger world or fewer records`,
      );
    }
    // Draw the kind first, then retry that kind: retrying the draw would under-sample the kinds
    // whose rejection rate is high (two-sided questions) and skew the mix.
    const plan = drawPlan(rng, shapeRng, v);
    const { hops } = plan;
    let q: GoldQuestion | null = null;
    for (let k = 0; k < 200 && !q; k++, stale++) q = makeFromPlan(world, rng, plan);
    if (!q || q.hops.length !== hops) continue;
    const id = `${q.shape}__${hopIdsOf(q, ids, false).join('_')}`;
    if (seen.has(id)) {
      stale++;
      continue;
    }
    stale = 0;
    seen.add(id);
    out.push(
      maybePlant(v, opts, out.length, world, q, layoutRecord(world, neighbours, q, hopIdsOf(q, ids, true), rng, size)),
    );
    opts.onRecord?.(out.length);
  }
  return out;
}

/** Writes records as JSONL through a temp file + rename, so a reader never sees half a file. */
