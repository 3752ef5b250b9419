import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/load.ts';
import { createRunDir } from '../run/run-dir.ts';
import { sharp } from '../../test/cli-helpers.ts';
import { errorOf } from '../../test/one-line-error.ts';
import { train } from './train.ts';

/**
 * Bad user tools stop a command with one line (UserError, exit 2) before any run folder exists, and
 * a run folder's config.yaml keeps `${ENV_NAME}` references, never their values.
 */
const REPO = resolve(import.meta.dirname, '../..');
const FIXTURES = join(REPO, 'test/fixtures/user-tools');
const root = mkdtempSync(join(tmpdir(), 'sharp-user-tools-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const config = (name: string, tools: unknown[]) =>
  loadConfig({
    tree: {
      run: { name, dir: join(root, name) },
      model: { path: join(REPO, 'models/sharp-tiny-sft') },
      rollout: { tools },
    },
  });

describe('bad user tools, before any run folder', () => {
  const cases: [string, unknown[], RegExp][] = [
    ['no-tool', [{ module: join(FIXTURES, 'no-tool.ts') }], /^rollout\.tools: module .*no-tool\.ts exports no tool/],
    [
      'not-object',
      [{ module: join(FIXTURES, 'bad-tools.ts'), export: 'arrayParams' }],
      /tool 'arrayParams': parameters must be an object schema \(type: object\), got type "array"$/,
    ],
    ['twice', ['code', 'code'], /^rollout\.tools: two tools are named 'code'/],
    [
      'clash',
      [{ module: join(FIXTURES, 'search-clash.ts') }],
      /tool 'search' takes the name of a built-in \(search, calculate, code, delegate, answer\)$/,
    ],
    [
      'dead-server',
      [{ mcp: 'dead', command: process.execPath, args: ['-e', 'process.exit(1)'], startTimeoutMs: 10_000 }],
      /^rollout\.tools: mcp server dead did not start: /,
    ],
  ];
  for (const [name, tools, message] of cases)
    it(`train: ${name}`, async () => {
      const cfg = config(name, tools);
      const msg = await errorOf(train(cfg));
      expect(msg).toMatch(message);
      expect(existsSync(cfg.run.dir) ? readdirSync(cfg.run.dir) : []).toEqual([]);
    });

  it('the CLI prints the one line and exits 2', async () => {
    const file = join(root, 'cli.yaml');
    writeFileSync(
      file,
      `run: {name: cli, dir: ${join(root, 'cli-runs')}}\nmodel: {path: ${join(REPO, 'models/sharp-tiny-sft')}}\n` +
        `rollout: {tools: [search, {module: ${join(FIXTURES, 'no-tool.ts')}}]}\n`,
    );
    const r = await sharp(root, ['train', '--config', file]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n').at(-1)).toMatch(/rollout\.tools: module .*no-tool\.ts exports no tool/);
    expect(existsSync(join(root, 'cli-runs')) ? readdirSync(join(root, 'cli-runs')) : []).toEqual([]);
  });

  it('sharp ablate: the one line before its ablation folder exists', async () => {
    const file = join(root, 'ablate.yaml');
    const out = join(root, 'ablate-out');
    writeFileSync(
      file,
      `run: {name: abl, dir: ${join(root, 'abl-runs')}}\nmodel: {path: ${join(REPO, 'models/sharp-tiny-sft')}}\n` +
        `rollout: {tools: [search, {module: ${join(FIXTURES, 'no-tool.ts')}}]}\n` +
        'ablation: {methods: [broadcast], seeds: [0]}\n',
    );
    const r = await sharp(root, ['ablate', '--config', file, '--out', out]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr.trim()).toMatch(/rollout\.tools: module .*no-tool\.ts exports no tool/);
    expect(existsSync(out)).toBe(false);
  });
});

describe('secrets in the config', () => {
  it('config.yaml records ${ENV_NAME}, not the value the server gets', () => {
    process.env['SHARP_TEST_SECRET'] = 'do-not-record-me';
    try {
      const cfg = config('secret', [
        { mcp: 'web', url: 'http://127.0.0.1:9/mcp', headers: { Authorization: 'Bearer ${SHARP_TEST_SECRET}' } },
      ]);
      const dir = createRunDir(cfg);
      const yaml = readFileSync(join(dir, 'config.yaml'), 'utf8');
      expect(yaml).toContain('Bearer ${SHARP_TEST_SECRET}');
      expect(yaml).not.toContain('do-not-record-me');
    } finally {
      delete process.env['SHARP_TEST_SECRET'];
    }
  });
});
