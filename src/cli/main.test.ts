import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';

const root = join(import.meta.dirname, '../..');
const sharp = (...args: string[]) =>
  spawnSync(process.execPath, [join(root, 'bin/sharp.js'), ...args], { cwd: root, encoding: 'utf8', timeout: 60_000 });

describe('sharp CLI', () => {
  it('prints the resolved config', () => {
    const r = sharp('config', '--config', 'configs/quickstart.yaml', '--set', 'train.steps=5');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('name: quickstart');
    expect(r.stdout).toMatch(/steps: 5\n/);
  });

  it('names the bad key in one line and exits 2', () => {
    const r = sharp('config', '--config', 'configs/quickstart.yaml', '--set', 'train.lr=abc');
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('train.lr');
    expect(r.stderr).not.toMatch(/\n\s+at /);
  });

  it('reports a missing config file with exit 2', () => {
    const r = sharp('config', '--config', 'configs/nope.yaml');
    expect(r.status).toBe(2);
    expect(r.stderr.trim()).toBe('sharp: config: file not found: configs/nope.yaml');
  });

  it('rejects an unknown option with exit 2', () => {
    expect(sharp('config', '--bogus').status).toBe(2);
  });

  it("rejects a value outside a flag's choices, a bad integer and a missing required flag with exit 2", () => {
    expect(sharp('rollout', '--policy', 'oracle', '--out', 'x.jsonl').status).toBe(2);
    const bad = sharp('data', 'synth', '--n', 'x', '--out', 'x.jsonl');
    expect(bad.status).toBe(2);
    expect(bad.stderr.trim()).toBe("sharp: --n expects an integer, got 'x'");
    expect(sharp('data', 'synth').status).toBe(2);
  });

  it('doctor names the backend and a matmul rate', () => {
    const r = sharp('doctor');
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/backend\s+wasm/);
    expect(r.stdout).toMatch(/wasm SIMD\s+on/);
    expect(r.stdout).toMatch(/libcudnn\.so\.8\s+(MISSING|\/)/);
    expect(r.stdout).toMatch(/matmul\s+\d+\.\d+ GFLOP\/s/);
  });

  it('eval --list names every benchmark through the real binary', () => {
    const r = sharp('eval', '--list');
    expect(r.status).toBe(0);
    for (const b of ['musique', 'hotpotqa', '2wiki', 'frames', 'webwalkerqa', 'gaia', 'docmath'])
      expect(r.stdout).toContain(b);
  });

  it('eval names an unknown benchmark in one line with exit 2', () => {
    const r = sharp('eval', '--bench', 'nope');
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('an unavailable explicit backend is one line and exit 2', () => {
    const r = sharp('doctor', '--backend', 'tensorflow');
    expect(r.status).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain("backend 'tensorflow' is unavailable");
  });
});

describe('buildProgram', () => {
  it('registers every command of src/recipes/commands.ts, subcommands under their parent, flags in kebab-case', async () => {
    const { buildProgram } = await import('./main.ts');
    const program = buildProgram();
    const names = (c: Command) => c.commands.map((s) => s.name());
    expect(names(program)).toEqual([
      'train',
      'ablate',
      'sft',
      'dpo',
      'eval',
      'audit',
      'config',
      'doctor',
      'generate',
      'export',
      'init-model',
      'data',
      'rollout',
      'worker',
      'index',
      'serve',
      'plot',
      'view',
    ]);
    const sub = (name: string) => program.commands.find((c) => c.name() === name) as Command;
    expect(names(sub('data'))).toEqual(['synth', 'expert']);
    expect(names(sub('config'))).toEqual(['schema']);
    expect(names(sub('index'))).toEqual(['build', 'info']);
    expect(names(sub('serve'))).toEqual(['retrieval']);
    expect(sub('generate').options.map((o) => o.flags)).toContain('--max-new-tokens <n>');
    expect(sub('view').registeredArguments.map((a) => a.name())).toEqual(['runDir']);
  });
});

describe('exitCodeFor', () => {
  it('turns a wasm abort into one line that names the memory settings', async () => {
    const { exitCodeFor } = await import('./main.ts');
    const written: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((s: string) => (written.push(s), true)) as typeof process.stderr.write;
    try {
      expect(exitCodeFor(new WebAssembly.RuntimeError('Aborted(). Build with -sASSERTIONS for more info.'))).toBe(1);
    } finally {
      process.stderr.write = write;
    }
    expect(written).toEqual([
      'sharp: the wasm backend aborted, most often because its memory is full: lower train.microBatch or ' +
        'rollout.maxContext (a training run resumes from its last checkpoint)\n',
    ]);
  });

  it('prints a user error with its control bytes escaped: no terminal sequence, no second line', async () => {
    const { exitCodeFor } = await import('./main.ts');
    const { UserError } = await import('../errors.ts');
    const written: string[] = [];
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = ((s: string) => (written.push(s), true)) as typeof process.stderr.write;
    try {
      expect(exitCodeFor(new UserError('--out a\u001b[2Jb\nsharp: fake\u0007: not found'))).toBe(2);
    } finally {
      process.stderr.write = write;
    }
    expect(written).toEqual(['sharp: --out a\\x1b[2Jb\\x0asharp: fake\\x07: not found\n']);
  });

  it('shows the invisible characters a message names as U+XXXX, and leaves visible text alone', async () => {
    const { printable } = await import('./main.ts');
    expect(printable(`c.jsonl:1: Unexpected token '\uFEFF', "\uFEFF{"id"" is not valid JSON`)).toBe(
      `c.jsonl:1: Unexpected token 'U+FEFF', "U+FEFF{"id"" is not valid JSON`,
    );
    expect(printable('a\u200Bb\u202Ec\u2028d\u00A0e')).toBe('aU+200BbU+202EcU+2028dU+00A0e');
    expect(printable('héllo wörld 東京 🙂')).toBe('héllo wörld 東京 🙂');
  });
});
