import { z } from 'zod';
import { count, timerSeconds } from './bounds.ts';

/**
 * Rollouts and counterfactual replays served by `sharp worker` processes through BullMQ on Redis
 * (docs/operations.md, "Distributed rollouts"). Off while `redis` is empty and `local` is false.
 */
export const distributedSection = z
  .strictObject({
    redis: z
      .string()
      .default('')
      .describe(
        'Redis URL (redis://host:port/db); when set, every step enqueues one job per question group for `sharp ' +
          'worker` processes. Empty = rollouts run in the trainer process.',
      ),
    queue: z
      .string()
      .regex(/^[A-Za-z0-9_-]+$/, 'letters, digits, - and _ only')
      .default('sharp-rollout')
      .describe('BullMQ queue name (the workers serve the same name: sharp worker --queue).'),
    jobTimeoutS: timerSeconds(
      900,
      'A step fails with one line when its group jobs have not all finished this many seconds after they were ' +
        'enqueued (Redis unreachable counts too).',
    ),
    retries: count(0, 100, 2, 'Retries of a failed group or replay job before the step fails.'),
    policyDir: z
      .string()
      .default('')
      .describe(
        "Shared folder the trainer publishes each step's weights to (<policyDir>/<run>/v<step>), at the same path " +
          'on every worker host. Default: <run folder>/policies.',
      ),
    local: z
      .boolean()
      .default(false)
      .describe(
        'Run the same group and replay jobs in the trainer process, without Redis: the reference a distributed run ' +
          'equals exactly.',
      ),
  })
  .describe('Distributed rollouts on BullMQ + Redis.');
