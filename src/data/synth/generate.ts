import { Rng } from '../../random/rng.ts';
import { drawKind, makeQuestion, type GoldQuestion } from './questions.ts';
import type { StrictMusiqueRecord } from './record.ts';
import { substituteRefs } from './reader.ts';
import { RELATIONS, type RelationId } from './relations.ts';
import type { NameSplit } from './names.ts';
import { createWorld, DEFAULT_WORLD_SIZE, neighbourIndex, type Entity, type World, type WorldSize } from './world.ts';

/**
 * `sharp data synth` logic: questions over one seeded world laid out as MuSiQue
 * records: 20 paragraphs (the support paragraphs, hard distractors that share names with the
 * question, random ones), shuffled and numbered 0..19. Deterministic per seed, and the first k
 * records do not depend on n.
 */

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
}

/** Hard distractors per record (MuSiQue's distractors are retrieved, hence related to the question). */
const HARD_DISTRACTORS = 8;
/**
 * Consecutive failed or duplicate tries before giving up: question kinds fail often by design
 * (rejection sampling), but this many in a row means the world has run out of distinct questions.
 */
const MAX_STALE_TRIES = 50_000;

const RELATION_INDEX = Object.fromEntries((Object.keys(RELATIONS) as RelationId[]).map((r, i) => [r, i])) as Record<RelationId, number>;

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
    const key = substituteRefs((q.hops[i] as GoldQuestion['hops'][number]).question, q.hops.map((x) => x.answer));
    return offset + (commit ? ids.get(key) : ids.peek(key));
  });
}

/** A question laid out as a MuSiQue record with `size` shuffled paragraphs. */
export function layoutRecord(world: World, neighbours: number[][], q: GoldQuestion, hopIds: number[], rng: Rng, size: number): StrictMusiqueRecord {
  const support = [...new Set(q.hops.flatMap((h) => (h.subject ? [h.subject.id] : [])))];
  const chosen = new Set(support);
  const hard = rng.shuffle([...new Set(q.entities.flatMap((e) => [e.id, ...(neighbours[e.id] ?? [])]))].filter((id) => !chosen.has(id)));
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

function validate(opts: SynthOptions): { minHops: 2 | 3 | 4; maxHops: 2 | 3 | 4; size: number } {
  const minHops = opts.minHops ?? 2;
  const maxHops = opts.maxHops ?? 4;
  const size = opts.paragraphs ?? 20;
  if (!Number.isInteger(opts.seed) || opts.seed < 0) throw new Error(`synth: seed must be a non-negative integer, got ${opts.seed}`);
  if (!Number.isInteger(opts.n) || opts.n < 1) throw new Error(`synth: n must be a positive integer, got ${opts.n}`);
  for (const [k, v] of [['min-hops', minHops], ['max-hops', maxHops]] as const) {
    if (!Number.isInteger(v) || v < 2 || v > 4) throw new Error(`synth: ${k} must be 2, 3 or 4, got ${v}`);
  }
  if (minHops > maxHops) throw new Error(`synth: min-hops (${minHops}) is greater than max-hops (${maxHops})`);
  if (!Number.isInteger(size) || size < 2) throw new Error(`synth: paragraphs per record must be an integer >= 2, got ${size}`);
  return { minHops: minHops as 2 | 3 | 4, maxHops: maxHops as 2 | 3 | 4, size };
}

/** `n` distinct records (distinct ids) from the world of `seed`, or from one fresh world each. */
export function generateSynth(opts: SynthOptions): StrictMusiqueRecord[] {
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

function generateFresh(opts: SynthOptions): StrictMusiqueRecord[] {
  const { minHops, maxHops, size } = validate(opts);
  const worldSize = opts.world ?? DEFAULT_WORLD_SIZE;
  const out: StrictMusiqueRecord[] = [];
  for (let i = 0; i < opts.n; i++) {
    const seed = freshSeed(opts.seed, i, opts.names);
    const rng = new Rng(seed ^ 0x5eed);
    const hops = rng.int(minHops, maxHops) as 2 | 3 | 4;
    const kind = drawKind(rng, hops);
    let record: StrictMusiqueRecord | null = null;
    // A world that admits no question of this kind (rare: small worlds) is redrawn from the same stream.
    for (let attempt = 0; attempt < 20 && !record; attempt++) {
      const world = createWorld((seed + attempt * 0x632be5ab) >>> 0, worldSize, { names: opts.names, pool: opts.namePool });
      if (world.entities.length < size) throw new Error(`synth: the world has ${world.entities.length} paragraphs, fewer than ${size} per record`);
      let q: GoldQuestion | null = null;
      for (let k = 0; k < 200 && !q; k++) q = makeQuestion(world, rng, kind, hops);
      if (!q || q.hops.length !== hops) continue;
      const ids = hopIdsOf(q, new ArithmeticIds(), true, (i + 1) * FRESH_ID_STRIDE);
      record = layoutRecord(world, neighbourIndex(world), q, ids, rng, size);
    }
    if (!record) throw new Error(`synth: no ${hops}-hop ${kind} question in 20 fresh worlds of this size; use a larger world`);
    out.push(record);
  }
  return out;
}

function generateShared(opts: SynthOptions): StrictMusiqueRecord[] {
  const { minHops, maxHops, size } = validate(opts);
  const world = createWorld(opts.seed, opts.world ?? DEFAULT_WORLD_SIZE, { names: opts.names, pool: opts.namePool });
  if (world.entities.length < size) throw new Error(`synth: the world has ${world.entities.length} paragraphs, fewer than ${size} per record`);
  const neighbours = neighbourIndex(world);
  // A separate stream for questions (seed-derived), so the world does not shift when question code does.
  const rng = new Rng(opts.seed ^ 0x5eed);
  const ids = new ArithmeticIds();
  const seen = new Set<string>();
  const out: StrictMusiqueRecord[] = [];
  let stale = 0;
  while (out.length < opts.n) {
    if (stale > MAX_STALE_TRIES) {
      throw new Error(`synth: produced only ${out.length} of ${opts.n} distinct questions; use a larger world or fewer records`);
    }
    const hops = rng.int(minHops, maxHops) as 2 | 3 | 4;
    // Draw the kind first, then retry that kind: retrying the draw would under-sample the kinds
    // whose rejection rate is high (two-sided questions) and skew the mix.
    const kind = drawKind(rng, hops);
    let q: GoldQuestion | null = null;
    for (let k = 0; k < 200 && !q; k++, stale++) q = makeQuestion(world, rng, kind, hops);
    if (!q || q.hops.length !== hops) continue;
    const id = `${q.shape}__${hopIdsOf(q, ids, false).join('_')}`;
    if (seen.has(id)) {
      stale++;
      continue;
    }
    stale = 0;
    seen.add(id);
    out.push(layoutRecord(world, neighbours, q, hopIdsOf(q, ids, true), rng, size));
  }
  return out;
}

/** Writes records as JSONL through a temp file + rename, so a reader never sees half a file. */
