/**
 * Multi-hop questions over the synthetic world, as gold decompositions before they
 * are laid out as MuSiQue records (record.ts). Shapes follow MuSiQue's hop prefixes:
 * - linear chains (2hop, 3hop1, 4hop1): "In which country is the city where the founder of X was born
 *   located?" = founder -> birthCity -> country; also "In what year did <person> turn 60?" whose last
 *   hop is arithmetic;
 * - two independent year hops joined by an arithmetic hop (3hop2), one side optionally reached
 *   through one more hop (4hop3 = (1 -> 2, 3) -> 4): "How many years passed between the founding of
 *   X and the birth of Y?", "How old was P when K was founded?".
 * Beside those (the `chain` shape of the generator's mix), questions whose lookups are independent,
 * so a planner can delegate them side by side:
 * - comparisons of 2-3 items (`Nhopcmp`): one year lookup per item (an item may be reached through
 *   one more hop), then a comparison hop whose answer is the item: "Who was born first, X or Y?";
 * - aggregations (`Nhopagg`): 2-3 independent year lookups joined by an arithmetic hop: the two-sided
 *   questions above, and "How many years passed between the earliest and the latest of ...?".
 */
import type { Rng } from '../../random/rng.ts';
import {
  ARITHMETIC,
  COMPARISONS,
  fill,
  listItems,
  RELATIONS,
  type ArithmeticForm,
  type ComparisonForm,
  type EntityKind,
  type RelationId,
} from './relations.ts';
import { factEntity, factText, type Entity, type World } from './world.ts';

/** One gold hop. `subject` and `relation` are null for the arithmetic hop. */
export interface GoldHop {
  /** Question with `#k` (1-based) references to earlier hops' answers. */
  question: string;
  answer: string;
  relation: RelationId | null;
  /** Entity whose paragraph states the fact (the support paragraph); null for arithmetic. */
  subject: Entity | null;
  /** Arithmetic only: the form and its slot values as `#k` references or constants. */
  arithmetic?: { form: ArithmeticForm; slots: Record<string, string> };
  /** Comparison only: the form (its answer is an item, not a number). */
  comparison?: { form: ComparisonForm };
}

export interface GoldQuestion {
  /** Hop prefix: MuSiQue's 2hop, 3hop1, 3hop2, 4hop1, 4hop3, or 3hopcmp, 4hopcmp, 3hopagg, 4hopagg. */
  shape: string;
  question: string;
  answer: string;
  aliases: string[];
  hops: GoldHop[];
  /** Entities the question involves (subjects and answers), for picking hard distractors. */
  entities: Entity[];
}

interface Step {
  subject: Entity;
  relation: RelationId;
}

/** Relations of `e` that are set and, for entity relations, lead to an entity not yet visited. */
function options(world: World, e: Entity, visited: Set<number>, entityOnly: boolean): RelationId[] {
  const out: RelationId[] = [];
  for (const rel of Object.keys(e.facts) as RelationId[]) {
    const target = factEntity(world, e, rel);
    if (target) {
      if (!visited.has(target.id)) out.push(rel);
    } else if (!entityOnly) out.push(rel);
  }
  // Object.keys order follows insertion; sort so the choice depends on the seed only.
  return out.sort();
}

/**
 * A walk of `length` entity-valued steps from a random start, ending at an entity of `endKind` (any
 * kind when undefined), visiting each entity once. Null when this try failed.
 */
function walk(
  world: World,
  rng: Rng,
  length: number,
  visited: Set<number>,
  endKind?: EntityKind,
): { steps: Step[]; end: Entity } | null {
  const startIds = world.entities.filter((e) => !visited.has(e.id)).map((e) => e.id);
  let cur = world.entities[rng.pick(startIds)] as Entity;
  const seen = new Set(visited);
  seen.add(cur.id);
  const steps: Step[] = [];
  for (let i = 0; i < length; i++) {
    const opts = options(world, cur, seen, true);
    if (opts.length === 0) return null;
    const relation = rng.pick(opts);
    steps.push({ subject: cur, relation });
    cur = factEntity(world, cur, relation) as Entity;
    seen.add(cur.id);
  }
  if (endKind !== undefined && cur.kind !== endKind) return null;
  for (const id of seen) visited.add(id);
  return { steps, end: cur };
}

/** Noun phrase for the entity reached by `steps` from their start: "the founder of Zorvex Labs". */
function describe(steps: Step[], start: Entity): string {
  let d = start.name;
  for (const s of steps) d = fill(RELATIONS[s.relation].describe as string, { s: d });
  return d;
}

/** Gold hops of a walk plus a final relation, numbered from `offset` (hops before them). */
function factHops(world: World, steps: Step[], offset: number): GoldHop[] {
  return steps.map((s, i) => ({
    question: fill(RELATIONS[s.relation].hop, { s: i === 0 ? s.subject.name : `#${offset + i}` }),
    answer: factText(world, s.subject, s.relation) as string,
    relation: s.relation,
    subject: s.subject,
  }));
}

function entitiesOf(world: World, steps: Step[]): Entity[] {
  const out: Entity[] = [];
  for (const s of steps) {
    out.push(s.subject);
    const t = factEntity(world, s.subject, s.relation);
    if (t) out.push(t);
  }
  return out;
}

function answerAliases(world: World, last: Step): string[] {
  const t = factEntity(world, last.subject, last.relation);
  return t ? [...t.aliases] : [];
}

/** A linear chain of `hops` fact hops: the last relation may be an attribute or lead to an entity. */
function chainQuestion(world: World, rng: Rng, hops: number): GoldQuestion | null {
  const visited = new Set<number>();
  const w = walk(world, rng, hops - 1, visited);
  if (!w) return null;
  const finals = options(world, w.end, visited, false);
  if (finals.length === 0) return null;
  const steps = [...w.steps, { subject: w.end, relation: rng.pick(finals) }];
  const last = steps[steps.length - 1] as Step;
  const start = (steps[0] as Step).subject;
  const question = fill(RELATIONS[last.relation].hop, { s: describe(w.steps, start) });
  const gold = factHops(world, steps, 0);
  return {
    shape: hops === 2 ? '2hop' : `${hops}hop1`,
    question,
    answer: (gold[gold.length - 1] as GoldHop).answer,
    aliases: answerAliases(world, last),
    hops: gold,
    entities: entitiesOf(world, steps),
  };
}

interface YearSide {
  steps: Step[];
  /** The person (birth) or company (founding) whose year is asked. */
  end: Entity;
  year: number;
  /** "the birth of the mentor of Dara Velm" / "the founding of Zorvex Labs". */
  event: string;
  /** Noun phrase of `end`. */
  noun: string;
}

function yearSide(
  world: World,
  rng: Rng,
  kind: 'person' | 'company',
  chain: number,
  visited: Set<number>,
): YearSide | null {
  const w = walk(world, rng, chain, visited, kind);
  if (!w) return null;
  const relation: RelationId = kind === 'person' ? 'birthYear' : 'foundedYear';
  const start = w.steps.length > 0 ? (w.steps[0] as Step).subject : w.end;
  const noun = describe(w.steps, start);
  return {
    steps: [...w.steps, { subject: w.end, relation }],
    end: w.end,
    year: Number(w.end.facts[relation]),
    event: kind === 'person' ? `the birth of ${noun}` : `the founding of ${noun}`,
    noun,
  };
}

function arithmeticHop(id: ArithmeticForm['id'], slots: Record<string, string>, answer: number): GoldHop {
  const form = ARITHMETIC.find((f) => f.id === id) as ArithmeticForm;
  return {
    question: fill(form.hop, slots),
    answer: String(answer),
    relation: null,
    subject: null,
    arithmetic: { form, slots },
  };
}

/**
 * Two year sides and an arithmetic hop; `hops` is 3 (no chained side) or 4 (one side one hop
 * longer). `yearsBetween`: "How many years passed between E1 and E2?" (E1 the earlier event);
 * `ageAt`: "How old was P when K was founded?".
 */
function twoSidedQuestion(world: World, rng: Rng, hops: 3 | 4, form: 'yearsBetween' | 'ageAt'): GoldQuestion | null {
  const visited = new Set<number>();
  const kinds: ['person' | 'company', 'person' | 'company'] =
    form === 'ageAt'
      ? ['person', 'company']
      : [rng.pick(['person', 'company'] as const), rng.pick(['person', 'company'] as const)];
  const chained = hops === 4 ? rng.int(0, 1) : -1;
  const a = yearSide(world, rng, kinds[0], chained === 0 ? 1 : 0, visited);
  if (!a) return null;
  const b = yearSide(world, rng, kinds[1], chained === 1 ? 1 : 0, visited);
  if (!b) return null;
  // The chained side's hops come first, as in MuSiQue's 4hop3 ((1 -> 2, 3) -> 4).
  const [first, second] = chained === 1 ? [b, a] : [a, b];
  const firstHops = factHops(world, first.steps, 0);
  const secondHops = factHops(world, second.steps, firstHops.length);
  const ref = (side: YearSide) => `#${side === first ? firstHops.length : firstHops.length + secondHops.length}`;
  let question: string;
  let arith: GoldHop;
  let aliases: string[];
  if (form === 'ageAt') {
    const age = b.year - a.year;
    if (age < 1 || age > 100) return null;
    question = `How old was ${a.noun} when ${b.noun} was founded?`;
    arith = arithmeticHop('ageAt', { a: ref(a), b: ref(b) }, age);
    aliases = [`${age} years`, `${age} years old`];
  } else {
    if (a.year === b.year) return null;
    const [early, late] = a.year < b.year ? [a, b] : [b, a];
    question = `How many years passed between ${early.event} and ${late.event}?`;
    arith = arithmeticHop('yearsBetween', { a: ref(early), b: ref(late) }, late.year - early.year);
    aliases = [`${late.year - early.year} years`];
  }
  return {
    shape: hops === 3 ? '3hop2' : '4hop3',
    question,
    answer: arith.answer,
    aliases,
    hops: [...firstHops, ...secondHops, arith],
    entities: [...entitiesOf(world, first.steps), ...entitiesOf(world, second.steps)],
  };
}

/** "In what year did <person> turn N?": `hops - 2` entity hops to a person, birth year, arithmetic. */
function turnAgeQuestion(world: World, rng: Rng, hops: number): GoldQuestion | null {
  const side = yearSide(world, rng, 'person', hops - 2, new Set());
  if (!side) return null;
  const n = rng.pick([30, 40, 50, 60, 70, 80]);
  const factGold = factHops(world, side.steps, 0);
  const arith = arithmeticHop('yearAfter', { a: `#${factGold.length}`, n: String(n) }, side.year + n);
  return {
    shape: hops === 2 ? '2hop' : `${hops}hop1`,
    question: `In what year did ${side.noun} turn ${n}?`,
    answer: arith.answer,
    aliases: [],
    hops: [...factGold, arith],
    entities: entitiesOf(world, side.steps),
  };
}

export type QuestionKind = 'chain' | 'yearsBetween' | 'ageAt' | 'turnAge';

/**
 * The mix of question kinds per hop count: mostly chains; 2-hop questions cannot be two-sided (two
 * year hops + arithmetic is already 3).
 */
export function drawKind(rng: Rng, hops: 2 | 3 | 4): QuestionKind {
  const u = rng.float();
  if (hops === 2) return u < 0.75 ? 'chain' : 'turnAge';
  if (u < 0.45) return 'chain';
  if (u < 0.65) return 'yearsBetween';
  if (u < 0.8) return 'ageAt';
  return 'turnAge';
}

/** One try at a question of `kind` with `hops` hops; null when this try failed (the caller retries). */
export function makeQuestion(world: World, rng: Rng, kind: QuestionKind, hops: 2 | 3 | 4): GoldQuestion | null {
  switch (kind) {
    case 'chain':
      return chainQuestion(world, rng, hops);
    case 'turnAge':
      return turnAgeQuestion(world, rng, hops);
    case 'yearsBetween':
    case 'ageAt':
      if (hops === 2) throw new Error(`synth: a ${kind} question needs 3 or 4 hops`);
      return twoSidedQuestion(world, rng, hops, kind);
  }
}

/** Question shapes of the generator's mix (generate.ts `shapes`). */
export type Shape = 'chain' | 'comparison' | 'aggregation';

/** Lays year sides out as gold hops: chained sides first (MuSiQue's 4hop3 order), the rest in item order. */
function sideHops(
  world: World,
  sides: readonly YearSide[],
): { hops: GoldHop[]; yearRef: Map<YearSide, string>; nameRef: Map<YearSide, string> } {
  const ordered = [...sides.filter((s) => s.steps.length > 1), ...sides.filter((s) => s.steps.length === 1)];
  const hops: GoldHop[] = [];
  const yearRef = new Map<YearSide, string>();
  const nameRef = new Map<YearSide, string>();
  for (const side of ordered) {
    hops.push(...factHops(world, side.steps, hops.length));
    yearRef.set(side, `#${hops.length}`);
    // A chained side's item is the answer of the hop before its year hop; a plain one is named.
    nameRef.set(side, side.steps.length > 1 ? `#${hops.length - 1}` : side.end.name);
  }
  return { hops, yearRef, nameRef };
}

/**
 * A comparison of `items` (2-3) entities of one kind by a year relation, `hops` = items + 1 +
 * (items reached through one more hop): "Who was born first, the founder of Zorvex Labs or Dara
 * Velm?" = founder -> birthYear, birthYear -> comparison. Null when this try failed (equal years).
 */
export function comparisonQuestion(world: World, rng: Rng, items: number, hops: number): GoldQuestion | null {
  const chained = hops - items - 1;
  if (items < 2 || items > 3 || chained < 0 || chained > items || hops > 4)
    throw new Error(`synth: no comparison of ${items} items in ${hops} hops`);
  const form = rng.pick(COMPARISONS);
  const chainedAt = new Set(rng.shuffle(Array.from({ length: items }, (_, i) => i)).slice(0, chained));
  const visited = new Set<number>();
  const sides: YearSide[] = [];
  for (let i = 0; i < items; i++) {
    const side = yearSide(world, rng, form.kind, chainedAt.has(i) ? 1 : 0, visited);
    if (!side) return null;
    sides.push(side);
  }
  if (new Set(sides.map((s) => s.year)).size < sides.length) return null;
  const best = sides.reduce((a, b) => ((form.pick === 'first' ? b.year < a.year : b.year > a.year) ? b : a));
  const { hops: gold, yearRef, nameRef } = sideHops(world, sides);
  const hopQuestion = fill(form.question, {
    items: listItems(sides.map((s) => fill(form.item, { s: nameRef.get(s) as string, y: yearRef.get(s) as string }))),
  });
  gold.push({ question: hopQuestion, answer: best.end.name, relation: null, subject: null, comparison: { form } });
  return {
    shape: `${hops}hopcmp`,
    question: fill(form.question, { items: listItems(sides.map((s) => s.noun)) }),
    answer: best.end.name,
    aliases: [...best.end.aliases],
    hops: gold,
    entities: sides.flatMap((s) => entitiesOf(world, s.steps)),
  };
}

/**
 * An aggregation over `items` independent year lookups. 2 items: a two-sided question ("How many
 * years passed between E1 and E2?", "How old was P when K was founded?") in 3 or 4 hops; 3 items
 * (4 hops): "How many years passed between the earliest and the latest of E1, E2 and E3?".
 */
export function aggregationQuestion(world: World, rng: Rng, items: number, hops: number): GoldQuestion | null {
  if (items === 2 && (hops === 3 || hops === 4)) {
    const q = twoSidedQuestion(world, rng, hops, rng.pick(['yearsBetween', 'ageAt'] as const));
    return q && { ...q, shape: `${hops}hopagg` };
  }
  if (items !== 3 || hops !== 4) throw new Error(`synth: no aggregation of ${items} items in ${hops} hops`);
  const visited = new Set<number>();
  const sides: YearSide[] = [];
  for (let i = 0; i < 3; i++) {
    const side = yearSide(world, rng, rng.pick(['person', 'company'] as const), 0, visited);
    if (!side) return null;
    sides.push(side);
  }
  const years = sides.map((s) => s.year);
  const span = Math.max(...years) - Math.min(...years);
  if (span === 0) return null;
  const { hops: gold, yearRef } = sideHops(world, sides);
  const [a, b, c] = sides.map((s) => yearRef.get(s) as string) as [string, string, string];
  const arith = arithmeticHop('yearSpan', { a, b, c }, span);
  return {
    shape: '4hopagg',
    question:
      `How many years passed between the earliest and the latest of ${sides[0]?.event}, ${sides[1]?.event} and ` +
      `${sides[2]?.event}?`,
    answer: arith.answer,
    aliases: [`${span} years`],
    hops: [...gold, arith],
    entities: sides.flatMap((s) => entitiesOf(world, s.steps)),
  };
}
