import type { Config } from '../config/schema.ts';
import type { Episode } from '../data/episode.ts';
import { createCalculate } from './calculate.ts';
import { createCode } from './code.ts';
import { retrieverFor } from './retrieval/open.ts';
import { createCorpusSearch } from './retrieval/search-tool.ts';
import { createSearch, type PooledCorpus, type SearchOptions } from './search.ts';
import type { Tool } from './types.ts';
import { startedUserTools } from './user/user-tools.ts';

/**
 * The worker's toolbox for one episode: `search` over the episode's paragraphs
 * or the pooled corpus (`rollout.search.corpus`), or through the index or remote backend
 * (`rollout.search.backend`, docs/retrieval.md), `calculate` (locked mathjs) and `code` (QuickJS),
 * with the limits of `rollout.search` / `rollout.code`, and the user tools of `rollout.tools`
 * (tools/user/), started before (startUserTools). With a tool list only the listed built-ins are made.
 * The planner's only tool, `delegate`, is the engine's, not a function of text, so it is not here.
 */
export interface WorkerToolsExtras {
  /** Required when `rollout.search.corpus` is 'pooled': built once with `poolParagraphs(episodes)`. */
  pooled?: PooledCorpus;
}

export function createWorkerTools(
  episode: Episode,
  cfg: Config['rollout'],
  extras: WorkerToolsExtras = {},
): Record<string, Tool> {
  const searchOpts = { topK: cfg.search.topK, maxChars: cfg.search.maxChars, snippet: cfg.search.snippet };
  const builtins = {
    search: () => createSearchTool(episode, cfg.search, searchOpts, extras),
    calculate: () => createCalculate(),
    code: () =>
      createCode({
        timeoutMs: cfg.code.timeoutMs,
        memoryBytes: cfg.code.memoryBytes,
        maxOutputChars: cfg.code.maxOutputChars,
      }),
  };
  const tools: Record<string, Tool> = {};
  for (const entry of cfg.tools ?? Object.keys(builtins))
    if (typeof entry === 'string') tools[entry] = builtins[entry as keyof typeof builtins]();
  for (const t of startedUserTools(cfg.tools).tools) tools[t.name] = t.run;
  return tools;
}

function createSearchTool(
  episode: Episode,
  search: Config['rollout']['search'],
  opts: SearchOptions,
  extras: WorkerToolsExtras,
): Tool {
  const retriever = retrieverFor(search);
  if (retriever) return createCorpusSearch(retriever, episode.paragraphs, opts);
  let corpus = episode.paragraphs;
  if (search.corpus === 'pooled') {
    if (!extras.pooled)
      throw new Error("createWorkerTools: rollout.search.corpus is 'pooled' but no pooled corpus was given");
    corpus = extras.pooled.paragraphs;
  }
  return createSearch(corpus, opts);
}
