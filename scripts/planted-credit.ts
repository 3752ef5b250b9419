import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig } from '../src/config/load.ts';
import { listStepRecords, readStepRecord } from '../src/credit/record.ts';
import { plantedCredit, type CallCredit } from '../src/eval/planted-credit.ts';
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
  `${String(c.calls).padStart(5)} calls  Delta mean ${c.meanDelta.toFixed(3).padStart(6)}  <0 ${pct(c.negative, c.calls)}  >0 ${pct(c.positive, c.calls)}  phi mean ${c.meanPhi === null ? '   -  ' : c.meanPhi.toFixed(3).padStart(6)}`;
function pct(n: number, d: number): string {
  return d === 0 ? '   -  ' : `${((100 * n) / d).toFixed(1).padStart(5)}%`;
}

const pooled = new Map<string, CallCredit[][]>();
for (const run of positionals) {
  const cfg = loadConfig({ file: join(run, 'config.yaml') });
  const records = listStepRecords(run).map(readStepRecord).filter((r) => r.kind === 'train');
  const setting = records[0] ? `${records[0].credit.method}${records[0].credit.counterfactual === 'resample' ? '-resample' : ''}` : 'none';
  const r = plantedCredit(records, loadTrainData(cfg.data).train);
  const cells = [r.planted.failure, r.planted.success, r.other.failure, r.other.success];
  pooled.set(setting, [...(pooled.get(setting) ?? []), cells]);
  console.log(`${run} (${setting}, ${records.length} steps)`);
  ['planted, failures', 'planted, successes', 'other, failures', 'other, successes'].forEach((name, i) => console.log(`  ${name.padEnd(20)} ${fmt(cells[i] as CallCredit)}`));
}
console.log('\npooled over runs');
for (const [setting, runs] of pooled) {
  console.log(`${setting} (${runs.length} runs)`);
  ['planted, failures', 'planted, successes', 'other, failures', 'other, successes'].forEach((name, i) => {
    const cs = runs.map((cells) => cells[i] as CallCredit);
    const calls = cs.reduce((a, c) => a + c.calls, 0);
    const phis = cs.filter((c) => c.meanPhi !== null);
    const phiCalls = phis.reduce((a, c) => a + c.calls, 0);
    const sum: CallCredit = {
      calls,
      meanDelta: calls ? cs.reduce((a, c) => a + c.meanDelta * c.calls, 0) / calls : 0,
      negative: cs.reduce((a, c) => a + c.negative, 0),
      positive: cs.reduce((a, c) => a + c.positive, 0),
      meanPhi: phiCalls ? phis.reduce((a, c) => a + (c.meanPhi as number) * c.calls, 0) / phiCalls : null,
    };
    console.log(`  ${name.padEnd(20)} ${fmt(sum)}`);
  });
}
