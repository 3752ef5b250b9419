import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  assertApart,
  claimOutDir,
  claimOutFile,
  markOutDir,
  OUTPUT_MANIFEST,
  publishOutDir,
  recordOutFile,
} from './output-guard.ts';

const tmp = (): string => mkdtempSync(join(tmpdir(), 'sharp-guard-'));

let builds = 0;
function build(base: string, files: Record<string, string>): string {
  const t = join(base, `.build-${++builds}`);
  mkdirSync(t);
  for (const [f, v] of Object.entries(files)) writeFileSync(join(t, f), v);
  return t;
}

describe('claimOutDir / publishOutDir', () => {
  it('refuses a folder of other files; --force adds its files there but never replaces one it did not write', () => {
    const base = tmp();
    const out = join(base, 'out');
    mkdirSync(out);
    writeFileSync(join(out, 'notes.txt'), 'mine');
    writeFileSync(join(out, 'config.json'), 'old');
    expect(() => claimOutDir(out, { command: 'export', flag: '--out' })).toThrow(
      /--out .*out: is a folder not written by sharp export; choose a new folder, or pass --force/,
    );
    expect(() => claimOutDir(out, { command: 'eval', flag: '--out', forceable: false })).toThrow(
      /not written by sharp eval; choose a new or empty folder$/,
    );
    expect(() => claimOutDir(out, { command: 'export', flag: '--out', force: true, writes: ['config.json'] })).toThrow(
      /config\.json there was not written by sharp and is not replaced/,
    );
    expect(claimOutDir(out, { command: 'export', flag: '--out', force: true, writes: ['model.safetensors'] })).toEqual({
      dir: out,
      existed: true,
    });
    expect(() => publishOutDir(build(base, { 'config.json': 'new', 'model.safetensors': 'w' }), out, 'export')).toThrow(
      /config\.json there was not written by sharp/,
    );
    expect(readFileSync(join(out, 'config.json'), 'utf8')).toBe('old');
    expect(readdirSync(out).sort()).toEqual(['config.json', 'notes.txt']);
    publishOutDir(build(base, { 'model.safetensors': 'w' }), out, 'export');
    expect(readdirSync(out).sort()).toEqual([OUTPUT_MANIFEST, 'config.json', 'model.safetensors', 'notes.txt']);
    expect(readdirSync(base).filter((f) => f.startsWith('.build'))).toEqual([]);
  });

  it('replaces its own previous output without --force and removes only its own stale files', () => {
    const base = tmp();
    const out = join(base, 'out');
    claimOutDir(out, { command: 'export', flag: '--out' });
    publishOutDir(build(base, { 'a.safetensors': '1', 'b.safetensors': '2' }), out, 'export');
    writeFileSync(join(out, 'README.md'), 'user notes');
    expect(claimOutDir(out, { command: 'export', flag: '--out' }).existed).toBe(true);
    publishOutDir(build(base, { 'a.safetensors': '3' }), out, 'export');
    expect(readdirSync(out).sort()).toEqual([OUTPUT_MANIFEST, 'README.md', 'a.safetensors']);
    // Another command's output is not ours either.
    expect(() => claimOutDir(out, { command: 'init-model', flag: '--out' })).toThrow(
      /holds the output of sharp export, not of sharp init-model/,
    );
  });

  it('never replaces a file at a folder path, even with --force', () => {
    const base = tmp();
    writeFileSync(join(base, 'f'), 'x');
    expect(() => claimOutDir(join(base, 'f'), { command: 'export', flag: '--out', force: true })).toThrow(
      /exists and is not a folder/,
    );
  });

  it('accepts an empty folder and marks an in-place output', () => {
    const base = tmp();
    expect(claimOutDir(base, { command: 'eval', flag: '--out' }).existed).toBe(true);
    markOutDir(base, { command: 'eval', flag: '--out' });
    writeFileSync(join(base, 'predictions.jsonl'), '{}\n');
    expect(claimOutDir(base, { command: 'eval', flag: '--out' }).existed).toBe(true);
  });
});

describe('assertApart', () => {
  it('refuses an output equal to, above or inside an input folder', () => {
    const base = tmp();
    const model = join(base, 'run', 'adapter');
    mkdirSync(model, { recursive: true });
    const inputs = [{ path: model, what: '--model' }];
    expect(() => assertApart(model, '--out', inputs)).toThrow(
      `--out ${model}: is --model (${model}); choose a separate output path`,
    );
    expect(() => assertApart(join(base, 'run'), '--out', inputs)).toThrow(/holds --model/);
    expect(() => assertApart(join(model, 'x'), '--out', inputs)).toThrow(/lies inside --model/);
    expect(() => assertApart(join(base, 'run', 'merged'), '--out', inputs)).not.toThrow();
  });

  it('refuses the repository of the working directory, the home folder and /', () => {
    const repo = tmp();
    execFileSync('git', ['init', '-q', repo]);
    const cwd = process.cwd();
    process.chdir(join(repo));
    try {
      expect(() => assertApart('.', '--out')).toThrow(/is the repository of the working directory/);
      expect(() => assertApart('sub/dir', '--out')).not.toThrow();
    } finally {
      process.chdir(cwd);
    }
    expect(() => assertApart(homedir(), '--out')).toThrow(/the home folder/);
    expect(() => assertApart('/', '--out')).toThrow(/the file system root/);
  });
});

describe('claimOutFile / recordOutFile', () => {
  it('never replaces a file sharp did not write; replaces its own; notices an edit', () => {
    const base = tmp();
    const f = join(base, 'data.jsonl');
    writeFileSync(f, 'user data\n');
    expect(() => claimOutFile(f, { command: 'data synth', flag: '--out', force: true })).toThrow(
      `--out ${f}: exists and was not written by sharp; it is not replaced (choose another path)`,
    );
    writeFileSync(f, '{"a":1}\n');
    recordOutFile(f, 'data synth');
    expect(claimOutFile(f, { command: 'data synth', flag: '--out' })).toBe(f);
    expect(() => claimOutFile(f, { command: 'rollout', flag: '--out' })).toThrow(/was written by sharp data synth/);
    expect(claimOutFile(f, { command: 'rollout', flag: '--out', force: true })).toBe(f);
    writeFileSync(f, '{"a":1}\n{"b":2}\n');
    expect(() => claimOutFile(f, { command: 'data synth', flag: '--out' })).toThrow(/was changed since sharp wrote it/);
  });

  it('refuses a folder output that is a link, even to an empty folder, and writes nothing through it', () => {
    const base = tmp();
    mkdirSync(join(base, 'empty'));
    symlinkSync(join(base, 'empty'), join(base, 'out'));
    expect(() => claimOutDir(join(base, 'out'), { command: 'export', flag: '--out', force: true })).toThrow(
      `--out ${join(base, 'out')}: is a link; it is not followed or replaced (choose another path)`,
    );
    expect(readdirSync(join(base, 'empty'))).toEqual([]);
  });

  it('refuses links, devices and the input itself', () => {
    const base = tmp();
    const target = join(base, 't');
    writeFileSync(target, 'x');
    symlinkSync(target, join(base, 'l'));
    expect(() => claimOutFile(join(base, 'l'), { command: 'rollout', flag: '--out', force: true })).toThrow(
      /not a regular file/,
    );
    expect(() => claimOutFile('/dev/null', { command: 'rollout', flag: '--out', force: true })).toThrow(
      /not a regular file/,
    );
    expect(() =>
      claimOutFile(target, {
        command: 'data expert',
        flag: '--out',
        force: true,
        inputs: [{ path: target, what: '--in' }],
      }),
    ).toThrow(/is --in/);
    expect(existsSync(join(base, OUTPUT_MANIFEST))).toBe(false);
  });
});
