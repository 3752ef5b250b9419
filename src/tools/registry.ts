import type { Config } from '../config/schema.ts';
import type { Episode } from '../data/episode.ts';
import { createCalculate } from './calculate.ts';
import { createCode } from './code.ts';
import { createSearch, type PooledCorpus } from './search.ts';
import type { Tool, ToolName } from './types.ts';

/**
 * The worker's toolbox for one episode: `search` over the episode's paragraphs
 * or the pooled corpus (`rollout.search.corpus`), `calculate` (locked mathjs) and `code` (QuickJS),
 * with the limits of `rollout.search` / `rollout.code`. The planner's only tool, `delegate`, is the
 * engine's, not a function of text, so it is not here.
 */
export interface WorkerToolsExtras {
  /** Required when `rollout.search.corpus` is 'pooled': built once with `poolParagraphs(episodes)`. */
  pooled?: PooledCorpus;
}

export function createWorkerTools(episode: Episode, cfg: Config['rollout'], extras: WorkerToolsExtras = {}): Record<ToolName, Tool> {
  const searchOpts = { topK: cfg.search.topK, maxChars: cfg.search.maxChars, snippet: cfg.search.snippet };
  let corpus = episode.paragraphs;
  if (cfg.search.corpus === 'pooled') {
    if (!extras.pooled) throw new Error("createWorkerTools: rollout.search.corpus is 'pooled' but no pooled corpus was given");
    corpus = extras.pooled.paragraphs;
  }
  return {
    search: createSearch(corpus, searchOpts),
    calculate: createCalculate(),
    code: createCode({ timeoutMs: cfg.code.timeoutMs, memoryBytes: cfg.code.memoryBytes, maxOutputChars: cfg.code.maxOutputChars }),
  };
}
