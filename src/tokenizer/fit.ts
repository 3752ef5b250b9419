/**
 * Tokenizers for from-scratch models (the quickstart): a byte-level BPE fitted to a corpus and
 * saved as tokenizer.json + tokenizer_config.json in the Hugging Face layout, so the folder loads
 * with our Tokenizer, with Transformers' AutoTokenizer and with @huggingface/tokenizers alike.
 * Byte-level BPE is lossless: any text, in any script, round-trips exactly.
 */
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { writeJsonAtomic } from '../fs/atomic.ts';
import { countWords, trainBpe } from './bpe-train.ts';

/** Special tokens, ids 0..2: `<|endoftext|>` pads and ends documents, ChatML markers frame turns. */
const SPECIAL_TOKENS = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'] as const;

/**
 * ChatML (the Qwen family's format): `<|im_start|>role\ncontent<|im_end|>\n` per message, and
 * `<|im_start|>assistant\n` as the generation prompt.
 */
export const CHATML_TEMPLATE =
  "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + " +
  "'\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}";

/** The tokenizer.json object `fitBpeTokenizer` returns (the fields we set; HF's format). */
export interface TokenizerJson {
  version: string;
  added_tokens: {
    id: number;
    content: string;
    single_word: boolean;
    lstrip: boolean;
    rstrip: boolean;
    normalized: boolean;
    special: boolean;
  }[];
  model: { type: 'BPE'; vocab: Record<string, number>; merges: [string, string][]; [key: string]: unknown };
  [key: string]: unknown;
}

/**
 * Fits a GPT-2-style byte-level BPE to `texts` with at most `vocabSize` ids: 3 special tokens, the
 * 256 byte symbols, then one id per learned merge (fewer when the corpus runs out of pairs).
 */
export function fitBpeTokenizer(texts: readonly string[], vocabSize: number): TokenizerJson {
  return fitBpe(texts, vocabSize).tokenizerJson;
}

/** `fitBpeTokenizer` plus how many tokens the training corpus takes with the learned merges. */
export function fitBpe(
  texts: readonly string[],
  vocabSize: number,
): { tokenizerJson: TokenizerJson; corpusTokens: number } {
  const base = SPECIAL_TOKENS.length + 256;
  if (!Number.isInteger(vocabSize) || vocabSize < base) {
    throw new Error(
      `fitBpeTokenizer: vocabSize ${vocabSize} is too small; byte-level BPE needs at least ${base} (3 special ` +
        `tokens + 256 bytes)`,
    );
  }
  const { symbols, merges, corpusTokens } = trainBpe(
    countWords(texts, SPECIAL_TOKENS),
    vocabSize - SPECIAL_TOKENS.length,
  );
  const vocab: Record<string, number> = {};
  SPECIAL_TOKENS.forEach((t, i) => (vocab[t] = i));
  symbols.forEach((s, i) => (vocab[s] = SPECIAL_TOKENS.length + i));
  const byteLevel = { add_prefix_space: false, trim_offsets: true, use_regex: true };
  const tokenizerJson: TokenizerJson = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: SPECIAL_TOKENS.map((content, id) => ({
      id,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', ...byteLevel },
    post_processor: { type: 'ByteLevel', ...byteLevel, trim_offsets: false },
    decoder: { type: 'ByteLevel', ...byteLevel },
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
  return { tokenizerJson, corpusTokens };
}

export interface TokenizerFileOptions {
  /**
   * chat_template to store: ChatML when true or absent, this text when a string, none when false (the plain fallback
   * applies).
   */
  chatTemplate?: boolean | string;
  /** model_max_length in tokenizer_config.json. */
  maxLength?: number;
}

/**
 * Writes `dir/tokenizer.json` and `dir/tokenizer_config.json` (each atomically). The config marks
 * `<|im_end|>` as EOS (a chat turn ends the generation) and `<|endoftext|>` as padding, with no BOS,
 * like Qwen2/Qwen3 tokenizers.
 */
export async function writeTokenizerFiles(
  dir: string,
  tokenizerJson: TokenizerJson,
  opts: TokenizerFileOptions = {},
): Promise<void> {
  await mkdir(dir, { recursive: true });
  const addedDecoder: Record<string, unknown> = {};
  for (const t of tokenizerJson.added_tokens) {
    addedDecoder[String(t.id)] = {
      content: t.content,
      lstrip: t.lstrip,
      normalized: t.normalized,
      rstrip: t.rstrip,
      single_word: t.single_word,
      special: t.special,
    };
  }
  const template =
    typeof opts.chatTemplate === 'string' ? opts.chatTemplate : opts.chatTemplate === false ? false : CHATML_TEMPLATE;
  const config: Record<string, unknown> = {
    add_bos_token: false,
    add_eos_token: false,
    added_tokens_decoder: addedDecoder,
    bos_token: null,
    clean_up_tokenization_spaces: false,
    eos_token: '<|im_end|>',
    pad_token: '<|endoftext|>',
    unk_token: null,
    model_max_length: opts.maxLength ?? 2048,
    tokenizer_class: 'PreTrainedTokenizerFast',
    ...(template === false ? {} : { chat_template: template }),
  };
  await writeJsonAtomic(join(dir, 'tokenizer.json'), tokenizerJson);
  await writeJsonAtomic(join(dir, 'tokenizer_config.json'), config);
}
