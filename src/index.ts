/**
 * sharp-rl as a library (`import { loadConfig, train } from 'sharp-rl'`; docs/extending.md). Each
 * function is the recipe its command runs, so a run started here writes the same run folder, logs,
 * checkpoints and viewer records as `sharp train` / `sharp eval` / `sharp audit`, and bad input is the
 * same one-line UserError the CLI prints before exiting 2. The package's own entry (index.js at the
 * package root) loads this file through tsx, as bin/sharp.js loads the CLI.
 */
import type { z } from 'zod';
import { loadConfig as loadConfigTree } from './config/load.ts';
import type { Config, configSchema } from './config/schema.ts';

export type { Config };
export { UserError } from './errors.ts';
export { train, type TrainOptions, type TrainResult } from './recipes/train.ts';
export { evaluate, type EvaluateOptions, type EvaluateResult } from './recipes/eval.ts';
export { audit, type AuditOptions, type AuditResult } from './recipes/audit.ts';
export {
  defineReward,
  type Reward,
  type RewardFunction,
  type RewardInput,
  type RewardSpec,
  type WeightedReward,
} from './credit/user-reward.ts';
export type { BackendChoice } from './recipes/commands.ts';
export type { BackendInfo } from './recipes/stages/run-setup.ts';
export type { TrainSummary } from './eval/train-summary.ts';
export type { AccuracyResult } from './eval/held-out-accuracy.ts';
export type { EvalReport } from './eval/report.ts';
export type { AuditReport } from './eval/audit/report.ts';
export type { Episode, Paragraph, SubQuestion } from './data/episode.ts';
export { defineTool, type ToolArgs, type ToolContext, type ToolDefinition } from './tools/user/define.ts';
export type {
  AgentRecord,
  ChatMessage,
  ChatRole,
  EndReason,
  Message,
  Role,
  ToolCall,
  Trajectory,
} from './rollout/types.ts';

/**
 * A config as an object: the sections and keys of a YAML config file, each optional (the schema
 * gives the defaults).
 */
export type ConfigInput = z.input<typeof configSchema>;

/**
 * A validated config, as the CLI reads it: the schema's defaults, then `source` (a YAML file's path,
 * or the same keys as an object), then each `a.b.c=value` override in order (the CLI's `--set`,
 * values parsed as YAML scalars). Unknown keys, wrong types and broken cross-field rules are a
 * one-line UserError naming the key. Relative paths in the config (model.path, data.path, run.dir)
 * stay relative: they resolve against the working directory when a run uses them, as in the CLI.
 */
export function loadConfig(source?: string | ConfigInput, overrides: readonly string[] = []): Config {
  if (typeof source === 'string') return loadConfigTree({ file: source, sets: overrides });
  return loadConfigTree({ ...(source === undefined ? {} : { tree: source }), sets: overrides });
}
