/**
 * Where a run's user rewards come from: `credit.rewards` in the config names modules by path (for
 * the CLI and for configs shared as files), `train(config, { rewards })` takes the functions
 * themselves (for programs). One place or the other: a run with both would leave it unclear which
 * reward was trained on, so it is refused.
 */
import { existsSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { UserError } from '../errors.ts';
import type { CreditConfig } from './config.ts';
import type { OutcomeFn } from './outcome.ts';
import {
  combinedOutcome,
  isReward,
  namedReward,
  namedRewards,
  type NamedReward,
  type RewardSpec,
} from './user-reward.ts';

type RewardEntry = CreditConfig['rewards'][number];

/**
 * The reward one credit.rewards entry names. The module is imported as the CLI imports its own
 * sources (TypeScript runs through tsx), so a `.ts` reward needs no build step.
 */
async function loadEntry(entry: RewardEntry, i: number): Promise<NamedReward> {
  const where = `credit.rewards[${i}] (${entry.module})`;
  const file = resolve(entry.module);
  if (!existsSync(file)) throw new UserError(`${where}: no such file ${file}`);
  let mod: Record<string, unknown>;
  try {
    mod = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  } catch (err) {
    throw new UserError(`${where}: cannot load the module: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!(entry.export in mod))
    throw new UserError(
      `${where}: no export '${entry.export}' (it exports ${Object.keys(mod).join(', ') || 'nothing'}); ` +
        'set credit.rewards[].export',
    );
  const value = mod[entry.export];
  const named = namedReward({ reward: value, weight: entry.weight }, where);
  // A plain function's own name is often `default` or empty: the module and export say more.
  return isReward(value) ? named : { ...named, name: `${basename(entry.module)}#${entry.export}` };
}

/** The user rewards of a run, from the config's credit.rewards or the API's `rewards`; [] for the accuracy reward. */
export async function userRewards(cfg: CreditConfig, api?: readonly RewardSpec[]): Promise<NamedReward[]> {
  if (api !== undefined && api.length > 0 && cfg.rewards.length > 0)
    throw new UserError(
      'rewards: given both in the config (credit.rewards) and to train({ rewards }); name them in one place',
    );
  if (api !== undefined && api.length > 0) return namedRewards(api);
  const out: NamedReward[] = [];
  for (const [i, entry] of cfg.rewards.entries()) out.push(await loadEntry(entry, i));
  return out;
}

/** The outcome reward of a run with these user rewards (undefined: the accuracy of credit.success). */
export function userOutcome(rewards: readonly NamedReward[]): OutcomeFn | undefined {
  return rewards.length > 0 ? combinedOutcome(rewards) : undefined;
}
