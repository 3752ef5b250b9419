import { z } from 'zod';

/** Where training episodes come from. */
export const dataSection = z
  .strictObject({
    source: z.enum(['synthetic', 'musique', 'hotpotqa', '2wiki']).default('synthetic').describe('Episode source for training.'),
    path: z.string().default('').describe('Dataset file for non-synthetic sources.'),
    benchmarkHeldOut: z.number().int().nonnegative().default(50).describe('Non-synthetic sources: the last n answerable episodes of data.path are held out for accuracy before/after RL (at most half the file).'),
    synthetic: z
      .strictObject({
        seed: z.number().int().nonnegative().default(1).describe('Seed of the synthetic world.'),
        train: z.number().int().positive().default(2000).describe('Synthetic training episodes.'),
        heldOut: z.number().int().positive().default(100).describe('Held-out synthetic episodes for accuracy before/after RL.'),
        worlds: z
          .enum(['fresh', 'shared'])
          .default('fresh')
          .describe('fresh: every episode has a world of its own and held-out names come from a part of the name space training never uses, so answers must be read and copied, not recalled; shared: one world for all episodes (names recur, so a model can memorise them).'),
        minHops: z.number().int().min(2).max(4).default(2).describe('Fewest hops of a question.'),
        maxHops: z.number().int().min(2).max(4).default(4).describe('Most hops of a question.'),
        namePool: z
          .number()
          .int()
          .nonnegative()
          .default(0)
          .describe('0: every name is made of fresh syllables; N: names recombine N pool words (each word one token after BPE fitting), people and companies of held-out worlds still never occur in training.'),
        world: z
          .strictObject({
            countries: z.number().int().positive().default(12).describe('Countries in the world.'),
            cities: z.number().int().positive().default(60).describe('Cities.'),
            people: z.number().int().positive().default(220).describe('People (most questions are about them).'),
            companies: z.number().int().positive().default(100).describe('Companies.'),
          })
          .prefault({})
          .describe('World size (src/data/synth/world.ts DEFAULT_WORLD_SIZE): of the one shared world, or of each episode\'s own world when worlds = fresh.'),
      })
      .prefault({})
      .describe('Synthetic multi-hop world (sharp data synth).'),
  })
  .describe('Training data.');
