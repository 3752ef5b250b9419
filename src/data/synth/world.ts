/**
 * A random world of invented people, companies, cities and countries, with one
 * encyclopedia-style paragraph per entity. Every relation is a function (a company has one founder,
 * a city one country, a person at most one mentor...), so every question built from a chain of
 * relations has exactly one correct answer. Deterministic per seed.
 */
import { Rng } from '../../random/rng.ts';
import { NameForge, namePartition, namePool, PoolNames, type NameSource, type NameSplit } from './names.ts';
import { fill, RELATIONS, SENTENCES, type EntityKind, type RelationId } from './relations.ts';

export interface Entity {
  /** Index in World.entities. */
  id: number;
  kind: EntityKind;
  /** Full name, also the paragraph title. */
  name: string;
  /** Other accepted spellings of the name (answer_aliases): a family name, a brand without suffix. */
  aliases: string[];
  /** Relation values: entity ids for entity relations, strings for attributes (years as text). */
  facts: Partial<Record<RelationId, number | string>>;
  /** The paragraph about this entity. */
  text: string;
}

export interface World {
  seed: number;
  entities: Entity[];
  /** Entity ids by kind. */
  byKind: Record<EntityKind, number[]>;
}

export interface WorldSize {
  countries: number;
  cities: number;
  people: number;
  companies: number;
}

/** Big enough for ~10k distinct 2-4 hop questions and varied distractors; ~400 paragraphs. */
export const DEFAULT_WORLD_SIZE: WorldSize = { countries: 12, cities: 60, people: 220, companies: 100 };

const OCCUPATIONS = [
  'painter',
  'sculptor',
  'banker',
  'lawyer',
  'chemist',
  'pilot',
  'novelist',
  'surgeon',
  'teacher',
  'botanist',
  'composer',
  'diplomat',
  'journalist',
  'merchant',
  'physician',
  'poet',
  'potter',
  'tailor',
  'weaver',
  'geologist',
];
const INDUSTRIES = [
  'robotics',
  'shipping',
  'textile',
  'mining',
  'software',
  'banking',
  'brewing',
  'publishing',
  'furniture',
  'railway',
  'telecom',
  'glassware',
  'perfume',
  'toy',
  'steel',
  'fishing',
];
const COMPANY_SUFFIXES = ['Labs', 'Works', 'Group', 'Systems', 'Industries'];

const pools = new Map<number, string[]>();
/** The fixed name pool of a size, built once per process. */
function poolOf(size: number): string[] {
  let p = pools.get(size);
  if (!p) pools.set(size, (p = namePool(size)));
  return p;
}

/** The value of a relation as text: the entity's name, or the attribute itself. */
export function factText(world: World, entity: Entity, relation: RelationId): string | undefined {
  const v = entity.facts[relation];
  if (v === undefined) return undefined;
  return typeof v === 'number' ? (world.entities[v] as Entity).name : v;
}

/** The entity a relation leads to (entity relations only). */
export function factEntity(world: World, entity: Entity, relation: RelationId): Entity | undefined {
  const v = entity.facts[relation];
  return typeof v === 'number' ? world.entities[v] : undefined;
}

function validateSize(size: WorldSize): void {
  for (const [key, v] of Object.entries(size)) {
    if (!Number.isInteger(v) || v < 2) throw new Error(`synth: world size ${key} must be an integer >= 2, got ${v}`);
  }
  if (size.cities < size.countries)
    throw new Error(`synth: world size needs cities (${size.cities}) >= countries (${size.countries})`);
  if (size.people < size.companies)
    throw new Error(
      `synth: world size needs people (${size.people}) >= companies (${size.companies}), one founder each`,
    );
  if (size.people < size.cities)
    throw new Error(`synth: world size needs people (${size.people}) >= cities (${size.cities}), distinct mayors`);
}

/**
 * `names`: draw names from one part of the name space only (`namePartition`); unset, from all of it.
 */
export function createWorld(
  seed: number,
  size: WorldSize = DEFAULT_WORLD_SIZE,
  opts: { names?: NameSplit; pool?: number } = {},
): World {
  validateSize(size);
  const rng = new Rng(seed);
  const accept = opts.names ? namePartition(opts.names) : undefined;
  const names: NameSource = opts.pool ? new PoolNames(rng, poolOf(opts.pool), accept) : new NameForge(rng, accept);
  const entities: Entity[] = [];
  const byKind: Record<EntityKind, number[]> = { person: [], company: [], city: [], country: [] };
  const add = (kind: EntityKind, name: string, aliases: string[]): Entity => {
    const e: Entity = { id: entities.length, kind, name, aliases, facts: {}, text: '' };
    entities.push(e);
    byKind[kind].push(e.id);
    return e;
  };

  const countries = Array.from({ length: size.countries }, () => add('country', names.place(), []));
  const cities = Array.from({ length: size.cities }, () => add('city', names.place(), []));
  const people = Array.from({ length: size.people }, () => {
    const { first, last } = names.person();
    // The family name alone is an accepted answer: it is unique in the world by construction.
    return add('person', `${first} ${last}`, [last]);
  });
  const companies = Array.from({ length: size.companies }, () => {
    const { brand, suffix } = names.company(COMPANY_SUFFIXES);
    return add('company', `${brand} ${suffix}`, [brand]);
  });

  // Geography: every country has at least one city (its capital); the rest are spread at random.
  const shuffledCities = rng.shuffle(cities);
  shuffledCities.forEach((city, i) => {
    const country = i < countries.length ? countries[i] : rng.pick(countries);
    city.facts.country = (country as Entity).id;
  });
  for (const country of countries) {
    const own = cities.filter((c) => c.facts.country === country.id);
    country.facts.capital = rng.pick(own).id;
    country.facts.language = names.language();
  }

  // People: birth, occupation; mentors are at least 10 years older (chosen after all births exist).
  for (const p of people) {
    p.facts.birthYear = String(rng.int(1890, 1990));
    p.facts.birthCity = rng.pick(cities).id;
    p.facts.occupation = rng.pick(OCCUPATIONS);
  }
  for (const p of people) {
    if (rng.float() < 0.25) continue;
    const older = people.filter((q) => Number(q.facts.birthYear) <= Number(p.facts.birthYear) - 10);
    if (older.length > 0) p.facts.mentor = rng.pick(older).id;
  }

  // Companies: distinct founders (so "the company X founded" would be unique too), founded when the
  // founder was 20-60, no later than 2020.
  const founders = rng.shuffle(people).slice(0, companies.length);
  companies.forEach((k, i) => {
    const founder = founders[i] as Entity;
    const born = Number(founder.facts.birthYear);
    k.facts.founder = founder.id;
    k.facts.foundedYear = String(rng.int(born + 20, Math.min(born + 60, 2020)));
    k.facts.industry = rng.pick(INDUSTRIES);
    k.facts.hq = rng.pick(cities).id;
  });
  for (const p of people) {
    if (rng.float() < 0.2) continue;
    const founded = companies.find((k) => k.facts.founder === p.id);
    const options = companies.filter((k) => k !== founded);
    p.facts.employer = rng.pick(options).id;
  }

  // Mayors: distinct people, for most cities.
  const mayors = rng.shuffle(people);
  let nextMayor = 0;
  for (const c of cities) {
    if (rng.float() < 0.3) continue;
    c.facts.mayor = (mayors[nextMayor++] as Entity).id;
  }

  const world: World = { seed, entities, byKind };
  for (const e of entities) e.text = renderParagraph(world, e, rng);
  return world;
}

/** One sentence per group whose slots the entity has, one variant chosen at random. */
function renderParagraph(world: World, e: Entity, rng: Rng): string {
  const values: Record<string, string> = { s: e.name };
  for (const rel of Object.keys(e.facts) as RelationId[]) {
    if (RELATIONS[rel].subject !== e.kind) throw new Error(`synth: ${e.kind} '${e.name}' has a ${rel} fact`);
    values[rel] = factText(world, e, rel) as string;
  }
  const sentences: string[] = [];
  for (const group of SENTENCES[e.kind]) {
    const variant = rng.pick(group);
    const slots = [...variant.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as string);
    if (slots.every((s) => values[s] !== undefined)) sentences.push(fill(variant, values));
  }
  return sentences.join(' ');
}

/**
 * For each entity, the entities whose paragraph mentions it or that its paragraph mentions, sorted
 * (hard distractors: they share names with the question).
 */
export function neighbourIndex(world: World): number[][] {
  const sets = world.entities.map(() => new Set<number>());
  for (const e of world.entities) {
    for (const v of Object.values(e.facts)) {
      if (typeof v !== 'number' || v === e.id) continue;
      sets[e.id]?.add(v);
      sets[v]?.add(e.id);
    }
  }
  return sets.map((s) => [...s].sort((a, b) => a - b));
}
