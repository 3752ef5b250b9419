/**
 * A tool of the example's own, for the date questions of questions.jsonl ("How many years passed
 * between ...", "How old was X when ..."): the years between two years. `main.ts` lists it in
 * `rollout.tools` beside the built-ins; the library runs this module in a process of its own and
 * checks each call's arguments against `parameters` before `run` sees them.
 */
import { defineTool } from 'sharp-rl';

export default defineTool({
  name: 'years_between',
  description: 'The number of years from one year to a later one, e.g. from the birth year to a founding year.',
  // A JSON Schema (a zod object schema works too): two whole years.
  parameters: {
    type: 'object',
    properties: {
      from: { type: 'integer', description: 'The earlier year.' },
      to: { type: 'integer', description: 'The later year.' },
    },
    required: ['from', 'to'],
    additionalProperties: false,
  },
  run: (args) => {
    const from = Number(args['from']);
    const to = Number(args['to']);
    return `${to - from} years passed from ${from} to ${to}.`;
  },
});
