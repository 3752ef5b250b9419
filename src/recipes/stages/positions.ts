import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../../config/schema.ts';
import { UserError } from '../../errors.ts';
import { readHfConfig } from '../../model/io/hf-config.ts';

/**
 * The model's position limit (max_position_embeddings) against rollout.maxContext, before a run
 * folder or a model exists: every token of an agent's context takes a position, so a context longer
 * than the model holds would fail (or read positions it was never trained on) mid-run. The model is
 * model.path's config.json, or model.init.maxPositions when a run will create it there. `sharp
 * generate` checks its prompt the same way. A missing or unreadable checkpoint is left to the loader.
 */
export async function checkPositions(cfg: Config, command: string): Promise<void> {
  const dir = cfg.model.path;
  let positions: number | undefined;
  let source: string;
  if (existsSync(join(dir, 'config.json'))) {
    try {
      positions = (await readHfConfig(dir)).max_position_embeddings;
    } catch {
      return;
    }
    source = `the model at model.path ${dir}`;
  } else if (cfg.model.init.enabled) {
    positions = cfg.model.init.maxPositions;
    source = 'model.init.maxPositions';
  } else return;
  const r = cfg.rollout;
  if (positions !== undefined && r.maxContext > positions) {
    throw new UserError(
      `${command}: rollout.maxContext (${r.maxContext}) is more than ${source} holds (${positions} positions, ` +
        `max_position_embeddings); set rollout.maxContext <= ${positions} (and rollout.maxNewTokens below it)`,
    );
  }
}
