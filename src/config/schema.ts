import { z } from 'zod';
import { runSection } from './sections/run.ts';
import { modelSection } from './sections/model.ts';
import { dataSection } from './sections/data.ts';
import { rolloutSection } from './sections/rollout.ts';
import { creditSection } from './sections/credit.ts';
import { trainSection } from './sections/train.ts';
import { evalSection } from './sections/eval.ts';
import { ablationSection } from './sections/ablation.ts';

/**
 * The one config schema: every key has its type, default and help text here.
 * YAML files only override these defaults; `--set a.b=v` overrides last. Each section lives in
 * sections/<name>.ts beside the part of the code that reads it.
 */
export const configSchema = z
  .strictObject({
    run: runSection.prefault({}),
    model: modelSection.prefault({}),
    data: dataSection.prefault({}),
    rollout: rolloutSection.prefault({}),
    credit: creditSection.prefault({}),
    train: trainSection.prefault({}),
    eval: evalSection.prefault({}),
    ablation: ablationSection.prefault({}),
  })
  .describe('sharp-rl configuration');

export type Config = z.infer<typeof configSchema>;
