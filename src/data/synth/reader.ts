import {
  ARITHMETIC,
  COMPARISONS,
  escapeRegExp,
  fill,
  hopRegex,
  RELATIONS,
  sentenceRegex,
  templatesFor,
  type ComparisonForm,
  type RelationId,
} from './relations.ts';

/**
 * How the scripted expert worker "reads": it answers a hop question of the synthetic
 * world from one paragraph by matching the world's own templates (relations.ts), and turns an
 * arithmetic hop into a mathjs expression for the calculate tool. No gold data is consulted: a wrong
 * paragraph or a wrong subject gives null.
 */

const RELATION_IDS = Object.keys(RELATIONS) as RelationId[];
const HOP_REGEXES = RELATION_IDS.map((id) => ({ id, regex: hopRegex(id) }));

function normaliseSpace(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** Which relation a hop question asks and about whom; null when it is not one of the world's. */
export function parseHopQuestion(subQuestion: string): { relation: RelationId; subject: string } | null {
  const q = normaliseSpace(subQuestion);
  for (const { id, regex } of HOP_REGEXES) {
    const m = regex.exec(q);
    if (m?.[1]) return { relation: id, subject: m[1] };
  }
  return null;
}

/**
 * The answer to a single-hop question (its #k references already replaced by answers) as stated in
 * `paragraphText`, or null when the paragraph does not state it.
 */
export function extractAnswer(subQuestion: string, paragraphText: string): string | null {
  const parsed = parseHopQuestion(subQuestion);
  if (!parsed) return null;
  const text = normaliseSpace(paragraphText);
  for (const regex of sentenceRegexes(parsed.relation, parsed.subject)) {
    const m = regex.exec(text);
    if (m?.[1]) return m[1];
  }
  return null;
}

/** Compiled sentence regexes per (relation, subject); bounded, since subjects may be model output. */
const regexCache = new Map<string, RegExp[]>();
const REGEX_CACHE_LIMIT = 20_000;

function sentenceRegexes(relation: RelationId, subject: string): RegExp[] {
  const key = `${relation}\u0000${subject}`;
  let regexes = regexCache.get(key);
  if (!regexes) {
    if (regexCache.size >= REGEX_CACHE_LIMIT) regexCache.clear();
    regexes = templatesFor(relation).map((t) => sentenceRegex(t, subject, relation));
    regexCache.set(key, regexes);
  }
  return regexes;
}

const NUMBER = '(-?\\d+(?:\\.\\d+)?)';

const ARITHMETIC_REGEXES = ARITHMETIC.map((form) => {
  const slots: string[] = [];
  let src = '';
  let last = 0;
  for (const m of form.hop.matchAll(/\{(\w+)\}/g)) {
    src += escapeRegExp(form.hop.slice(last, m.index));
    src += NUMBER;
    slots.push(m[1] as string);
    last = (m.index ?? 0) + m[0].length;
  }
  src += escapeRegExp(form.hop.slice(last));
  return { form, slots, regex: new RegExp(`^${src}$`) };
});

/**
 * A mathjs expression for an arithmetic hop whose references are replaced by numbers, e.g.
 * "How many years passed between 1950 and 1987?" -> "1987 - 1950"; null for any other question.
 */
export function arithmeticExpression(subQuestion: string): string | null {
  const q = normaliseSpace(subQuestion);
  for (const { form, slots, regex } of ARITHMETIC_REGEXES) {
    const m = regex.exec(q);
    if (!m) continue;
    const values = Object.fromEntries(slots.map((s, i) => [s, m[i + 1] as string]));
    return fill(form.expression, values);
  }
  return null;
}

const COMPARISON_REGEXES = COMPARISONS.map((form) => {
  const [before, after] = form.question.split('{items}') as [string, string];
  const [name, rest] = form.item.split('{s}') as [string, string];
  const [yearBefore, yearAfter] = rest.split('{y}') as [string, string];
  // One item: its name (lazy) and its value (anything without parentheses: a year, a reference or a report).
  const item = `${escapeRegExp(name)}(.+?)${escapeRegExp(yearBefore)}([^()]*)${escapeRegExp(yearAfter)}`;
  return {
    form,
    whole: new RegExp(`^${escapeRegExp(before)}(.+)${escapeRegExp(after)}$`),
    item: new RegExp(`(?:^|, | or )${item}(?=, | or |$)`, 'g'),
  };
});

/**
 * The items of a comparison hop ("Who was born first, A (born in 1950) or B (born in 1962)?") with
 * their values as written (years, `#k` references or whatever a report said); null for any other
 * question.
 */
export function parseComparison(
  subQuestion: string,
): { form: ComparisonForm; items: { name: string; value: string }[] } | null {
  const q = normaliseSpace(subQuestion);
  for (const { form, whole, item } of COMPARISON_REGEXES) {
    const m = whole.exec(q);
    if (!m?.[1]) continue;
    const items = [...m[1].matchAll(item)].map((x) => ({ name: x[1] as string, value: x[2] as string }));
    if (items.length >= 2) return { form, items };
  }
  return null;
}

/**
 * The answer of a comparison hop whose references are replaced by years: the item with the
 * smallest (first) or largest (last) year, the earliest-named on a tie; null when the question is no
 * comparison or a value is not a number.
 */
export function comparisonAnswer(subQuestion: string): string | null {
  const parsed = parseComparison(subQuestion);
  if (!parsed) return null;
  const values = parsed.items.map((it) => (/^-?\d+$/.test(it.value.trim()) ? Number(it.value) : Number.NaN));
  if (values.some((v) => Number.isNaN(v))) return null;
  let best = 0;
  values.forEach((v, i) => {
    const b = values[best] as number;
    if (parsed.form.pick === 'first' ? v < b : v > b) best = i;
  });
  return (parsed.items[best] as { name: string }).name;
}

/**
 * The `calculate` call that decides a comparison hop whose references are replaced by years: each
 * item as a label with its year, `argmin('A', 1950, 'B', 1962)` for "first" / "older", `argmax(...)`
 * for "last" / "younger", so the tool result is the answer itself; null when the question is no
 * comparison, a value is not a number or a name holds a quote.
 */
export function comparisonExpression(subQuestion: string): string | null {
  const parsed = parseComparison(subQuestion);
  if (!parsed) return null;
  const items = parsed.items.map((it) => ({ name: it.name.trim(), value: it.value.trim() }));
  if (!items.every((it) => /^-?\d+$/.test(it.value) && !it.name.includes("'"))) return null;
  return `${parsed.form.pick === 'first' ? 'argmin' : 'argmax'}(${items
    .map((it) => `'${it.name}', ${it.value}`)
    .join(', ')})`;
}

/** The item of a comparison hop that its `calculate` call named (the tool result); null when it names none of them. */
export function comparisonItemWith(subQuestion: string, result: string): string | null {
  const item = parseComparison(subQuestion)?.items.find((it) => it.name.trim() === result.trim());
  return item ? item.name.trim() : null;
}

/** Replaces `#k` references (1-based, MuSiQue style) by the answers of earlier hops. */
export function substituteRefs(question: string, answers: readonly string[]): string {
  return question.replace(/#(\d+)/g, (ref, k: string) => answers[Number(k) - 1] ?? ref);
}
