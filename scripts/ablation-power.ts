/**
 * The minimum detectable effect of a planned ablation from a finished one's variances:
 * `npx tsx scripts/ablation-power.ts docs/ablation-parallel/ablation.json [--against broadcast]`.
 * For each arm against the reference arm, the paired difference per (seed, test question) of test
 * accuracy after RL is split into a seed component, a question component and a residual (two-way
 * ANOVA without replication); the residual into the binomial noise of the k sampled trajectories per
 * question (estimated within each cell) and the rest. The standard error a seed-and-question
 * bootstrap gives (sharp ablate's intervals) is then about
 *   se^2 = v_seed / S + v_question / Q + 2 (v_rest + v_within(k0) k0 / k) / (S Q),
 * and the MDE at 80% power, two-sided 5%, is 2.80 se. Printed for the finished design (to check the
 * model against the report's MDE) and for the candidate designs.
 */
import { readFileSync } from 'node:fs';

interface Question {
  id: string;
  correct: number;
}
interface Run {
  method: string;
  seed: number;
  after: { samples: number; questions: Question[] };
}

const args = process.argv.slice(2);
const file = args[0];
if (!file) {
  console.error('usage: tsx scripts/ablation-power.ts ABLATION.json [--against ARM]');
  process.exit(2);
}
const against = args.includes('--against') ? (args[args.indexOf('--against') + 1] as string) : 'broadcast';
const runs = (JSON.parse(readFileSync(file, 'utf8')) as { runs: Run[] }).runs;
const cell = new Map(runs.map((r) => [`${r.method}/${r.seed}`, r]));
const DESIGNS: [number, number, number][] = [
  [5, 150, 4],
  [8, 300, 4],
  [10, 300, 4],
  [8, 450, 4],
  [10, 450, 4],
  [12, 450, 4],
];
const f4 = (x: number): string => x.toFixed(4);

for (const arm of [...new Set(runs.map((r) => r.method))].filter((m) => m !== against && m !== 'single')) {
  const seeds = [
    ...new Set(runs.filter((r) => r.method === arm && cell.has(`${against}/${r.seed}`)).map((r) => r.seed)),
  ].sort((a, b) => a - b);
  if (seeds.length < 2) continue;
  const ref = cell.get(`${against}/${seeds[0]}`) as Run;
  const k = ref.after.samples;
  const ids = ref.after.questions.map((q) => q.id);
  const correct = (m: string, s: number): Map<string, number> =>
    new Map((cell.get(`${m}/${s}`) as Run).after.questions.map((q) => [q.id, q.correct]));
  const S = seeds.length;
  const Q = ids.length;
  const d: number[][] = [];
  let within = 0;
  for (const s of seeds) {
    const a = correct(arm, s);
    const b = correct(against, s);
    d.push(ids.map((id) => ((a.get(id) ?? 0) - (b.get(id) ?? 0)) / k));
    // Unbiased binomial variance of each arm's mean over k samples, summed: the sampling part of a cell.
    for (const id of ids) for (const c of [a.get(id) ?? 0, b.get(id) ?? 0]) within += (c * (k - c)) / (k * k * (k - 1));
  }
  within /= S * Q;
  const mean = d.flat().reduce((x, y) => x + y, 0) / (S * Q);
  const ms = d.map((row) => row.reduce((x, y) => x + y, 0) / Q);
  const mq = ids.map((_, j) => d.reduce((x, row) => x + (row[j] as number), 0) / S);
  const msSeed = (Q * ms.reduce((x, m) => x + (m - mean) ** 2, 0)) / (S - 1);
  const msQuestion = (S * mq.reduce((x, m) => x + (m - mean) ** 2, 0)) / (Q - 1);
  let rss = 0;
  d.forEach((row, i) => row.forEach((x, j) => (rss += (x - (ms[i] as number) - (mq[j] as number) + mean) ** 2)));
  const vRes = rss / ((S - 1) * (Q - 1));
  const vSeed = Math.max(0, (msSeed - vRes) / Q);
  const vQuestion = Math.max(0, (msQuestion - vRes) / S);
  const vRest = Math.max(0, vRes - within);
  console.log(
    `${arm} - ${against}: mean ${mean.toFixed(3)} (S ${S}, Q ${Q}, k ${k}); v_seed ${f4(vSeed)}, v_question ` +
      `${f4(vQuestion)}, v_within(k=${k}) ${f4(within)}, v_rest ${f4(vRest)}`,
  );
  for (const [s, q, kk] of DESIGNS) {
    const se = Math.sqrt(vSeed / s + vQuestion / q + (2 * (vRest + (within * k) / kk)) / (s * q));
    console.log(
      `  seeds ${String(s).padStart(2)}, test questions ${String(q).padStart(3)}, samples ${kk}: MDE ${f4(2.8 * se)}`,
    );
  }
}
