import { spawn } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Bad models, files and flags through the real binary: each must end with exit 2 and exactly one
 * line on stderr (no stack), and never hang.
 */
const root = join(import.meta.dirname, '../..');
const TINY = join(root, 'models/tiny-random');

function sharp(cwd: string, args: string[]): Promise<{ code: number | null; stderr: string; ms: number }> {
  return new Promise((res) => {
    const t0 = Date.now();
    const child = spawn(process.execPath, [join(root, 'bin/sharp.js'), ...args], {
      cwd,
      env: { ...process.env, FORCE_COLOR: '0' },
      timeout: 90_000,
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => res({ code, stderr, ms: Date.now() - t0 }));
  });
}

let dir: string;

/** A copy of the shipped tiny model, changed by `edit`. */
function model(name: string, edit: (d: string) => void): string {
  const d = join(dir, name);
  cpSync(TINY, d, { recursive: true });
  edit(d);
  return d;
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sharp-oneline-'));
  mkdirSync(join(dir, 'adir'));
  writeFileSync(join(dir, 'afile'), 'x');
  model('gelu', (d) => {
    const f = join(d, 'config.json');
    const c = JSON.parse(readFileSync(f, 'utf8')) as Record<string, unknown>;
    writeFileSync(f, JSON.stringify({ ...c, hidden_act: 'gelu' }));
  });
  model('cfgdir', (d) => {
    rmSync(join(d, 'config.json'));
    mkdirSync(join(d, 'config.json'));
  });
  model('dotdot', (d) => {
    rmSync(join(d, 'model.safetensors'));
    writeFileSync(
      join(d, 'model.safetensors.index.json'),
      JSON.stringify({ metadata: {}, weight_map: { 'model.embed_tokens.weight': '..' } }),
    );
  });
  model('raise', (d) => {
    const f = join(d, 'tokenizer_config.json');
    const c = JSON.parse(readFileSync(f, 'utf8')) as Record<string, unknown>;
    writeFileSync(f, JSON.stringify({ ...c, chat_template: "{{ raise_exception('system role not supported') }}" }));
  });
  model('nan', (d) => {
    // First element of the first tensor in the file set to NaN (F32 little-endian).
    const f = join(d, 'model.safetensors');
    const b = readFileSync(f);
    const n = Number(b.readBigUInt64LE(0));
    const header = JSON.parse(b.subarray(8, 8 + n).toString('utf8')) as Record<
      string,
      { dtype: string; data_offsets: [number, number] }
    >;
    const first = Object.entries(header)
      .filter(([k]) => k !== '__metadata__')
      .sort(([a], [b2]) => a.localeCompare(b2))[0];
    if (!first || first[1].dtype !== 'F32') throw new Error('fixture: expected an F32 tensor');
    b.writeFloatLE(NaN, 8 + n + first[1].data_offsets[0]);
    writeFileSync(f, b);
  });
  writeFileSync(join(dir, 'empty.jsonl'), '');
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const gen = (m: string, ...extra: string[]) => [
  'generate',
  '--model',
  m,
  '--prompt',
  'hi',
  '--max-new-tokens',
  '2',
  ...extra,
];

const cases: Array<[string, string[], RegExp]> = [
  ['hidden_act gelu in config.json', gen('gelu'), /config\.json: .*hidden_act.*gelu/],
  ['config.json that is a folder', gen('cfgdir'), /config\.json: not a regular file$/],
  [
    "a shard named '..' in the index",
    gen('dotdot'),
    /shard name '\.\.' is not a file name inside the checkpoint folder$/,
  ],
  [
    'NaN weights (generate)',
    gen('nan'),
    /tensor 'model\.embed_tokens\.weight' has a non-finite value \(NaN\) at element 0$/,
  ],
  [
    'NaN weights (eval)',
    ['eval', '--model', 'nan', '--bench', 'musique', '--limit', '1', '--out', 'e-nan'],
    /tensor 'model\.embed_tokens\.weight' has a non-finite value/,
  ],
  [
    'raise_exception in the chat template (generate --chat)',
    gen('raise', '--chat'),
    /^sharp: chat template: system role not supported$/,
  ],
  [
    'raise_exception in the chat template (eval)',
    ['eval', '--model', 'raise', '--bench', 'musique', '--limit', '1', '--out', 'e-raise'],
    /^sharp: chat template: system role not supported$/,
  ],
  [
    'data synth --out DIR',
    ['data', 'synth', '--n', '2', '--out', 'adir'],
    /^sharp: data synth: --out adir: is a folder, expected a file path$/,
  ],
  [
    'rollout --out DIR',
    ['rollout', '--policy', 'expert', '--n', '1', '--out', 'adir'],
    /^sharp: rollout: --out adir: is a folder, expected a file path$/,
  ],
  [
    'init-model --out FILE',
    ['init-model', '--out', 'afile'],
    /^sharp: init-model: --out afile: exists and is not a folder; it is not replaced \(choose another path\)$/,
  ],
  [
    'config schema --out FILE/x',
    ['config', 'schema', '--out', 'afile/x'],
    /^sharp: config schema: --out afile\/x: .*afile is not a folder$/,
  ],
  [
    'eval --policy expert without gold decompositions',
    ['eval', '--policy', 'expert', '--bench', 'hotpotqa', '--limit', '1', '--out', 'e-exp'],
    /has no gold decomposition/,
  ],
  [
    'an empty benchmark file',
    ['eval', '--policy', 'expert', '--bench', 'musique', '--data', 'empty.jsonl', '--out', 'e-empty'],
    /empty\.jsonl: no records/,
  ],
  [
    '--out under /proc (recursive mkdir would hang)',
    ['data', 'synth', '--n', '2', '--out', '/proc/sharp-x/y.jsonl'],
    /^sharp: data synth: --out \/proc\/sharp-x\/y\.jsonl: cannot create folder/,
  ],
  [
    'init-model --out under /proc',
    ['init-model', '--out', '/proc/sharp-x'],
    /^sharp: init-model: --out \/proc\/sharp-x: cannot create folder/,
  ],
];

// Concurrent (vitest's maxConcurrency, 5): each case is a full process start (tsx) on two shared cores.
describe('one-line errors through the real binary', () => {
  it.concurrent.each(cases)('%s: exit 2, one line', async (name, args, pattern) => {
    const r = await sharp(dir, args);
    const lines = r.stderr.trim().split('\n');
    expect({ code: r.code, lines: lines.length }, r.stderr).toEqual({ code: 2, lines: 1 });
    expect(lines[0], name).toMatch(pattern);
  });
});
