/**
 * The tokenizer of a checkpoint folder: tokenizer.json through
 * @huggingface/tokenizers (Transformers.js' tokenizer code; same ids as the Python `tokenizers`
 * crate on Llama and Qwen3), chat templates from tokenizer_config.json through @huggingface/jinja,
 * special-token ids from tokenizer_config.json and generation_config.json. No network.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Tokenizer as HfTokenizer } from '@huggingface/tokenizers';
import { Template } from '@huggingface/jinja';
import { renderChatTemplate } from './render-template.ts';
import { joinToolResponses } from './tool-responses.ts';
import { CheckpointError } from '../model/io/errors.ts';
import { readGenerationConfig } from '../model/io/hf-config.ts';

/** One chat message as a template sees it; extra fields (tool_calls, reasoning_content) pass through. */
export interface ChatTurn {
  role: string;
  content: string;
}

export interface ChatTemplateOptions {
  /** Append the opening of an assistant turn so the model continues as the assistant. */
  addGenerationPrompt: boolean;
  /** Extra template variables, e.g. `{enable_thinking: false}` for Qwen3 or `{tools: [...]}`. */
  extra?: Record<string, unknown>;
}

type JsonObject = Record<string, unknown>;

function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

async function readJsonFile(file: string, required: boolean): Promise<JsonObject | undefined> {
  if (!existsSync(file)) {
    if (required) throw new CheckpointError(`${file}: missing`);
    return undefined;
  }
  let raw: unknown;
  try {
    raw = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new CheckpointError(`${file}: not valid JSON (${(err as Error).message.split('\n')[0]})`);
  }
  if (!isObject(raw)) throw new CheckpointError(`${file}: not a JSON object`);
  return raw;
}

/** tokenizer_config.json writes special tokens as a string, null, or an AddedToken dict `{content}`. */
function tokenString(v: unknown): string | undefined {
  if (typeof v === 'string') return v;
  if (isObject(v) && typeof v.content === 'string') return v.content;
  return undefined;
}

/**
 * The plain chat fallback for models without a chat template: one `role: content` line per message
 * and, for a generation prompt, `assistant:` with no trailing space (the model's first token then
 * carries its own leading space, as it does inside the rendered messages).
 */
export function plainChat(messages: readonly ChatTurn[], addGenerationPrompt: boolean): string {
  const body = messages.map((m) => `${m.role}: ${m.content}\n`).join('');
  return addGenerationPrompt ? `${body}assistant:` : body;
}

/** Picks the template text: a string, or HF's list form `[{name, template}]` (the `default` entry). */
function templateText(v: unknown, file: string): string | undefined {
  if (v == null) return undefined;
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) {
    const named = v.filter(isObject);
    const pick = named.find((t) => t.name === 'default') ?? named[0];
    if (pick && typeof pick.template === 'string') return pick.template;
  }
  throw new CheckpointError(`${file}: field 'chat_template' is neither a string nor a list of {name, template}`);
}

export class Tokenizer {
  /** Number of ids the tokenizer can produce (max id + 1, added tokens included). */
  readonly vocabSize: number;
  /** Beginning-of-sequence id, when the tokenizer has one. */
  readonly bosId: number | undefined;
  /** Generation stops at any of these (tokenizer_config's eos_token, then generation_config's eos_token_id). */
  readonly eosIds: number[];
  /** Padding id: pad_token, else generation_config's pad_token_id, else the first EOS (the usual choice). */
  readonly padId: number;
  /** True when `encode` (with special tokens) puts `bosId` first. */
  readonly addsBos: boolean;
  /** Ids of special tokens (BOS, EOS, chat markers...). */
  readonly specialIds: ReadonlySet<number>;
  /**
   * Variables every chat rendering gets (prompts for generation and for training alike). Qwen3's
   * template defaults to thinking mode; a template that reads `enable_thinking` gets false unless
   * the caller says otherwise, so the generation prompt carries the empty `<think>\n\n</think>\n\n`
   * block and a finished turn renders as the prompt followed by the reply (Qwen3 model card,
   * "non-thinking mode"); the prompt/completion split of training then holds.
   */
  readonly chatVariables: Readonly<Record<string, unknown>>;

  private readonly tok: HfTokenizer;
  private readonly template: Template | undefined;
  private readonly specialStrings: Record<string, string>;
  // undefined: the tokenizer.json post-processor decides; set: LlamaTokenizer-style explicit flags.
  private readonly addBos: boolean | undefined;
  private readonly addEos: boolean | undefined;

  private constructor(args: {
    tok: HfTokenizer;
    config: JsonObject;
    template: Template | undefined;
    generation: { bos?: number; eos: number[]; pad?: number } | undefined;
    source: string;
    chatVariables: Record<string, unknown>;
  }) {
    const { tok, config, generation, source } = args;
    this.tok = tok;
    this.template = args.template;
    this.chatVariables = Object.freeze({ ...args.chatVariables });
    const vocab = tok.get_vocab(true);
    let maxId = -1;
    for (const id of vocab.values()) maxId = Math.max(maxId, id);
    this.vocabSize = maxId + 1;
    this.specialIds = new Set([...tok.get_added_tokens_decoder()].filter(([, t]) => t.special).map(([id]) => id));

    const idOf = (field: string): number | undefined => {
      const s = tokenString(config[field]);
      if (s === undefined) return undefined;
      const id = tok.token_to_id(s);
      if (id === undefined)
        throw new CheckpointError(
          `${source}: field '${field}' names token ${JSON.stringify(s)}, which is not in the vocabulary`,
        );
      return id;
    };
    // tokenizer_config's bos_token wins even when null: Qwen's generation_config names a bos_token_id
    // (<|endoftext|>) that its tokenizer never adds, and callers must not prepend it either.
    this.bosId = 'bos_token' in config ? idOf('bos_token') : generation?.bos;
    const eos = [idOf('eos_token'), ...(generation?.eos ?? [])].filter((x): x is number => x !== undefined);
    this.eosIds = [...new Set(eos)];
    const pad = idOf('pad_token') ?? generation?.pad ?? this.eosIds[0];
    if (pad === undefined)
      throw new CheckpointError(`${source}: no pad_token or eos_token, so there is no id to pad with`);
    this.padId = pad;
    this.specialStrings = {};
    for (const k of ['bos_token', 'eos_token', 'pad_token', 'unk_token']) {
      const s = tokenString(config[k]);
      if (s !== undefined) this.specialStrings[k] = s;
    }
    this.addBos = typeof config.add_bos_token === 'boolean' ? config.add_bos_token : undefined;
    this.addEos = typeof config.add_eos_token === 'boolean' ? config.add_eos_token : undefined;
    // Only one flag given: the other takes LlamaTokenizerFast's default (add_bos_token=True, add_eos_token=False).
    if (this.addBos === undefined && this.addEos !== undefined) this.addBos = true;
    if (this.addEos === undefined && this.addBos !== undefined) this.addEos = false;
    const probe = this.encode('a');
    this.addsBos =
      this.bosId !== undefined &&
      probe[0] === this.bosId &&
      this.encode('a', { addSpecialTokens: false })[0] !== this.bosId;
  }

  /**
   * Loads `dir/tokenizer.json` (required), `dir/tokenizer_config.json` (optional: special tokens,
   * add_bos_token, chat_template), `dir/chat_template.jinja` (newer Transformers save the template
   * there) and `dir/generation_config.json` (optional: more EOS ids).
   */
  static async load(dir: string, opts: { chatVariables?: Record<string, unknown> } = {}): Promise<Tokenizer> {
    const tokFile = join(dir, 'tokenizer.json');
    const cfgFile = join(dir, 'tokenizer_config.json');
    const json = (await readJsonFile(tokFile, true)) as JsonObject;
    const config = (await readJsonFile(cfgFile, false)) ?? {};
    let tok: HfTokenizer;
    try {
      tok = new HfTokenizer(json, config);
    } catch (err) {
      throw new CheckpointError(`${tokFile}: cannot build the tokenizer (${(err as Error).message.split('\n')[0]})`);
    }
    let text = templateText(config.chat_template, cfgFile);
    const jinjaFile = join(dir, 'chat_template.jinja');
    if (text === undefined && existsSync(jinjaFile)) text = await readFile(jinjaFile, 'utf8');
    let template: Template | undefined;
    if (text !== undefined) {
      try {
        template = new Template(text);
      } catch (err) {
        throw new CheckpointError(
          `${cfgFile}: chat_template does not parse (${(err as Error).message.split('\n')[0]})`,
        );
      }
    }
    const generation = await readGenerationConfig(dir);
    const chatVariables = {
      ...(text !== undefined && text.includes('enable_thinking') ? { enable_thinking: false } : {}),
      ...opts.chatVariables,
    };
    return new Tokenizer({ tok, config, template, generation, source: cfgFile, chatVariables });
  }

  /**
   * Token ids of `text`. With `addSpecialTokens` (default true) BOS/EOS are added as
   * tokenizer_config's add_bos_token / add_eos_token say (as Transformers' LlamaTokenizerFast does),
   * or by tokenizer.json's post-processor when the config has neither flag.
   */
  encode(text: string, opts: { addSpecialTokens?: boolean } = {}): number[] {
    const add = opts.addSpecialTokens ?? true;
    if (!add || this.addBos === undefined) return this.tok.encode(text, { add_special_tokens: add }).ids;
    const ids = this.tok.encode(text, { add_special_tokens: false }).ids;
    if (this.addBos && this.bosId !== undefined) ids.unshift(this.bosId);
    if (this.addEos && this.eosIds.length > 0) ids.push(this.eosIds[0]);
    return ids;
  }

  /** Text of `ids`; special tokens are kept unless `skipSpecialTokens`. */
  decode(ids: readonly number[], opts: { skipSpecialTokens?: boolean } = {}): string {
    if (ids.length === 0) return ''; // the library rejects an empty list
    return this.tok.decode(ids as number[], { skip_special_tokens: opts.skipSpecialTokens ?? false });
  }

  /** Id of a token string (e.g. '<|im_end|>'), or undefined when it is not in the vocabulary. */
  tokenToId(token: string): number | undefined {
    return this.tok.token_to_id(token);
  }

  /** True when tokenizer_config.json (or chat_template.jinja) has a chat template. */
  get hasChatTemplate(): boolean {
    return this.template !== undefined;
  }

  /**
   * Renders messages with the model's chat template (variables as Transformers passes them:
   * messages, add_generation_prompt, bos_token, eos_token, pad_token, unk_token, plus
   * `chatVariables` and `extra`), or with `plainChat` when there is no template.
   */
  applyChatTemplate(messages: readonly ChatTurn[], opts: ChatTemplateOptions): string {
    // Results of parallel calls share one turn, as Qwen3's template renders them (tool-responses.ts).
    const turns = joinToolResponses(messages);
    if (!this.template) return plainChat(turns, opts.addGenerationPrompt);
    return renderChatTemplate(this.template, {
      ...this.specialStrings,
      ...this.chatVariables,
      ...opts.extra,
      messages: turns.map((m) => ({ ...m })),
      add_generation_prompt: opts.addGenerationPrompt,
    });
  }

  /**
   * Ids of a chat prompt. A template writes its own special tokens (bos_token is a template
   * variable), so its text is encoded without adding any, as Transformers' apply_chat_template does;
   * the plain fallback gets them (BOS) from `encode`.
   */
  encodeChat(messages: readonly ChatTurn[], opts: ChatTemplateOptions): number[] {
    return this.encode(this.applyChatTemplate(messages, opts), { addSpecialTokens: !this.template });
  }
}
