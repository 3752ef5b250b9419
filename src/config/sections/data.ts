import { z } from 'zod';

/**
 * Most synthetic episodes of one kind. Generating one takes ~10 ms and ~8 KB of memory here, so
 * 100,000 is minutes and under 1 GB; more is a typo, not a plan.
 */
export const MAX_SYNTHETIC_EPISODES = 100_000;
/** Most entities of one kind in a synthetic world (each fresh episode builds a world of this size). */
const MAX_WORLD_ENTITIES = 10_000;
const shapeWeight = (dflt: number, what: string) =>
  z.number().min(0).max(1e6).default(dflt).describe(`Weight of ${what}.`);
/**
 * Most entities of one fresh world (worlds = fresh): held-out worlds draw names from a part of the
 * name space that runs out near 8,000 people (src/data/synth/names.ts), so 5,000 leaves a margin.
 */
const MAX_FRESH_WORLD = 5_000;
/**
 * Largest name pool (data.synthetic.namePool): the pool is built from 2-syllable words by one fixed
 * generator (src/data/synth/names.ts namePool), whose syllable space runs out at 104,120 words. The
 * smallest is what one world takes plus a reserve (below), so never below the 8 words PoolNames needs.
 */
export const MAX_NAME_POOL = 100_000;
/**
 * Unused pool words every world keeps in reserve: a held-out world takes a family name or brand
 * only when the whole name falls in the held-out eighth of the name space, so with 256 unused words
 * the chance that none fits is (7/8)^256, below 1e-14.
 */
const NAME_POOL_RESERVE = 256;

/** Pool words one world takes: a word per country, city and company, two per person, and a language per country. */
function worldWords(w: { countries: number; cities: number; people: number; companies: number }): number {
  return 2 * w.countries + w.cities + 2 * w.people + w.companies;
}
const worldCount = (dflt: number, what: string) =>
  z.number().int().min(2).max(MAX_WORLD_ENTITIES).default(dflt).describe(`${what} (at most ${MAX_WORLD_ENTITIES}).`);

/** Where training episodes come from. */
export const dataSection = z
  .strictObject({
    source: z
      .enum(['synthetic', 'musique', 'hotpotqa', '2wiki', 'jsonl'])
      .default('synthetic')
      .describe('Episode source for training (jsonl: your own questions, docs/extending.md).'),
    path: z.string().default('').describe('Dataset file for non-synthetic sources.'),
    benchmarkHeldOut: z
      .number()
      .int()
      .nonnegative()
      .max(MAX_SYNTHETIC_EPISODES)
      .default(50)
      .describe(
        'Non-synthetic sources: the last n answerable episodes of data.path are held out for accuracy before/after ' +
          `RL (at most half the file, and at most ${MAX_SYNTHETIC_EPISODES}).`,
      ),
    synthetic: z
      .strictObject({
        seed: z.number().int().nonnegative().default(1).describe('Seed of the synthetic world.'),
        train: z
          .number()
          .int()
          .positive()
          .max(MAX_SYNTHETIC_EPISODES)
          .default(2000)
          .describe(`Synthetic training episodes (at most ${MAX_SYNTHETIC_EPISODES}).`),
        heldOut: z
          .number()
          .int()
          .positive()
          .max(MAX_SYNTHETIC_EPISODES)
          .default(100)
          .describe(`Held-out synthetic episodes for accuracy before/after RL (at most ${MAX_SYNTHETIC_EPISODES}).`),
        worlds: z
          .enum(['fresh', 'shared'])
          .default('fresh')
          .describe(
            'fresh: every episode has a world of its own and held-out names come from a part of the name space ' +
              'training never uses, so answers must be read and copied, not recalled; shared: one world for all ' +
              'episodes (names recur, so a model can memorise them).',
          ),
        minHops: z.number().int().min(2).max(4).default(2).describe('Fewest hops of a question.'),
        maxHops: z.number().int().min(2).max(4).default(4).describe('Most hops of a question.'),
        namePool: z
          .number()
          .int()
          .nonnegative()
          .max(MAX_NAME_POOL)
          .default(0)
          .describe(
            '0: every name is made of fresh syllables; N: names recombine N pool words (each word one token after ' +
              'BPE fitting), people and companies of held-out worlds still never occur in training. At most ' +
              `${MAX_NAME_POOL} (the syllable space of the pool's words) and at least the words one world takes ` +
              `(2 per country and person, 1 per city and company) plus ${NAME_POOL_RESERVE}.`,
          ),
        world: z
          .strictObject({
            countries: worldCount(12, 'Countries in the world'),
            cities: worldCount(60, 'Cities'),
            people: worldCount(220, 'People (most questions are about them)'),
            companies: worldCount(100, 'Companies'),
          })
          .prefault({})
          .describe(
            'World size (src/data/synth/world.ts DEFAULT_WORLD_SIZE): of the one shared world, or of each ' +
              "episode's own world when worlds = fresh.",
          ),
        shapes: z
          .strictObject({
            chain: shapeWeight(
              1,
              'chain: linear chains plus the two-sided year questions the world always had ("How many years passed ' +
                'between the founding of X and the birth of the mentor of Y?")',
            ),
            comparison: shapeWeight(
              0,
              'comparison: independent year lookups of 2-3 items, then a comparison hop whose answer is an item ' +
                '("Who was born first, X or Y?", "Which company is older, A or B?")',
            ),
            aggregation: shapeWeight(
              0,
              'aggregation: 2-3 independent year lookups joined by an arithmetic hop ("How many years passed ' +
                'between the earliest and the latest of ...?")',
            ),
          })
          .prefault({})
          .describe(
            'Weights of the question shapes (normalised; chain alone is the chain-only generator, record for ' +
              'record). Comparisons and aggregations have lookups a planner can delegate side by side.',
          ),
        compareItems: z
          .strictObject({
            min: z.number().int().min(2).max(3).default(2).describe('Fewest items of a comparison or aggregation.'),
            max: z
              .number()
              .int()
              .min(2)
              .max(3)
              .default(3)
              .describe('Most items (an item count above maxHops - 1 is never drawn).'),
          })
          .prefault({})
          .describe(
            'Items a comparison or aggregation question compares; its hops are items + 1, plus one per item reached ' +
              'through one more hop, within minHops..maxHops.',
          ),
        misleading: z
          .strictObject({
            rate: z
              .number()
              .min(0)
              .max(1)
              .default(0)
              .describe(
                'Share of episodes with a planted wrong claim about one needed fact, in a paragraph search can ' +
                  'return whose title says what it is ("Rumour about X", "Unverified forum post about X"); the ' +
                  'episode records the fact and the wrong value (meta.planted).',
              ),
          })
          .prefault({})
          .describe('Misleading sources (src/data/synth/misleading.ts).'),
      })
      .superRefine((s, ctx) => {
        const { chain, comparison, aggregation } = s.shapes;
        if (chain + comparison + aggregation <= 0)
          ctx.addIssue({ code: 'custom', path: ['shapes'], message: 'at least one shape weight must be > 0' });
        if (s.compareItems.min > s.compareItems.max)
          ctx.addIssue({
            code: 'custom',
            path: ['compareItems'],
            message: `min (${s.compareItems.min}) must be <= max (${s.compareItems.max})`,
          });
        if (comparison + aggregation > 0 && s.compareItems.min + 1 > s.maxHops) {
          ctx.addIssue({
            code: 'custom',
            path: ['compareItems'],
            message:
              `a comparison or aggregation of ${s.compareItems.min} items needs ${s.compareItems.min + 1} hops, ` +
              `above maxHops (${s.maxHops})`,
          });
        }
        // The world's own constraints (src/data/synth/world.ts validateSize), checked before any run folder exists.
        const w = s.world;
        if (w.cities < w.countries)
          ctx.addIssue({
            code: 'custom',
            path: ['world', 'cities'],
            message: `cities (${w.cities}) must be >= countries (${w.countries}): every country has a capital`,
          });
        if (w.people < w.companies)
          ctx.addIssue({
            code: 'custom',
            path: ['world', 'people'],
            message: `people (${w.people}) must be >= companies (${w.companies}): one founder each`,
          });
        if (w.people < w.cities)
          ctx.addIssue({
            code: 'custom',
            path: ['world', 'people'],
            message: `people (${w.people}) must be >= cities (${w.cities}): mayors are distinct people`,
          });
        const words = worldWords(w) + NAME_POOL_RESERVE;
        if (s.namePool > 0 && s.namePool < words)
          ctx.addIssue({
            code: 'custom',
            path: ['namePool'],
            message:
              `a pool of ${s.namePool} words cannot name a world of this size: it takes ${words - NAME_POOL_RESERVE} ` +
              `words (2 per country and person, 1 per city and company) and keeps ${NAME_POOL_RESERVE} in reserve, ` +
              `so at least ${words}`,
          });
        const total = w.people + w.companies + w.cities + w.countries;
        if (s.worlds === 'fresh' && total > MAX_FRESH_WORLD)
          ctx.addIssue({
            code: 'custom',
            path: ['world'],
            message:
              `a fresh world holds at most ${MAX_FRESH_WORLD} entities (names of held-out worlds run out), got ` +
              `${total}`,
          });
      })
      .prefault({})
      .describe('Synthetic multi-hop world (sharp data synth).'),
  })
  .describe('Training data.');
