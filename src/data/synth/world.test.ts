import { describe, expect, it } from 'vitest';
import { createWorld, factEntity, neighbourIndex, type Entity } from './world.ts';
import { RELATIONS, type RelationId } from './relations.ts';
import { extractAnswer } from './reader.ts';

const world = createWorld(5);
const { entities } = world;
const of = (kind: Entity['kind']) => world.byKind[kind].map((id) => entities[id] as Entity);

describe('synthetic world', () => {
  it('has the default size and one paragraph per entity with unique titles', () => {
    expect(world.byKind.country.length).toBe(12);
    expect(world.byKind.city.length).toBe(60);
    expect(world.byKind.person.length).toBe(220);
    expect(world.byKind.company.length).toBe(100);
    expect(new Set(entities.map((e) => e.name)).size).toBe(entities.length);
    for (const e of entities) expect(e.text.length).toBeGreaterThan(20);
  });

  it('is deterministic per seed', () => {
    expect(createWorld(5).entities.map((e) => e.text)).toEqual(entities.map((e) => e.text));
    expect(createWorld(6).entities.map((e) => e.text)).not.toEqual(entities.map((e) => e.text));
  });

  it('keeps facts consistent: capitals in their country, mentors 10+ years older, founders distinct and adult', () => {
    for (const c of of('country')) expect(factEntity(world, c, 'capital')?.facts.country).toBe(c.id);
    for (const p of of('person')) {
      const m = factEntity(world, p, 'mentor');
      if (m) expect(Number(p.facts.birthYear) - Number(m.facts.birthYear)).toBeGreaterThanOrEqual(10);
      expect(factEntity(world, p, 'employer')?.facts.founder).not.toBe(p.id);
    }
    const founders = of('company').map((k) => k.facts.founder);
    expect(new Set(founders).size).toBe(founders.length);
    for (const k of of('company')) {
      const age = Number(k.facts.foundedYear) - Number(factEntity(world, k, 'founder')?.facts.birthYear);
      expect(age).toBeGreaterThanOrEqual(20);
      expect(age).toBeLessThanOrEqual(60);
      expect(Number(k.facts.foundedYear)).toBeLessThanOrEqual(2020);
    }
    const mayors = of('city').flatMap((c) => (c.facts.mayor === undefined ? [] : [c.facts.mayor]));
    expect(new Set(mayors).size).toBe(mayors.length);
  });

  it("states each fact in exactly one paragraph of the world: its subject's", () => {
    // Read every fact question against every paragraph: only the subject's paragraph may answer it,
    // with the fact's value. This is what makes every composed question's answer unique.
    let checked = 0;
    for (const e of entities.filter((_, i) => i % 7 === 0)) {
      for (const rel of Object.keys(e.facts) as RelationId[]) {
        const q = RELATIONS[rel].hop.replace('{s}', e.name);
        const answering = entities.filter((p) => extractAnswer(q, p.text) !== null);
        expect(answering.map((p) => p.id)).toEqual([e.id]);
        const v = e.facts[rel];
        expect(extractAnswer(q, e.text)).toBe(typeof v === 'number' ? entities[v]?.name : v);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(150);
  });

  it('indexes neighbours both ways', () => {
    const nb = neighbourIndex(world);
    const k = of('company')[0] as Entity;
    const founder = k.facts.founder as number;
    expect(nb[k.id]).toContain(founder);
    expect(nb[founder]).toContain(k.id);
    expect(nb[k.id]).not.toContain(k.id);
  });

  it('rejects impossible sizes with a one-line error', () => {
    expect(() => createWorld(1, { countries: 5, cities: 3, people: 10, companies: 5 })).toThrow(
      'synth: world size needs cities (3) >= countries (5)',
    );
    expect(() => createWorld(1, { countries: 2, cities: 3, people: 4, companies: 5 })).toThrow(
      'synth: world size needs people (4) >= companies (5), one founder each',
    );
  });
});
