import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { runDifferences } from './same-run.ts';

const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

function run(metrics: object[], weights: string, state = '{}'): string {
  const dir = mkdtempSync(join(tmpdir(), 'same-run-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'metrics.jsonl'), metrics.map((m) => JSON.stringify(m) + '\n').join(''));
  const ck = join(dir, 'checkpoints', 'step-00000003');
  mkdirSync(ck, { recursive: true });
  writeFileSync(join(ck, 'model.safetensors'), weights);
  writeFileSync(join(ck, 'trainer_state.json'), state);
  return dir;
}

describe('same-run', () => {
  it('ignores wall-clock fields, key order and the trainer state; names every other difference', async () => {
    const a = run(
      [{ step: 1, time: 't0', 'losses/total': 0.5, 'perf/update_s': 1, 'grad/norm': 2 }],
      'w',
      '{"configHash":"a"}',
    );
    const b = run(
      [{ step: 1, time: 't1', 'grad/norm': 2, 'losses/total': 0.5, 'perf/update_s': 9 }],
      'w',
      '{"configHash":"b"}',
    );
    expect(await runDifferences(a, b)).toEqual([]);
    const c = run(
      [
        { step: 1, time: 't0', 'losses/total': 0.25, 'grad/norm': 2 },
        { step: 2, time: 't', 'grad/norm': 1 },
      ],
      'x',
    );
    expect(await runDifferences(a, c)).toEqual([
      'metrics.jsonl: 1 lines against 2',
      'metrics.jsonl step 1: losses/total 0.5 against 0.25',
      'checkpoint: model.safetensors differs',
    ]);
  });
});
