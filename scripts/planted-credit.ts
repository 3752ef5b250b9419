import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/load.ts';
import { listStepRecords, readStepRecord } from '../src/credit/record.ts';
import { plantedCredit, type CallCredit, type PlantedCredit, type RecordedRun } from '../src/eval/planted-credit.ts';
import { loadTrainData } from '../src/recipes/stages/train-data.ts';

/**
 * `npx tsx scripts/planted-credit.ts RUN...`: what the counterfactual credit gave the worker calls
 * that repeated a planted claim during training (src/eval/planted-credit.ts), from each run's
 * recorded steps (`<run>/trajectories/`) and its config.yaml (which regenerates the training
 * episodes). One row per run and per cell (planted or other call, in successes or failures), then
 * the cells pooled over the runs of each credit setting. Reads files only; seconds.
 */
const { positionals } = parseArgs({ allowPositionals: true });
if (positionals.length === 0) {
  console.error('usage: npx tsx scripts/planted-credit.ts RUN_DIR...');
  process.exit(2);
}

const fmt = (c: CallCredit): string =>
  `${String(c.calls).padStart(5)} calls  Delta mean ${c.meanDelta.toFixed(3).padStart(6)}  <0 ` +
  `${pct(c.negative, c.calls)}  >0 ${pct(c.positive, c.calls)}  phi mean ` +
  `${c.meanPhi === null ? '   - ' + ' ' : c.meanPhi.toFixed(3).padStart(6)}`;
function pct(n: number, d: number): string {
  return d === 0 ? '   -  ' : `${((100 * n) / d).toFixed(1).padStart(5)}%`;
}

const CELLS = ['planted, failures', 'planted, successes', 'other, failures', 'other, successes'] as const;
const print = (r: PlantedCredit): void => {
  const cells = [r.planted.failure, r.planted.success, r.other.failure, r.other.success];
  CELLS.forEach((name, i) => console.log(`  ${name.padEnd(20)} ${fmt(cells[i] as CallCredit)}`));
};

const pooled = new Map<string, RecordedRun[]>();
for (const dir of positionals) {
  const cfg = loadConfig({ file: join(dir, 'config.yaml') });
  const run: RecordedRun = {
    records: listStepRecords(dir)
      .map(readStepRecord)
      .filter((r) => r.kind === 'train'),
    episodes: loadTrainData(cfg.data).train,
  };
  const first = run.records[0];
  const cf = first?.credit.counterfactual;
  const setting = first ? `${first.credit.method}${cf && cf !== 'mask' ? `-${cf}` : ''}` : 'none';
  pooled.set(setting, [...(pooled.get(setting) ?? []), run]);
  console.log(`${dir} (${setting}, ${run.records.length} steps)`);
  print(plantedCredit([run]));
}
console.log('\npooled over runs');
for (const [setting, runs] of pooled) {
  console.log(`${setting} (${runs.length} runs)`);
  print(plantedCredit(runs));
}
