import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fitBpeTokenizer, writeTokenizerFiles } from './fit.ts';
import { Tokenizer, plainChat } from './tokenizer.ts';
import { errorOf } from '../../test/one-line-error.ts';

const REAL = resolve(import.meta.dirname, '../../../shared/models/tinystories-260k');
const hasReal = existsSync(join(REAL, 'tokenizer.json'));

/**
 * A condensed Qwen3 chat template: the same Jinja features as the real one (namespace, reversed
 * slice, loop.index0 / loop.first / loop.last, `is string`, `is defined`, str.split / strip /
 * startswith, add_generation_prompt and enable_thinking).
 */
const QWEN3_STYLE =
  `{%- if messages[0].role == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0].content + '<|im_end|>\\n' ` +
  `}}
{%- endif %}
{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}
{%- ` +
  `for message in messages[::-1] %}
    {%- set index = (messages|length - 1) - loop.index0 %}
    {%- if ` +
  `ns.multi_step_tool and message.role == "user" and message.content is string and ` +
  `not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>')) %}
      ` +
  `  {%- set ns.multi_step_tool = false %}
        {%- set ns.last_query_index = index %}
    {%- endif %}
{%- ` +
  `endfor %}
{%- for message in messages %}
    {%- if message.content is string %}
        {%- set content = ` +
  `message.content %}
    {%- else %}
        {%- set content = '' %}
    {%- endif %}
    {%- if (message.role ` +
  `== "user") or (message.role == "system" and not loop.first) %}
        {{- '<|im_start|>' + message.role + ` +
  `'\\n' + content + '<|im_end|>' + '\\n' }}
    {%- elif message.role == "assistant" %}
        {%- set ` +
  `reasoning_content = '' %}
        {%- if '</think>' in content %}
            {%- set reasoning_content = ` +
  `content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}
            {%- set content ` +
  `= content.split('</think>')[-1].lstrip('\\n') %}
        {%- endif %}
        {%- if loop.index0 > ` +
  `ns.last_query_index and (loop.last or reasoning_content) %}
            {{- '<|im_start|>' + message.role + ` +
  `'\\n<think>\\n' + reasoning_content.strip('\\n') + '\\n</think>\\n\\n' + content.lstrip('\\n') }}
        ` +
  `{%- else %}
            {{- '<|im_start|>' + message.role + '\\n' + content }}
        {%- endif %}
        ` +
  `{{- '<|im_end|>\\n' }}
    {%- elif message.role == "tool" %}
        {%- if loop.first or ` +
  `(messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
    ` +
  `    {{- '\\n<tool_response>\\n' + content + '\\n</tool_response>' }}
        {%- if loop.last or ` +
  `(messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\\n' }}
        {%- endif %}
    ` +
  `{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
    {%- if ` +
  `enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\\n\\n</think>\\n\\n' }}
    ` +
  `{%- endif %}
{%- endif %}`;

let dir: string;
let qwenDir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sharp-tok-'));
  qwenDir = join(dir, 'qwen');
  await writeTokenizerFiles(
    qwenDir,
    fitBpeTokenizer(['the user asks what is two plus two and the assistant answers four'], 300),
    { chatTemplate: QWEN3_STYLE },
  );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('real checkpoint tokenizer (tinystories-260k)', () => {
  it.skipIf(!hasReal)('encodes "Once upon a time" as the reference ids and decodes back', async () => {
    const tok = await Tokenizer.load(REAL);
    expect(tok.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]); // BOS from add_bos_token
    expect(tok.encode('Once upon a time', { addSpecialTokens: false })).toEqual([403, 407, 261, 378]);
    expect(tok.decode([1, 403, 407, 261, 378], { skipSpecialTokens: true })).toBe('Once upon a time');
    expect(tok.vocabSize).toBe(512);
    expect(tok.bosId).toBe(1);
    expect(tok.eosIds).toEqual([2]);
    expect(tok.padId).toBe(2); // pad_token null -> first EOS
    expect(tok.addsBos).toBe(true);
    expect(tok.hasChatTemplate).toBe(false);
  });

  it.skipIf(!hasReal)('round-trips arbitrary text (byte fallback for what the vocabulary lacks)', async () => {
    const tok = await Tokenizer.load(REAL);
    for (const text of [
      'Lily and Ben went to the park. They saw a big dog!',
      'Zebra quartz, 42 jumps; "quoted"?',
      'naïve 東京 🤗',
      'two  spaces\tand\nlines',
      '<search>x</search>',
    ]) {
      expect(tok.decode(tok.encode(text), { skipSpecialTokens: true })).toBe(text);
    }
  });

  it.skipIf(!hasReal)('uses the plain chat fallback and adds BOS to it', async () => {
    const tok = await Tokenizer.load(REAL);
    const msgs = [
      { role: 'system', content: 'Tell a story.' },
      { role: 'user', content: 'A cat.' },
    ];
    expect(tok.applyChatTemplate(msgs, { addGenerationPrompt: true })).toBe(
      'system: Tell a story.\nuser: A cat.\nassistant:',
    );
    const ids = tok.encodeChat(msgs, { addGenerationPrompt: false });
    expect(ids[0]).toBe(1);
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('system: Tell a story.\nuser: A cat.\n');
  });
});

describe('BOS / EOS / pad resolution', () => {
  it.skipIf(!hasReal)('follows add_bos_token, else the tokenizer.json post-processor', async () => {
    const d = join(dir, 'bos');
    await mkdir(d);
    await copyFile(join(REAL, 'tokenizer.json'), join(d, 'tokenizer.json'));
    const cfg = JSON.parse(await readFile(join(REAL, 'tokenizer_config.json'), 'utf8')) as Record<string, unknown>;
    await writeFile(join(d, 'tokenizer_config.json'), JSON.stringify({ ...cfg, add_bos_token: false }));
    expect((await Tokenizer.load(d)).encode('Once upon a time')).toEqual([403, 407, 261, 378]);
    await writeFile(
      join(d, 'tokenizer_config.json'),
      JSON.stringify({ ...cfg, add_bos_token: true, add_eos_token: true }),
    );
    expect((await Tokenizer.load(d)).encode('Once upon a time')).toEqual([1, 403, 407, 261, 378, 2]);
    // Neither flag: tokenizer.json's TemplateProcessing ("<s> $A") decides.
    const { add_bos_token: _b, add_eos_token: _e, ...noFlags } = cfg;
    await writeFile(join(d, 'tokenizer_config.json'), JSON.stringify(noFlags));
    const tok = await Tokenizer.load(d);
    expect(tok.encode('Once upon a time')).toEqual([1, 403, 407, 261, 378]);
    expect(tok.addsBos).toBe(true);
  });

  it('takes BOS from tokenizer_config even when null (Qwen), EOS from both files, pad from either', async () => {
    const d = join(dir, 'ids');
    await writeTokenizerFiles(d, fitBpeTokenizer(['abc'], 260));
    // Qwen3's generation_config names bos_token_id <|endoftext|>, which its tokenizer (bos_token null) never adds.
    await writeFile(
      join(d, 'generation_config.json'),
      JSON.stringify({ bos_token_id: 0, eos_token_id: [2, 0], pad_token_id: 1 }),
    );
    const tok = await Tokenizer.load(d);
    expect(tok.bosId).toBeUndefined();
    expect(tok.addsBos).toBe(false);
    expect(tok.eosIds).toEqual([2, 0]); // <|im_end|> from tokenizer_config first, deduplicated
    expect(tok.padId).toBe(0); // pad_token <|endoftext|> beats generation_config's pad_token_id
    const cfgFile = join(d, 'tokenizer_config.json');
    const {
      bos_token: _bos,
      pad_token: _pad,
      ...rest
    } = JSON.parse(await readFile(cfgFile, 'utf8')) as Record<string, unknown>;
    await writeFile(cfgFile, JSON.stringify(rest));
    const tok2 = await Tokenizer.load(d);
    expect(tok2.bosId).toBe(0); // no bos_token key at all: generation_config's id
    expect(tok2.addsBos).toBe(false); // ...but encode never adds it (add_bos_token false)
    expect(tok2.padId).toBe(1);
  });
});

describe('chat templates', () => {
  it('renders a Qwen3-style template: reasoning dropped from earlier turns, generation prompt', async () => {
    const tok = await Tokenizer.load(qwenDir);
    const msgs = [
      { role: 'system', content: 'You are helpful.' },
      { role: 'user', content: 'What is 2+2?' },
      { role: 'assistant', content: '<think>\nadd them\n</think>\n\n4' },
      { role: 'user', content: 'And 3+3?' },
    ];
    const want =
      '<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n' +
      '<|im_start|>assistant\n4<|im_end|>\n<|im_start|>user\nAnd 3+3?<|im_end|>\n<|im_start|>assistant\n';
    // The template reads enable_thinking, so the tokenizer renders non-thinking mode unless told otherwise.
    expect(tok.chatVariables).toEqual({ enable_thinking: false });
    expect(tok.applyChatTemplate(msgs, { addGenerationPrompt: true, extra: { enable_thinking: true } })).toBe(want);
    expect(tok.applyChatTemplate(msgs, { addGenerationPrompt: true })).toBe(want + '<think>\n\n</think>\n\n');
    expect(tok.applyChatTemplate(msgs, { addGenerationPrompt: false })).toBe(
      want.slice(0, -'<|im_start|>assistant\n'.length),
    );
    const thinking = await Tokenizer.load(qwenDir, { chatVariables: { enable_thinking: true } });
    const ids = thinking.encodeChat(msgs, { addGenerationPrompt: true });
    expect(ids[0]).toBe(1); // <|im_start|> is one special id, no BOS in front
    expect(ids.filter((i) => i === 2)).toHaveLength(4); // one <|im_end|> per message
    expect(tok.decode(ids)).toBe(want);
  });

  it('keeps the reasoning of the turn after the last query and groups tool results', async () => {
    const tok = await Tokenizer.load(qwenDir);
    const msgs = [
      { role: 'user', content: 'q' },
      { role: 'assistant', content: 'call' },
      { role: 'tool', content: 'r1' },
      { role: 'tool', content: 'r2' },
      { role: 'assistant', content: '<think>\nok\n</think>\n\ndone' },
    ];
    expect(tok.applyChatTemplate(msgs, { addGenerationPrompt: false })).toBe(
      '<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\ncall<|im_end|>\n<|im_start|>user\n<tool_response>\nr1\n' +
        '</tool_response>\n<tool_response>\nr2\n</tool_response><|im_end|>\n<|im_start|>assistant\n<think>\nok\n' +
        '</think>\n\ndone<|im_end|>\n',
    );
  });

  it('reads chat_template.jinja and the list form of chat_template', async () => {
    const d = join(dir, 'jinja');
    await writeTokenizerFiles(d, fitBpeTokenizer(['abc'], 260), { chatTemplate: false });
    await writeFile(
      join(d, 'chat_template.jinja'),
      '{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}{% if add_generation_prompt %}[assistant]{% ' +
        'endif %}',
    );
    expect(
      (await Tokenizer.load(d)).applyChatTemplate([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true }),
    ).toBe('[user]hi[assistant]');
    const cfgFile = join(d, 'tokenizer_config.json');
    const cfg = JSON.parse(await readFile(cfgFile, 'utf8')) as Record<string, unknown>;
    cfg.chat_template = [
      { name: 'tool_use', template: 'TOOLS' },
      { name: 'default', template: '{{ eos_token }}{{ messages[0].content }}' },
    ];
    await writeFile(cfgFile, JSON.stringify(cfg));
    expect(
      (await Tokenizer.load(d)).applyChatTemplate([{ role: 'user', content: 'x' }], { addGenerationPrompt: false }),
    ).toBe('<|im_end|>x');
  });

  it('documents the plain fallback format', () => {
    expect(
      plainChat(
        [
          { role: 'user', content: 'a' },
          { role: 'assistant', content: 'b' },
        ],
        false,
      ),
    ).toBe('user: a\nassistant: b\n');
    expect(plainChat([], true)).toBe('assistant:');
  });
});

describe('bad tokenizer folders give one-line errors', () => {
  it('names the file and field', async () => {
    const d = join(dir, 'bad');
    await writeTokenizerFiles(d, fitBpeTokenizer(['abc'], 260));
    const cfgFile = join(d, 'tokenizer_config.json');
    const good = await readFile(cfgFile, 'utf8');
    const cfg = JSON.parse(good) as Record<string, unknown>;
    await writeFile(cfgFile, JSON.stringify({ ...cfg, chat_template: '{% for m in messages %}' }));
    expect(await errorOf(Tokenizer.load(d))).toMatch(/bad\/tokenizer_config\.json: chat_template does not parse/);
    await writeFile(cfgFile, JSON.stringify({ ...cfg, eos_token: '<|nope|>' }));
    expect(await errorOf(Tokenizer.load(d))).toMatch(
      /tokenizer_config\.json: field 'eos_token' names token "<\|nope\|>", which is not in the vocabulary/,
    );
    await writeFile(cfgFile, '{"eos_token": ');
    expect(await errorOf(Tokenizer.load(d))).toMatch(/tokenizer_config\.json: not valid JSON/);
    await writeFile(cfgFile, good);
    await rm(join(d, 'tokenizer.json'));
    expect(await errorOf(Tokenizer.load(d))).toMatch(/bad\/tokenizer\.json: missing/);
  });
});
