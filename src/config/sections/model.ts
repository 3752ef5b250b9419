import { z } from 'zod';

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
        layers: z.number().int().positive().default(2).describe('num_hidden_layers.'),
        hidden: z.number().int().positive().default(128).describe('hidden_size.'),
        heads: z.number().int().positive().default(4).describe('num_attention_heads.'),
        kvHeads: z.number().int().positive().default(2).describe('num_key_value_heads (GQA when < heads).'),
        intermediate: z.number().int().positive().default(344).describe('intermediate_size of the SwiGLU MLP.'),
        vocab: z
          .number()
          .int()
          .positive()
          .default(2000)
          .describe('Vocabulary size of the tokenizer fitted to the synthetic corpus.'),
        maxPositions: z.number().int().positive().default(2048).describe('max_position_embeddings.'),
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
