/**
 * Misleading sources: a paragraph that states a wrong value for one fact the question needs, in the
 * world's own sentence templates (so a reader that trusts it reads the wrong value exactly as it
 * would read the right one), titled as what it is ("Rumour about X", "Unverified forum post about
 * X") and closed by a sentence saying the claim is unverified. It takes the place of one
 * non-supporting paragraph, so the record keeps its paragraph count and its support.
 *
 * The wrong value is one that matters: a year moved by 1-15 years (in a comparison, moved past the
 * other items so the comparison's answer flips; in a span, moved past one end of it), a name or word
 * another entity of the world has.
 */
import type { Rng } from '../../random/rng.ts';
import type { GoldHop, GoldQuestion } from './questions.ts';
import { parseComparison } from './reader.ts';
import type { SynthRecord } from './record.ts';
import { fill, RELATIONS, SENTENCES, UNRELIABLE_NOTE, UNRELIABLE_TITLES, type RelationId } from './relations.ts';
import { factText, type Entity, type World } from './world.ts';

/** A year a planted claim states instead of `hop`'s answer. */
function wrongYear(q: GoldQuestion, hopIndex: number, rng: Rng): string {
  const right = Number((q.hops[hopIndex] as GoldHop).answer);
  const d = rng.int(1, 15);
  const last = q.hops[q.hops.length - 1] as GoldHop;
  if (last.arithmetic?.form.id === 'yearSpan') {
    // A year inside the span leaves the span as it is: move it past one end (an end, past itself),
    // so the span grows (moving the earliest past the latest could keep its length).
    const years = Object.values(last.arithmetic.slots).map((ref) =>
      Number((q.hops[Number(ref.slice(1)) - 1] as GoldHop).answer),
    );
    const [lo, hi] = [Math.min(...years), Math.max(...years)];
    const down = right === lo || (right !== hi && rng.float() < 0.5);
    return String(down ? lo - d : hi + d);
  }
  const items = last.comparison ? parseComparison(last.question)?.items : undefined;
  const refs = items?.map((it) => /^#(\d+)$/.exec(it.value)?.[1]).map(Number) ?? [];
  if (!last.comparison || !refs.includes(hopIndex + 1)) return String(rng.float() < 0.5 ? right - d : right + d);
  // Flip the comparison: the winner moves past every other item, any other item past the winner.
  const years = refs.map((k) => Number((q.hops[k - 1] as GoldHop).answer));
  const others = years.filter((y) => y !== right);
  const first = last.comparison.form.pick === 'first';
  const winner = first ? Math.min(...years) : Math.max(...years);
  if (right === winner) return String(first ? Math.max(...others) + d : Math.min(...others) - d);
  return String(first ? winner - d : winner + d);
}

/** Another value the relation takes in the world (an entity of the object's kind, or another entity's attribute). */
function wrongValue(world: World, subject: Entity, relation: RelationId, right: string, rng: Rng): string | null {
  const rel = RELATIONS[relation];
  const candidates = rel.object
    ? world.byKind[rel.object].map((id) => (world.entities[id] as Entity).name)
    : world.byKind[rel.subject].flatMap((id) => {
        const v = factText(world, world.entities[id] as Entity, relation);
        return v === undefined ? [] : [v];
      });
  const options = [...new Set(candidates)].filter((v) => v !== right && v !== subject.name).sort();
  return options.length > 0 ? rng.pick(options) : null;
}

/** The sentence group stating `relation` about `subject`, with `wrong` in place of the true value. */
function claimText(world: World, subject: Entity, relation: RelationId, wrong: string, rng: Rng): string {
  const values: Record<string, string> = { s: subject.name };
  for (const r of Object.keys(subject.facts) as RelationId[]) values[r] = factText(world, subject, r) as string;
  values[relation] = wrong;
  const group = SENTENCES[subject.kind].find((g) => g.some((t) => t.includes(`{${relation}}`)));
  if (!group) throw new Error(`synth: no sentence states ${relation}`);
  return `${fill(rng.pick(group), values)} ${UNRELIABLE_NOTE}`;
}

/**
 * `record` with one fact hop's claim planted: the hop drawn uniformly among fact hops, the planted
 * paragraph in place of a uniformly drawn non-supporting paragraph. Unchanged (and no `planted`)
 * when no fact hop admits a wrong value.
 */
export function plantClaim(world: World, q: GoldQuestion, record: SynthRecord, rng: Rng): SynthRecord {
  const factHops = q.hops.flatMap((h, i) => (h.subject && h.relation ? [i] : []));
  for (const hopIndex of rng.shuffle(factHops)) {
    const hop = q.hops[hopIndex] as GoldHop;
    const subject = hop.subject as Entity;
    const relation = hop.relation as RelationId;
    const wrong =
      RELATIONS[relation].value === 'year'
        ? wrongYear(q, hopIndex, rng)
        : wrongValue(world, subject, relation, hop.answer, rng);
    if (wrong === null || wrong === hop.answer) continue;
    const slots = record.paragraphs.flatMap((p) => (p.is_supporting ? [] : [p.idx]));
    if (slots.length === 0) return record;
    const at = rng.pick(slots);
    const paragraphs = record.paragraphs.map((p) =>
      p.idx === at
        ? {
            idx: p.idx,
            title: fill(rng.pick(UNRELIABLE_TITLES), { s: subject.name }),
            paragraph_text: claimText(world, subject, relation, wrong, rng),
            is_supporting: false,
          }
        : p,
    );
    return {
      ...record,
      paragraphs,
      planted: { hop: hopIndex, subject: subject.name, relation, wrong, right: hop.answer, paragraph_idx: at },
    };
  }
  return record;
}
