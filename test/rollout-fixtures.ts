import type { Episode } from '../src/data/episode.ts';
import { configSchema } from '../src/config/schema.ts';
import type { RolloutConfig } from '../src/rollout/engine.ts';

/**
 * A hand-written two-hop episode for the engine tests (its paragraphs are what the real search tool
 * indexes), and the rollout config with schema defaults plus overrides.
 */
export function handEpisode(id = 'hand1'): Episode {
  return {
    id,
    question: 'In which year was the founder of Zorvex born?',
    answers: ['1950'],
    paragraphs: [
      { idx: 0, title: 'Zorvex', text: 'Zorvex is a company founded by Alin Marek in 1975.' },
      { idx: 1, title: 'Alin Marek', text: 'Alin Marek was born in 1950 in Kelvar.' },
      { idx: 2, title: 'Kelvar', text: 'Kelvar is a city in Dunmore.' },
      { idx: 3, title: 'Bravo Tull', text: 'Bravo Tull was born in 1961 in Osk.' },
    ],
    decomposition: [
      { id: 1, question: 'Who founded Zorvex?', answer: 'Alin Marek', paragraphSupportIdx: 0 },
      { id: 2, question: 'In which year was #1 born?', answer: '1950', paragraphSupportIdx: 1 },
    ],
  };
}

export function rolloutConfig(overrides: Record<string, unknown> = {}): RolloutConfig {
  return configSchema.parse({ rollout: overrides }).rollout;
}
