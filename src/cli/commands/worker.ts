import { workerRecipe } from '../../recipes/worker.ts';

/**
 * `sharp worker --redis URL [--concurrency N] [--queue NAME] [--backend B] [--lock-s S]`: serves
 * the rollout and replay jobs of training runs with rollout.distributed.redis set (recipe:
 * src/recipes/worker.ts). Run one per host (or several); `docker compose up --scale worker=4`.
 */
export async function run(opts: Record<string, unknown>): Promise<void> {
  await workerRecipe({
    redis: String(opts.redis),
    queue: typeof opts.queue === 'string' ? opts.queue : 'sharp-rollout',
    concurrency: typeof opts.concurrency === 'number' ? opts.concurrency : 1,
    backend: typeof opts.backend === 'string' ? opts.backend : undefined,
    lockS: typeof opts.lockS === 'number' ? opts.lockS : 30,
    print: (line) => process.stderr.write(`${line}\n`),
  });
}
