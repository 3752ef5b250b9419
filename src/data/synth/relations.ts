/**
 * The grammar of the synthetic world, in one place: which relations exist, how a hop question asks
 * each one, how a composed question describes an intermediate entity, and the sentences a paragraph
 * states each fact with. The generator (world.ts, questions.ts) writes text from these templates and
 * the reader (reader.ts) parses text with regexes derived from the same templates, so the two cannot
 * drift apart.
 */

export type EntityKind = 'person' | 'company' | 'city' | 'country';

/** How a slot's value is written: a capitalised name, a 4-digit year, or lowercase words. */
type ValueKind = 'name' | 'year' | 'word';

export type RelationId =
  | 'founder'
  | 'foundedYear'
  | 'industry'
  | 'hq'
  | 'birthCity'
  | 'birthYear'
  | 'occupation'
  | 'employer'
  | 'mentor'
  | 'country'
  | 'mayor'
  | 'capital'
  | 'language';

export interface Relation {
  id: RelationId;
  subject: EntityKind;
  /** Kind of the entity the relation leads to; null for attributes (years, words). */
  object: EntityKind | null;
  value: ValueKind;
  /** Single-hop question; `{s}` is the subject's name or a `#k` reference. */
  hop: string;
  /** Noun phrase for the object, used to nest this hop inside a composed question (entity relations). */
  describe?: string;
}

/**
 * Hop questions reuse the words of the paragraph sentences ("born", "mentor", "headquartered",
 * "capital") so that BM25 ranks the support paragraph first (>= 99% at top 2).
 */
export const RELATIONS: Record<RelationId, Relation> = {
  founder: {
    id: 'founder',
    subject: 'company',
    object: 'person',
    value: 'name',
    hop: 'Who founded {s}?',
    describe: 'the founder of {s}',
  },
  foundedYear: {
    id: 'foundedYear',
    subject: 'company',
    object: null,
    value: 'year',
    hop: 'In what year was {s} founded?',
  },
  industry: { id: 'industry', subject: 'company', object: null, value: 'word', hop: 'What industry is {s} in?' },
  hq: {
    id: 'hq',
    subject: 'company',
    object: 'city',
    value: 'name',
    hop: 'In which city is {s} headquartered?',
    describe: 'the city where {s} is headquartered',
  },
  birthCity: {
    id: 'birthCity',
    subject: 'person',
    object: 'city',
    value: 'name',
    hop: 'In which city was {s} born?',
    describe: 'the birthplace of {s}',
  },
  birthYear: { id: 'birthYear', subject: 'person', object: null, value: 'year', hop: 'In what year was {s} born?' },
  occupation: {
    id: 'occupation',
    subject: 'person',
    object: null,
    value: 'word',
    hop: 'What was the occupation of {s}?',
  },
  employer: {
    id: 'employer',
    subject: 'person',
    object: 'company',
    value: 'name',
    hop: 'Which company employed {s}?',
    describe: 'the company that employed {s}',
  },
  mentor: {
    id: 'mentor',
    subject: 'person',
    object: 'person',
    value: 'name',
    hop: 'Who was the mentor of {s}?',
    describe: 'the mentor of {s}',
  },
  country: {
    id: 'country',
    subject: 'city',
    object: 'country',
    value: 'name',
    hop: 'In which country is {s} located?',
    describe: 'the country where {s} is located',
  },
  mayor: {
    id: 'mayor',
    subject: 'city',
    object: 'person',
    value: 'name',
    hop: 'Who is the mayor of {s}?',
    describe: 'the mayor of {s}',
  },
  capital: {
    id: 'capital',
    subject: 'country',
    object: 'city',
    value: 'name',
    hop: 'What is the capital of {s}?',
    describe: 'the capital of {s}',
  },
  language: {
    id: 'language',
    subject: 'country',
    object: null,
    value: 'name',
    hop: 'What is the official language of {s}?',
  },
};

/**
 * Paragraph sentences per entity kind: each group states one or more facts; one variant per group
 * is chosen per entity when the world is made. A group is left out when the entity lacks one of its
 * slots (a person without a mentor). Every sentence names its subject in full, so a sentence can be
 * read alone (no pronouns to resolve).
 */
export const SENTENCES: Record<EntityKind, string[][]> = {
  person: [
    ['{s} was a {occupation} by occupation.', 'By occupation, {s} was a {occupation}.'],
    ['{s} was born in {birthCity} in {birthYear}.', '{s} was born in {birthYear} in the city of {birthCity}.'],
    ['{s} was employed by {employer}.', '{employer} employed {s} for many years.'],
    ['The mentor of {s} was {mentor}.', '{mentor} was the mentor of {s}.'],
  ],
  company: [
    [
      '{s} is a {industry} company, founded by {founder} in {foundedYear}.',
      '{s} was founded in {foundedYear} by {founder} as a {industry} company.',
    ],
    ['{s} is headquartered in {hq}.', 'The headquarters of {s} are in {hq}.'],
  ],
  city: [
    ['{s} is a city located in {country}.', '{s} is a city in the country of {country}, where it is located.'],
    ['The mayor of {s} is {mayor}.', '{mayor} is the mayor of {s}.'],
  ],
  country: [
    ['{s} is a country whose capital is {capital}.', 'The capital of {s} is {capital}.'],
    ['The official language of {s} is {language}.', '{language} is the official language of {s}.'],
  ],
};

const VALUE_PATTERN: Record<ValueKind, string> = {
  name: '[A-Z][a-z]+(?: [A-Z][a-z]+)*',
  year: '\\d{4}',
  word: '[a-z]+(?: [a-z]+)*',
};

export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Fills `{slot}` placeholders; throws on a slot without a value (a generator bug, not bad input). */
export function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (_, slot: string) => {
    const v = values[slot];
    if (v === undefined) throw new Error(`synth: template '${template}' has no value for slot {${slot}}`);
    return v;
  });
}

/**
 * A regex that matches one sentence template with the subject fixed, capturing the value of
 * `target`. A sentence starts at the text's start or after ". " so a name cannot run across
 * sentences.
 */
export function sentenceRegex(template: string, subject: string, target: RelationId): RegExp {
  let src = '';
  let last = 0;
  for (const m of template.matchAll(/\{(\w+)\}/g)) {
    src += escapeRegExp(template.slice(last, m.index));
    const slot = m[1] as string;
    if (slot === 's') src += escapeRegExp(subject);
    else {
      const rel = RELATIONS[slot as RelationId];
      if (!rel) throw new Error(`synth: unknown slot {${slot}} in '${template}'`);
      const pattern = VALUE_PATTERN[rel.value];
      src += slot === target ? `(${pattern})` : `(?:${pattern})`;
    }
    last = (m.index ?? 0) + m[0].length;
  }
  src += escapeRegExp(template.slice(last));
  return new RegExp(`(?:^|(?<=\\. ))${src}`);
}

/** All sentence templates that state `relation` (its subject kind's groups that mention the slot). */
export function templatesFor(relation: RelationId): string[] {
  const kind = RELATIONS[relation].subject;
  return SENTENCES[kind].flat().filter((t) => t.includes(`{${relation}}`));
}

/** A regex that matches a hop question of `relation`, capturing the subject. */
export function hopRegex(relation: RelationId): RegExp {
  const [before, after] = RELATIONS[relation].hop.split('{s}') as [string, string];
  return new RegExp(`^${escapeRegExp(before)}(.+?)${escapeRegExp(after)}$`);
}

/** Arithmetic hops: how each is asked (after #k substitution, numbers) and the expression it means. */
export interface ArithmeticForm {
  id: 'yearsBetween' | 'ageAt' | 'yearAfter' | 'yearSpan';
  /** Hop question with `{a}`, `{b}` = earlier hop answers (as `#k` in the record) and `{n}` a constant. */
  hop: string;
  /** mathjs expression of the same slots. */
  expression: string;
}

export const ARITHMETIC: ArithmeticForm[] = [
  { id: 'yearsBetween', hop: 'How many years passed between {a} and {b}?', expression: '{b} - {a}' },
  { id: 'ageAt', hop: 'How old was a person born in {a} in the year {b}?', expression: '{b} - {a}' },
  { id: 'yearAfter', hop: 'What year is {n} years after {a}?', expression: '{a} + {n}' },
  // Aggregation over three independent year lookups (mathjs max/min).
  {
    id: 'yearSpan',
    hop: 'How many years passed between the earliest and the latest of {a}, {b} and {c}?',
    expression: 'max({a}, {b}, {c}) - min({a}, {b}, {c})',
  },
];

/**
 * Comparison questions over one year relation of 2-3 items: the question names the items, the
 * comparison hop names them again with `#k` references to their year hops, and its answer is the
 * item with the smallest (`first`) or largest (`last`) year. Ties are never generated.
 */
export interface ComparisonForm {
  id: 'bornFirst' | 'bornLast' | 'olderCompany' | 'youngerCompany';
  kind: 'person' | 'company';
  relation: 'birthYear' | 'foundedYear';
  /** `{items}`: "A or B", "A, B or C". */
  question: string;
  /** One item in the comparison hop: `{s}` the item, `{y}` its year (a `#k` reference in the record). */
  item: string;
  pick: 'first' | 'last';
}

export const COMPARISONS: ComparisonForm[] = [
  {
    id: 'bornFirst',
    kind: 'person',
    relation: 'birthYear',
    question: 'Who was born first, {items}?',
    item: '{s} (born in {y})',
    pick: 'first',
  },
  {
    id: 'bornLast',
    kind: 'person',
    relation: 'birthYear',
    question: 'Who was born last, {items}?',
    item: '{s} (born in {y})',
    pick: 'last',
  },
  {
    id: 'olderCompany',
    kind: 'company',
    relation: 'foundedYear',
    question: 'Which company is older, {items}?',
    item: '{s} (founded in {y})',
    pick: 'first',
  },
  {
    id: 'youngerCompany',
    kind: 'company',
    relation: 'foundedYear',
    question: 'Which company is younger, {items}?',
    item: '{s} (founded in {y})',
    pick: 'last',
  },
];

/** "A or B", "A, B or C". */
export function listItems(items: readonly string[]): string {
  if (items.length < 2) throw new Error(`synth: a comparison needs at least 2 items, got ${items.length}`);
  return `${items.slice(0, -1).join(', ')} or ${items[items.length - 1] as string}`;
}

/**
 * Titles of planted unreliable paragraphs: each says what the paragraph is, so a careful reader can
 * tell it from the encyclopedia paragraph titled with the entity's name alone. No colon: a search
 * hit is shown as `[idx] Title: text`.
 */
export const UNRELIABLE_TITLES = [
  'Rumour about {s}',
  'Unverified forum post about {s}',
  'Unconfirmed gossip about {s}',
];

const UNRELIABLE_TITLE_REGEX = new RegExp(
  `^(?:${UNRELIABLE_TITLES.map((t) => escapeRegExp(t).replace(escapeRegExp('{s}'), '.+')).join('|')})$`,
);

/** Whether a paragraph title marks an unreliable source (a planted claim). */
export function isUnreliableTitle(title: string): boolean {
  return UNRELIABLE_TITLE_REGEX.test(title);
}

/** A sentence closing every planted paragraph, after the claim (so the claim still reads as a template sentence). */
export const UNRELIABLE_NOTE = 'This claim has not been verified.';
