import { execFileSync } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { initBackend } from '../../src/backend/select.ts';
import { UserError } from '../../src/errors.ts';
import { CausalLM } from '../../src/model/causal-lm.ts';
import { run as ablate } from '../../src/recipes/ablate.ts';
import {
  dataExpertFlags,
  dataSynthFlags,
  initModelFlags,
  rolloutFlags,
  withDefaults,
  type AblateFlags,
  type ExportFlags,
} from '../../src/recipes/commands.ts';
import { run as dataExpert } from '../../src/recipes/data-expert.ts';
import { run as dataSynth } from '../../src/recipes/data-synth.ts';
import { run as exportCmd } from '../../src/recipes/export.ts';
import { run as initModel } from '../../src/recipes/init-model.ts';
import { run as plot } from '../../src/recipes/plot.ts';
import { run as rollout } from '../../src/recipes/rollout.ts';
import { sharp } from '../cli-helpers.ts';

/**
 * No command deletes or replaces a path it did not write (src/fs/output-guard.ts): an existing
 * output path that is not an earlier output of the same command is refused with one line unless
 * --force, and even then only the command's own files are replaced; an output covering an input
 * is always refused. One case per command that writes a path (eval, view --export and the
 * sft / dpo model: their own test files).
 */
const REPO = resolve(import.meta.dirname, '../..');
const TINY = join(REPO, 'models/tiny-random');
let root: string;
let adapter: string;

/** The message of the UserError `p` rejects with (one line). */
async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(UserError);
  const msg = (err as Error).message;
  expect(msg).not.toContain('\n');
  return msg;
}

/** A folder holding someone else's files. */
function userFolder(name: string): string {
  const d = join(root, name);
  mkdirSync(d, { recursive: true });
  writeFileSync(join(d, 'notes.txt'), 'mine');
  writeFileSync(join(d, 'config.json'), '{"mine": true}');
  return d;
}

function userFile(name: string): string {
  const f = join(root, name);
  writeFileSync(f, 'my data\n');
  return f;
}

const quiet = async <T>(f: () => Promise<T>): Promise<T> => {
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
  try {
    return await f();
  } finally {
    spy.mockRestore();
  }
};

beforeAll(async () => {
  await initBackend('wasm');
  root = mkdtempSync(join(tmpdir(), 'sharp-outputs-'));
  // A run folder holding LoRA adapters over the shipped tiny model, as `sharp train` with train.lora leaves them.
  adapter = join(root, 'run', 'adapter');
  const m = await CausalLM.load(TINY);
  m.attachLora({ rank: 2, alpha: 4, dropout: 0, targets: ['q_proj', 'v_proj'] }, 1);
  await m.saveAdapters(adapter, { base: TINY });
  m.dispose();
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) copyFileSync(join(TINY, f), join(adapter, f));
  writeFileSync(join(root, 'run', 'config.yaml'), 'run: {name: r}\n');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const exportOpts = (o: Partial<ExportFlags> & { out: string }): ExportFlags => ({
  model: adapter,
  dtype: 'f32',
  backend: 'wasm',
  ...o,
});

describe('sharp export', () => {
  it('--out . in a checkout is refused, the repository untouched', async () => {
    const repo = join(root, 'checkout');
    mkdirSync(repo);
    execFileSync('git', ['init', '-q', repo]);
    writeFileSync(join(repo, 'README.md'), 'my project');
    const r = await sharp(repo, ['export', '--model', adapter, '--out', '.', '--merge', '--force']);
    expect(r.code).toBe(2);
    expect(r.stderr).toBe(
      `sharp: export: --out .: is the repository of the working directory (${repo}); choose a separate output path\n`,
    );
    expect(readdirSync(repo).sort()).toEqual(['.git', 'README.md']);
  }, 120_000);

  it('--out equal to the model, its run folder, the base, or inside them is refused even with --force', async () => {
    const cases: [string, RegExp][] = [
      [adapter, /^export: --out .*adapter: is --model /],
      [join(root, 'run'), /^export: --out .*run: holds --model /],
      [join(adapter, 'merged'), /lies inside --model/],
    ];
    for (const [out, msg] of cases)
      expect(await refusal(exportCmd(exportOpts({ out, merge: true, force: true })))).toMatch(msg);
    expect(await refusal(exportCmd(exportOpts({ out: TINY, base: TINY, merge: true, force: true })))).toMatch(
      /^export: --out .*tiny-random: is --base /,
    );
    expect(
      await refusal(exportCmd(exportOpts({ out: join(root, 'b'), base: join(root, 'run'), merge: true }))),
    ).toMatch(/no config\.json there|holds --base/);
    expect(readdirSync(adapter).sort()).toEqual([
      'adapter_config.json',
      'adapter_model.safetensors',
      'tokenizer.json',
      'tokenizer_config.json',
    ]);
    expect(existsSync(join(root, 'run', 'config.yaml'))).toBe(true);
  });

  it(
    'an existing file, or a folder of other files, is refused; --force writes only its own files; a rerun replaces ' +
      'its own',
    async () => {
      const file = userFile('file.bin');
      expect(await refusal(exportCmd(exportOpts({ out: file, force: true })))).toMatch(
        /exists and is not a folder; it is not replaced/,
      );
      expect(readFileSync(file, 'utf8')).toBe('my data\n');

      const dir = userFolder('mixed');
      expect(await refusal(exportCmd(exportOpts({ out: dir, merge: true })))).toMatch(
        /is a folder not written by sharp export; choose a new folder, or pass --force/,
      );
      // --force adds the export's files beside the others, but never replaces one sharp did not write.
      expect(await refusal(exportCmd(exportOpts({ out: dir, merge: true, force: true })))).toMatch(
        /: config\.json there was not written by sharp and is not replaced/,
      );
      expect(readFileSync(join(dir, 'config.json'), 'utf8')).toBe('{"mine": true}');
      rmSync(join(dir, 'config.json'));
      await quiet(() => exportCmd(exportOpts({ out: dir, merge: true, force: true })));
      expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('mine');
      expect(existsSync(join(dir, 'model.safetensors'))).toBe(true);

      const out = join(root, 'exported');
      await quiet(() => exportCmd(exportOpts({ out, merge: true })));
      writeFileSync(join(out, 'README.md'), 'my notes');
      // the adapters alone: the merged weights (ours) go, the notes stay
      await quiet(() => exportCmd(exportOpts({ out })));
      expect(readdirSync(out).sort()).toEqual([
        '.sharp-output.json',
        'README.md',
        'adapter_config.json',
        'adapter_model.safetensors',
        'generation_config.json',
        'tokenizer.json',
        'tokenizer_config.json',
      ]);
    },
  );
});

describe('sharp init-model', () => {
  it('refuses a folder of other files, replaces its own output, and with --force keeps the others', async () => {
    const run = (out: string, force?: boolean) =>
      quiet(() =>
        initModel(
          withDefaults(initModelFlags, { out, hidden: 16, intermediate: 32, vocab: 64, backend: 'wasm', force }),
        ),
      );
    const dir = userFolder('init-user');
    expect(await refusal(run(dir))).toMatch(
      /^init-model: --out .*init-user: is a folder not written by sharp init-model/,
    );
    // An existing model (the shipped one) is not replaced, --force or not: its files are not ours.
    expect(await refusal(run(TINY, true))).toMatch(/config\.json there was not written by sharp and is not replaced/);
    expect(readdirSync(TINY)).not.toContain('.sharp-output.json');
    rmSync(join(dir, 'config.json'));
    await run(dir, true);
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('mine');
    const out = join(root, 'init-own');
    await run(out);
    await run(out);
    expect(existsSync(join(out, 'model.safetensors'))).toBe(true);
  });
});

describe('file outputs: data synth, data expert, rollout', () => {
  it('data synth: refuses a file it did not write, replaces its own, --force replaces', async () => {
    const synth = (out: string, force?: boolean) =>
      quiet(() => dataSynth(withDefaults(dataSynthFlags, { out, n: 3, force })));
    const f = userFile('synth-user.jsonl');
    expect(await refusal(synth(f, true))).toMatch(
      /^data synth: --out .*synth-user\.jsonl: exists and was not written by sharp; it is not replaced \(choose another path\)$/,
    );
    expect(readFileSync(f, 'utf8')).toBe('my data\n');
    const out = join(root, 'synth.jsonl');
    await synth(out);
    await synth(out);
    expect(readFileSync(out, 'utf8').trim().split('\n')).toHaveLength(3);
    // Edited since: no longer replaced without --force.
    writeFileSync(out, `${readFileSync(out, 'utf8')}{}\n`);
    expect(await refusal(synth(out))).toMatch(
      /exists and was changed since sharp wrote it; choose another path, or pass --force/,
    );
    await synth(out, true);
    expect(await refusal(synth('/dev/null', true))).toMatch(/not a regular file/);
  });

  it('data expert: --out equal to --in is refused even with --force', async () => {
    const episodes = join(root, 'episodes.jsonl');
    await quiet(() => dataSynth(withDefaults(dataSynthFlags, { out: episodes, n: 2 })));
    const before = readFileSync(episodes, 'utf8');
    expect(
      await refusal(dataExpert(withDefaults(dataExpertFlags, { in: episodes, out: episodes, force: true }))),
    ).toMatch(/^data expert: --out .*episodes\.jsonl: is --in /);
    expect(readFileSync(episodes, 'utf8')).toBe(before);
    const f = userFile('expert-user.jsonl');
    expect(await refusal(dataExpert(withDefaults(dataExpertFlags, { in: episodes, out: f })))).toMatch(
      /exists and was not written by sharp;/,
    );
  });

  it('rollout: refuses a file it did not write and one another command wrote; replaces its own', async () => {
    const roll = (out: string, force?: boolean) =>
      quiet(() =>
        rollout(
          withDefaults(rolloutFlags, {
            out,
            n: 1,
            policy: 'expert',
            set: ['rollout.groupSize=2', 'data.synthetic.train=4'],
            force,
          }),
        ),
      );
    expect(await refusal(roll(userFile('roll-user.jsonl')))).toMatch(
      /^rollout: --out .*: exists and was not written by sharp;/,
    );
    expect(await refusal(roll(join(root, 'synth.jsonl')))).toMatch(/exists and was written by sharp data synth/);
    const out = join(root, 'traj.jsonl');
    await roll(out);
    await roll(out);
    expect(existsSync(out)).toBe(true);
    await roll(join(root, 'synth.jsonl'), true); // another sharp command's output: --force replaces it
  });
});

describe('folder outputs written in place: ablate, plot', () => {
  const ablateOpts = (o: Partial<AblateFlags>): AblateFlags => ({
    set: [`model.path=${TINY}`, 'train.sft.steps=0', 'ablation.methods=[loo]', 'ablation.seeds=[0]'],
    backend: 'wasm',
    ...o,
  });

  it('ablate: --out an existing file or a folder of other files is one line; --report needs an ablation folder', async () => {
    expect(await refusal(ablate(ablateOpts({ out: userFile('abl-file') })))).toMatch(
      /^ablate: --out .*abl-file: exists and is not a folder/,
    );
    expect(await refusal(ablate(ablateOpts({ out: userFolder('abl-user') })))).toMatch(
      /is a folder not written by sharp ablate; choose a new or empty folder$/,
    );
    expect(await refusal(ablate(ablateOpts({ out: join(root, 'abl-typo'), report: true })))).toMatch(
      /^ablate --report: .*abl-typo not found/,
    );
    expect(existsSync(join(root, 'abl-typo'))).toBe(false);
    const empty = join(root, 'abl-empty');
    mkdirSync(empty);
    expect(await refusal(ablate(ablateOpts({ out: empty, report: true })))).toMatch(/holds no ablation runs/);
    expect(readdirSync(empty)).toEqual([]);
  });

  it('ablate --report over a damaged run summary, and a repeated seed, are one line', async () => {
    const dir = join(root, 'abl-damaged');
    mkdirSync(join(dir, 'loo-s0'), { recursive: true });
    writeFileSync(join(dir, 'loo-s0', 'config.yaml'), 'run: {}\n');
    writeFileSync(join(dir, 'loo-s0', 'summary.json'), '{"heldOutBefore": 1, "heldOutAfterRl": {"accuracy": 0.5}}');
    expect(await refusal(quiet(() => ablate(ablateOpts({ out: dir, report: true }))))).toMatch(
      /summary\.json: damaged run summary \(heldOutBefore has no numeric accuracy and total\)/,
    );
    writeFileSync(join(dir, 'loo-s0', 'summary.json'), '{"heldOutBefore": ');
    expect(await refusal(quiet(() => ablate(ablateOpts({ out: dir, report: true }))))).toMatch(
      /summary\.json: cannot read the run summary/,
    );
    const twice = ablateOpts({ out: dir, report: true });
    twice.set.push('ablation.seeds=[0, 0]');
    expect(await refusal(ablate(twice))).toMatch(/each seed at most once/);
  });

  it("plot: --out a folder of other files is refused; the run's own plots/ is reused", async () => {
    const run = join(root, 'plot-run');
    mkdirSync(run);
    writeFileSync(join(run, 'metrics.jsonl'), '{"step":1,"reward/planner":0.5}\n');
    expect(await refusal(plot({ runDir: run, out: userFolder('plot-user') }))).toMatch(
      /^sharp plot: --out .*plot-user: is a folder not written by sharp plot/,
    );
    await quiet(() => plot({ runDir: run }));
    await quiet(() => plot({ runDir: run }));
    const out = join(root, 'plots-out');
    await quiet(() => plot({ runDir: run, out }));
    await quiet(() => plot({ runDir: run, out }));
    expect(existsSync(join(out, 'reward.png'))).toBe(true);
  });
});
