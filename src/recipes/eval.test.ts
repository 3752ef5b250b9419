import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { listStepRecords, readStepRecord } from '../credit/record.ts';
import { execFileSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { generateSynth } from '../data/synth/generate.ts';
import { writeJsonlAtomic } from '../fs/atomic.ts';
import { scoreMusique } from '../eval/musique-score.ts';
import { UserError } from '../errors.ts';
import { evalFlags, withDefaults, type GivenFlags } from './commands.ts';
import { run as runEval } from './eval.ts';
import { hasPython } from '../../test/reference/has-python.ts';

/**
 * CLI-level tests of `sharp eval`: the real command on the shipped sample and
 * the shipped model, its files scored by the Python re-implementation of evaluate_v1.0.py
 * (test/reference/musique_reference.py); the scripted expert on synthetic episodes for
 * non-trivial numbers, credit with hand-computed fractions, and resume after a kill.
 */

const repo = resolve(import.meta.dirname, '../..');
const reference = join(repo, 'test/reference/musique_reference.py');
const sample = join(repo, 'data/musique/musique_ans_v1.0_sample.jsonl');
const shippedModel = join(repo, 'models/tiny-random');

const python = hasPython();

/** `python3 musique_reference.py PRED GOLD` (the official evaluator's logic), parsed. */
function officialScore(pred: string, gold: string): Record<string, number> {
  return JSON.parse(execFileSync('python3', [reference, pred, gold], { encoding: 'utf8' })) as Record<string, number>;
}

/** Runs the command, returning what it printed on stdout. */
/** The recipe with the flags' defaults under `opts`, as `sharp eval` calls it. */
const run = (opts: GivenFlags<typeof evalFlags>): Promise<void> => runEval(withDefaults(evalFlags, opts));

async function sharpEval(opts: GivenFlags<typeof evalFlags>): Promise<string> {
  const out: string[] = [];
  const spy = vi.spyOn(process.stdout, 'write').mockImplementation((s: string | Uint8Array) => {
    out.push(String(s));
    return true;
  });
  const err = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
  try {
    await run(opts);
  } finally {
    spy.mockRestore();
    err.mockRestore();
  }
  return out.join('');
}

/** The metrics line the command prints ("answer_f1 0.5, answer_em 0, ...") as numbers. */
function printedMetrics(stdout: string): Record<string, number> {
  const line = stdout.split('\n')[1] ?? '';
  return Object.fromEntries(line.split(', ').map((kv) => [kv.split(' ')[0], Number(kv.split(' ')[1])]));
}

const lines = (file: string): string[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((l) => l.length > 0);

describe('sharp eval', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sharp-eval-cli-'));
  const synth = join(dir, 'synth2.jsonl');
  beforeAll(() => {
    // 2-hop synthetic episodes in the MuSiQue format: the scripted expert solves them through the real tools.
    writeJsonlAtomic(synth, generateSynth({ seed: 3, n: 12, minHops: 2, maxHops: 2 }));
  });
  afterEach(() => vi.restoreAllMocks());

  it('--list names every benchmark with its metric', async () => {
    const s = await sharpEval({ list: true });
    for (const b of ['musique', 'hotpotqa', '2wiki', 'frames', 'webwalkerqa', 'gaia', 'docmath'])
      expect(s).toMatch(new RegExp(`^${b} `, 'm'));
    expect(s).toContain('metric: answer EM/F1');
  });

  it.skipIf(!existsSync(shippedModel))(
    'musique --limit 20 with the shipped model: official-format file, printed metrics = the official evaluator',
    async () => {
      const out = join(dir, 'tiny');
      const stdout = await sharpEval({ bench: 'musique', limit: 20, model: shippedModel, out, backend: 'wasm' });
      const pred = join(out, 'predictions.jsonl');
      const gold = join(out, 'gold.jsonl');
      const recs = lines(pred).map((l) => JSON.parse(l) as Record<string, unknown>);
      // Gold order, exactly the official keys and types.
      expect(recs.map((r) => r.id)).toEqual(lines(sample).map((l) => (JSON.parse(l) as { id: string }).id));
      for (const r of recs) {
        expect(Object.keys(r)).toEqual(['id', 'predicted_answer', 'predicted_support_idxs', 'predicted_answerable']);
        expect(typeof r.predicted_answer).toBe('string');
        expect(typeof r.predicted_answerable).toBe('boolean');
      }
      const metrics = (
        JSON.parse(readFileSync(join(out, 'metrics.json'), 'utf8')) as { metrics: Record<string, number> }
      ).metrics;
      expect(printedMetrics(stdout)).toEqual(metrics);
      expect(scoreMusique(gold, pred)).toEqual(metrics);
      if (python) {
        // The shipped sample has exactly 20 lines: the evaluator also accepts it as the gold file.
        expect(officialScore(pred, gold)).toEqual(metrics);
        expect(officialScore(pred, sample)).toEqual(metrics);
      }
      expect(readFileSync(join(out, 'report.md'), 'utf8')).toContain('## By hops');
    },
    90_000,
  );

  it.skipIf(!existsSync(shippedModel))(
    '--agents single and direct run the shipped model through the same pipeline',
    async () => {
      for (const agents of ['single', 'direct'] as const) {
        const out = join(dir, agents);
        const stdout = await sharpEval({
          bench: 'musique',
          limit: 3,
          model: shippedModel,
          out,
          agents,
          backend: 'wasm',
        });
        expect(stdout).toContain(`eval musique (${agents}): 3 episodes (3 run now`);
        expect(lines(join(out, 'predictions.jsonl'))).toHaveLength(3);
        expect(readFileSync(join(out, 'report.md'), 'utf8')).toContain(`- agents: ${agents}`);
        expect(JSON.parse(readFileSync(join(out, 'eval-setup.json'), 'utf8'))).toMatchObject({
          agents,
          model: shippedModel,
          temperature: 0,
        });
      }
    },
    60_000,
  );

  it(
    'expert on synthetic 2-hop episodes with --credit: official numbers, hand-computed credit, resume after a ' +
      'kill',
    async () => {
      const out = join(dir, 'expert');
      const opts = { bench: 'musique', data: synth, policy: 'expert' as const, credit: true, out };
      const stdout = await sharpEval(opts);
      const pred = join(out, 'predictions.jsonl');
      const metrics = printedMetrics(stdout);
      // The expert answers every hop from the paragraphs: EM 1; support is what its workers cited.
      expect(metrics.answer_em).toBe(1);
      expect(metrics.support_f1).toBeGreaterThan(0.5);
      expect(scoreMusique(join(out, 'gold.jsonl'), pred)).toEqual(metrics);
      if (python) expect(officialScore(pred, join(out, 'gold.jsonl'))).toEqual(metrics);
      // Replay mode final, 2 hops: masking hop 2's report changes the final answer (Delta 1), masking
      // hop 1's does not (the planner answers from hop 2's report: Delta 0) -> helpful 1/2, neutral 1/2.
      // Credit: planner 0.9 * 1 (R_b) + 0.9 * mean(max(1,0), max(0,0)) = 0.45 + 0.1 * 1 (valid delegations) = 1.45;
      // workers 0.9 * 1 + 0.9 * mean(1, 0) + 0.1 * 1 = 1.45.
      const credit = JSON.parse(readFileSync(join(out, 'credit.json'), 'utf8')) as Record<string, unknown>;
      expect(credit).toMatchObject({ episodes: 12, workerCalls: 24, helpful: 0.5, neutral: 0.5, harmful: 0 });
      expect((credit.meanCredit as Record<string, number>).planner).toBeCloseTo(1.45, 12);
      expect((credit.meanCredit as Record<string, number>).worker).toBeCloseTo(1.45, 12);
      expect(readFileSync(join(out, 'report.md'), 'utf8')).toContain('| helpful (Delta > 0) | 0.500 |');
      // `sharp view`'s sample: credit.recordGroups (2) episodes of the batch, with the replayed answers
      // behind each v(S): without hop 2's report the planner answers the placeholder (v = 0).
      const recs = listStepRecords(out);
      expect(recs.map((f) => f.split('/').at(-1))).toEqual(['eval-000001.json']);
      const rec = readStepRecord(recs[0] as string);
      expect(rec).toMatchObject({ kind: 'eval', step: 1, groupsTotal: 12 });
      expect(rec.groups).toHaveLength(2);
      for (const t of rec.groups.flatMap((g) => g.trajectories)) {
        expect(t.deltas).toEqual([0, 1]);
        // two replays per coalition (credit.replays), v(N) replayed too
        expect(t.coalitions.map((c) => [c.masked, c.value, c.answers.map((a) => a.success)])).toEqual([
          [[], 1, [1, 1]],
          [[0], 1, [1, 1]],
          [[1], 0, [0, 0]],
        ]);
        expect(t.coalitions[2]?.answers[0]?.answer).toBe('[no report]');
      }
      // Per-stage breakdown against the gold decomposition: the expert asks every hop (24 of 24),
      // retrieves the support paragraph of every fact hop (23: one hop is arithmetic, answered with
      // calculate), reports every gold answer and answers every question right.
      const stages = JSON.parse(readFileSync(join(out, 'stages.json'), 'utf8')) as Record<
        string,
        { num: number; den: number }
      >;
      expect(stages).toMatchObject({
        trajectories: 12,
        accuracy: { num: 12, den: 12 },
        subQuestion: { num: 24, den: 24 },
        retrieval: { num: 23, den: 23 },
        report: { num: 24, den: 24 },
        offPlan: { num: 0, den: 24 },
      });
      expect(readFileSync(join(out, 'report.md'), 'utf8')).toContain(
        "| worker report equals the hop's gold answer | 1.000 [0.862, 1.000] (n = 24) |",
      );

      // A kill mid-run: the last 5 episodes lost, the line being written torn. The rerun does only those 5.
      const first = readFileSync(pred, 'utf8');
      const log = join(out, 'predictions.log.jsonl');
      writeFileSync(log, `${lines(log).slice(0, 7).join('\n')}\n`);
      appendFileSync(log, '{"key":"2hop__');
      const again = await sharpEval(opts);
      expect(again).toContain('12 episodes (5 run now');
      // The resumed run adds its own batch file; the first one is untouched.
      expect(listStepRecords(out).map((f) => f.split('/').at(-1))).toEqual(['eval-000001.json', 'eval-000002.json']);
      expect(readStepRecord(listStepRecords(out)[1] as string).groupsTotal).toBe(5);
      expect(readFileSync(pred, 'utf8')).toBe(first);
      expect(JSON.parse(readFileSync(join(out, 'credit.json'), 'utf8'))).toEqual(credit);
      expect(JSON.parse(readFileSync(join(out, 'stages.json'), 'utf8'))).toEqual(stages);
      // Nothing pending: no episode runs, the files are rewritten from the log.
      expect(await sharpEval(opts)).toContain('(0 run now');

      // The same folder with another agent system is refused instead of mixing two systems' answers.
      await expect(run({ ...opts, agents: 'single' })).rejects.toThrow(
        /holds predictions of another setup \(agents: "multi" there, "single" now\)/,
      );
    },
    60_000,
  );

  it('bad input is a one-line UserError', async () => {
    const userDir = (): string => {
      const d = join(dir, 'user-files');
      mkdirSync(d, { recursive: true });
      writeFileSync(join(d, 'notes.txt'), 'mine');
      return d;
    };
    const cases: Array<[GivenFlags<typeof evalFlags>, RegExp]> = [
      [{ bench: 'nope', policy: 'expert', out: join(dir, 'x1') }, /^eval: unknown benchmark 'nope' \(known: musique, /],
      [
        { bench: 'musique', model: join(dir, 'no-model') },
        /^--model .*no-model: no config\.json there \(expected a Hugging Face checkpoint folder\)$/,
      ],
      [{ bench: 'musique', set: [`model.path=${join(dir, 'none')}`] }, /^model\.path .*none: no config\.json there/],
      [
        { bench: 'musique', data: join(dir, 'missing.jsonl'), policy: 'expert', out: join(dir, 'x2') },
        /^eval: .*missing\.jsonl: benchmark file not found \(--data\)$/,
      ],
      [
        { bench: 'musique', limit: -1, policy: 'expert' },
        /^--limit expects an integer >= 1 \(the first n items; leave it out to evaluate all\), got '-1'$/,
      ],
      [{ bench: 'musique', limit: 0, policy: 'expert' }, /^--limit expects an integer >= 1 .*got '0'$/],
      // An existing folder this command did not write, and the model's own folder, are never written into.
      [
        { bench: 'musique', policy: 'expert', out: userDir() },
        /^eval: --out .*: is a folder not written by sharp eval; choose a new or empty folder$/,
      ],
      [
        { bench: 'musique', limit: 2, model: shippedModel, out: join(shippedModel, 'eval') },
        /^eval: --out .*: lies inside --model/,
      ],
    ];
    for (const [opts, msg] of cases) {
      const err = await run(opts).then(
        () => null,
        (e: unknown) => e,
      );
      expect(err).toBeInstanceOf(UserError);
      expect((err as Error).message).toMatch(msg);
      expect((err as Error).message).not.toContain('\n');
    }
  });
});
