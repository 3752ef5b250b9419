import { z } from 'zod';
import { count, MAX_POSITIONS, MAX_VOCAB } from './bounds.ts';

/**
 * Bounds of a model's dimensions (model.init.*, and `sharp init-model`'s flags): each several times the
 * largest released checkpoint's (Llama 3.1 405B: 126 layers, hidden 16,384, intermediate 53,248, 128
 * heads); the largest weight and the whole model are also checked against one tensor and the
 * machine's memory (src/recipes/stages/model-size.ts).
 */
export const MODEL_DIM_BOUNDS = {
  layers: 1024,
  hidden: 65_536,
  heads: 1024,
  kvHeads: 1024,
  intermediate: 262_144,
  vocab: MAX_VOCAB,
  maxPositions: MAX_POSITIONS,
} as const;

/** The policy checkpoint. */
export const modelSection = z
  .strictObject({
    path: z
      .string()
      .default('checkpoints/quickstart-init')
      .describe('HF-layout checkpoint folder (config.json, model.safetensors, tokenizer.json).'),
    init: z
      .strictObject({
        enabled: z
          .boolean()
          .default(false)
          .describe('Create a random-init model at `path` when it does not exist (quickstart).'),
        arch: z.enum(['llama', 'qwen2', 'qwen3']).default('llama').describe('model_type of the created model.'),
        layers: count(1, MODEL_DIM_BOUNDS.layers, 2, 'num_hidden_layers.'),
        hidden: count(1, MODEL_DIM_BOUNDS.hidden, 128, 'hidden_size.'),
        heads: count(1, MODEL_DIM_BOUNDS.heads, 4, 'num_attention_heads.'),
        kvHeads: count(1, MODEL_DIM_BOUNDS.kvHeads, 2, 'num_key_value_heads (GQA when < heads).'),
        intermediate: count(1, MODEL_DIM_BOUNDS.intermediate, 344, 'intermediate_size of the SwiGLU MLP.'),
        vocab: count(
          1,
          MODEL_DIM_BOUNDS.vocab,
          2000,
          'Vocabulary size of the tokenizer fitted to the synthetic corpus.',
        ),
        maxPositions: count(1, MODEL_DIM_BOUNDS.maxPositions, 2048, 'max_position_embeddings.'),
        tieEmbeddings: z
          .boolean()
          .default(true)
          .describe('Tie the LM head to the token embedding (fewer parameters for tiny models).'),
      })
      .prefault({})
      .describe('Random-init model builder options.'),
    chatTemplate: z
      .boolean()
      .default(true)
      .describe("Render prompts with tokenizer_config.json's chat_template when it has one; plain fallback otherwise."),
  })
  .describe('Policy model.');
