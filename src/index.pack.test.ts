import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from './config/load.ts';

/**
 * The package as a stranger gets it: `npm pack` (its prepack builds the declarations into this
 * checkout's dist/types, ignored by git), then a fresh project that imports 'sharp-rl' from the
 * tarball. The tarball is unpacked into the project's node_modules/sharp-rl, as npm would place it;
 * its dependencies cannot be installed here (an offline `npm install` of the tarball needs the
 * registry's package metadata, which npm's cache does not hold), so the package's own node_modules
 * is a link to this checkout's, the versions package-lock.json pins. Async child processes
 * throughout: a blocking spawnSync would starve vitest's worker RPC.
 */
const run = promisify(execFile);
const repo = resolve(import.meta.dirname, '..');
const dir = mkdtempSync(join(tmpdir(), 'sharp-pack-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface PackInfo {
  filename: string;
  files: Array<{ path: string }>;
}

/** What the importing project prints: the entry's exports, and loadConfig's result and errors. */
const IMPORT_CHECK = `
import('sharp-rl').then((m) => {
  const names = Object.keys(m).sort();
  const kinds = names.map((n) => typeof m[n]);
  const config = m.loadConfig('node_modules/sharp-rl/configs/quickstart.yaml', ['train.steps=3']);
  let error;
  try {
    m.loadConfig({ train: { lrr: 1 } });
  } catch (e) {
    error = { userError: e instanceof m.UserError, exitCode: e.exitCode, message: e.message };
  }
  console.log(JSON.stringify({ names, kinds, config, error }));
});
`;

/** A TypeScript consumer: it type-checks only if the package's declarations give real types. */
const CONSUMER_TS = `
import { loadConfig, train, evaluate, audit, defineReward } from 'sharp-rl';
import type { Config, Trajectory, TrainResult } from 'sharp-rl';

const cfg: Config = loadConfig('node_modules/sharp-rl/configs/quickstart.yaml', ['train.steps=2']);
export const steps: number = cfg.train.steps;
// @ts-expect-error a config source is a file path or an object of sections
loadConfig(42);
// @ts-expect-error an unknown key of the config object
loadConfig({ train: { lrr: 1 } });
export const later = (): Promise<TrainResult> => train(cfg, { backend: 'wasm' });
export const f1 = async (): Promise<number | undefined> => (await evaluate({ bench: 'jsonl' })).report.metrics.f1;
export const arms = async (): Promise<number> => (await audit({ n: 2 })).report.arms.length;
export const none: Trajectory | undefined = undefined;
export const exact = defineReward(({ answer, gold, trajectory }) =>
  answer === gold[0] ? 1 : trajectory.agents.length === 0 ? -1 : 0,
);
export const withReward = (): Promise<TrainResult> => train(cfg, { rewards: [{ reward: exact, weight: 2 }] });
// @ts-expect-error a reward returns a number
defineReward(() => 'yes');
`;

describe('the packed package', () => {
  it('holds what an importer needs, and a fresh project imports it, loads a shipped config and type-checks', async () => {
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], {
      cwd: repo,
      maxBuffer: 64 * 2 ** 20,
    });
    const [info] = JSON.parse(stdout) as PackInfo[];
    const paths = new Set(info?.files.map((f) => f.path));
    for (const p of [
      'package.json',
      'index.js',
      'dist/types/index.d.ts',
      'src/index.ts',
      'bin/sharp.js',
      'configs/quickstart.yaml',
      'data/jsonl/questions_sample.jsonl',
      'models/sharp-tiny-sft/config.json',
      'scripts/build-native.mjs',
      'docs/extending.md',
    ])
      expect(paths.has(p), p).toBe(true);
    expect([...paths].filter((p) => p.endsWith('.test.ts') || /^(test|native\/build)\//.test(p))).toEqual([]);

    const project = join(dir, 'project');
    const pkg = join(project, 'node_modules', 'sharp-rl');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(project, 'package.json'), '{"name": "consumer", "private": true, "type": "module"}\n');
    await run('tar', ['-xzf', join(dir, info?.filename as string), '-C', pkg, '--strip-components=1']);
    symlinkSync(join(repo, 'node_modules'), join(pkg, 'node_modules'), 'dir');

    const imported = await run(process.execPath, ['--input-type=module', '-e', IMPORT_CHECK], { cwd: project });
    const got = JSON.parse(imported.stdout) as { names: string[]; kinds: string[]; config: unknown; error: unknown };
    // The values src/index.ts exports (src/index.test.ts checks the same list there), and nothing else.
    expect(got.names).toEqual(['UserError', 'audit', 'defineReward', 'defineTool', 'evaluate', 'loadConfig', 'train']);
    expect(got.kinds).toEqual(got.names.map(() => 'function'));
    expect(got.config).toEqual(
      JSON.parse(JSON.stringify(loadConfig({ file: join(repo, 'configs/quickstart.yaml'), sets: ['train.steps=3'] }))),
    );
    expect(got.error).toEqual({ userError: true, exitCode: 2, message: 'config: unknown key train.lrr' });

    writeFileSync(join(project, 'consumer.ts'), CONSUMER_TS);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'nodenext', target: 'es2022', strict: true, noEmit: true, skipLibCheck: true },
        files: ['consumer.ts'],
      }),
    );
    // tsc exits non-zero (and execFile rejects with its output) on any error, an unused @ts-expect-error included.
    await run(process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '-p', project], { cwd: project });
  }, 180_000);
});
