import { z } from 'zod';
import { count, MAX_POSITIONS, MAX_VOCAB, timerMs } from './bounds.ts';
import { distributedSection } from './distributed.ts';
import { toolsSection } from './tools.ts';

/**
 * Most characters one tool result adds to a prompt (src/tools/result-cap.ts cuts it there), so a
 * larger paragraph or output limit would only be cut.
 */
const MAX_TOOL_CHARS = 16_384;
/**
 * Most turns and delegations of one trajectory: each turn is a generate call over a context that
 * grows by up to maxNewTokens, so more turns than this cannot fit any context.
 */
const MAX_TURNS = 256;
/** Most trajectories per question: a step holds B x G trajectories (and their replays) in memory. */
const MAX_GROUP_SIZE = 1024;

// Protocol-neutral role prompts: the protocol (src/rollout/protocol) appends the tool list in its own syntax.
const DEFAULT_PLANNER_PROMPT =
  'You are the planner of a team. Split the question into single-hop subtasks and delegate them one at a time to ' +
  'workers. Each delegation returns the worker report. Use earlier reports in later subtasks. When you know the ' +
  'answer, give it as a short final answer.';
const DEFAULT_WORKER_PROMPT =
  'You are a worker. Solve the subtask you are given with the tools: search the paragraphs, calculate arithmetic, ' +
  'run code. When you know the answer, give it as a short final answer.';
const DEFAULT_SINGLE_PROMPT =
  'You answer questions alone. Solve the question with the tools: search the paragraphs, calculate arithmetic, run ' +
  'code. When you know the answer, give it as a short final answer.';
const DEFAULT_DIRECT_PROMPT = 'Answer the question with a short final answer.';
const DEFAULT_WORKER_FAILURE = 'The worker found no answer.';

/** The self-play loop. */
export const rolloutSection = z
  .strictObject({
    groupSize: count(1, MAX_GROUP_SIZE, 8, 'G: trajectories per question (GRPO group).'),
    agents: z
      .enum(['multi', 'single'])
      .default('multi')
      .describe(
        'Agent system that is trained and measured: multi (planner delegates to workers, SHARP) or single (one ' +
          'agent with the worker tools answers alone: single-agent GRPO).',
      ),
    protocol: z
      .enum(['tags', 'json'])
      .default('tags')
      .describe('Tool-call syntax: tags for small models, json (Hermes/Qwen3 <tool_call>) for chat models.'),
    plannerPrompt: z.string().default(DEFAULT_PLANNER_PROMPT).describe('System prompt of the planner role.'),
    workerPrompt: z.string().default(DEFAULT_WORKER_PROMPT).describe('System prompt of the worker role.'),
    singlePrompt: z
      .string()
      .default(DEFAULT_SINGLE_PROMPT)
      .describe('System prompt of the lone agent of `sharp eval --agents single` (worker tools, whole question).'),
    directPrompt: z
      .string()
      .default(DEFAULT_DIRECT_PROMPT)
      .describe('System prompt of `sharp eval --agents direct` (no tools: answer at once).'),
    maxPlannerTurns: count(1, MAX_TURNS, 6, 'Planner messages before it is stopped.'),
    maxDelegations: count(0, MAX_TURNS, 4, 'Delegations per trajectory.'),
    maxParallelDelegations: z
      .number()
      .int()
      .min(1)
      .max(8)
      .default(1)
      .describe(
        'Delegations one planner message may carry; they run side by side and report back together, one tool result ' +
          "per call in order (SHARP's parallel workers). 1: one call per message.",
      ),
    maxWorkerTurns: count(1, MAX_TURNS, 4, 'Messages per worker before it is stopped.'),
    maxNewTokens: count(1, MAX_POSITIONS, 64, 'New tokens per message.'),
    maxContext: count(
      1,
      MAX_POSITIONS,
      1024,
      "Context length in tokens of any agent (also at most the model's max_position_embeddings).",
    ),
    prefixCacheMiB: z
      .number()
      .int()
      .min(0)
      .max(65536)
      .default(512)
      .describe(
        'KV prefix cache across generate calls, in MiB of keys and values: the next turn of an agent, the other ' +
          'samples of a group, the replays and the held-out samples reuse what an earlier call computed (least ' +
          'recently used entries go first; emptied whenever the weights change). 0 = off; distributed runs keep it ' +
          'off (a job must equal the in-process reference bit for bit).',
      ),
    workerFailureText: z
      .string()
      .default(DEFAULT_WORKER_FAILURE)
      .describe('Report the planner gets from a worker that ended without an answer.'),
    temperature: z.number().nonnegative().default(1).describe('Sampling temperature (0 = greedy).'),
    topK: count(0, MAX_VOCAB, 0, 'Top-k sampling; 0 = off.'),
    topP: z.number().gt(0).max(1).default(1).describe('Nucleus sampling mass; 1 = off.'),
    tools: toolsSection,
    search: z
      .strictObject({
        topK: count(1, 1000, 2, 'Paragraphs a search returns (their text is cut at 16,384 characters in all).'),
        corpus: z
          .enum(['episode', 'pooled'])
          .default('episode')
          .describe("episode: the episode's paragraphs (distractor setting); pooled: all episodes' paragraphs."),
        maxChars: count(
          1,
          MAX_TOOL_CHARS,
          300,
          'Characters of each paragraph shown to the agent (a tool result is cut at 16,384 characters).',
        ),
        snippet: count(
          0,
          1000,
          0,
          'Show each hit as its N sentences that share the most words with the query, as search engines show ' +
            'snippets (0 = the whole paragraph).',
        ),
        backend: z
          .enum(['episode', 'index', 'remote'])
          .default('episode')
          .describe(
            "episode: BM25 (minisearch) in memory over the episode's paragraphs (synthetic world, distractor " +
              'benchmarks); index: the on-disk BM25 index rollout.search.index (sharp index build); remote: a ' +
              'Search-R1 retrieval server at rollout.search.url (docs/retrieval.md).',
          ),
        index: z.string().default('').describe('Index folder of the index backend (sharp index build --out).'),
        url: z
          .string()
          .default('')
          .describe(
            'POST /retrieve URL of the remote backend, e.g. http://127.0.0.1:8000/retrieve (Search-R1 protocol; ' +
              'sharp serve retrieval).',
          ),
        timeoutMs: timerMs(10_000, 'remote: milliseconds one request may take before it counts as failed.'),
        retries: z
          .number()
          .int()
          .min(0)
          .max(5)
          .default(2)
          .describe(
            'remote: retries of a request that failed, timed out or got a 5xx, before the search returns an error ' +
              'to the agent.',
          ),
        maxTermShare: z
          .number()
          .gt(0)
          .max(1)
          .default(1)
          .describe(
            'index: leave out of a query the words found in more than this share of the passages, when it has rarer ' +
              'ones (1 = exact BM25; 0.05 makes queries with common words over large corpora many times faster, ' +
              'docs/retrieval.md).',
          ),
      })
      .prefault({}),
    code: z
      .strictObject({
        timeoutMs: timerMs(1000, 'Wall-clock limit of one sandboxed program, in milliseconds.'),
        memoryBytes: count(
          1,
          2 ** 30,
          32 * 1024 * 1024,
          'QuickJS heap limit in bytes (at most 1 GiB: the heap lives in the sandbox worker beside training).',
        ),
        maxOutputChars: count(
          1,
          MAX_TOOL_CHARS,
          2000,
          'Captured console output kept (a tool result is cut at 16,384 characters).',
        ),
      })
      .prefault({}),
    distributed: distributedSection.prefault({}),
  })
  .describe('Rollout engine: roles, protocol, limits, sampling, tools.');
