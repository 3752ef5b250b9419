import { describe, it, expect } from 'vitest';
import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configSchema } from '../../config/schema.ts';
import type { AgentCredit } from '../../credit/reward.ts';
import { CreditLog, creditMarkdown, type EpisodeCredit } from './credit.ts';

const credit = (id: string, deltas: number[], totals: [number, number]): EpisodeCredit => {
  const agent = (i: number, role: 'planner' | 'worker', total: number): AgentCredit => ({
    trajectoryId: id,
    agent: i,
    role,
    delegation: role === 'planner' ? null : i - 1,
    parts: { broadcast: 1, marginal: total - 1, tool: 0 },
    total,
  });
  return {
    summary: { trajectoryId: id, deltas },
    credits: [agent(0, 'planner', totals[0]), agent(1, 'worker', totals[1])],
    pairs: [],
  };
};

describe('CreditLog', () => {
  it('reports over the keys asked for, survives a torn tail and keeps appending on a fresh line', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sharp-credit-log-')), 'credit.log.jsonl');
    const a = CreditLog.open(file);
    a.append('e1', credit('e1', [1, 0], [1.5, 2]));
    a.append('e2', credit('e2', [-1], [0.5, 1]));
    appendFileSync(file, '{"key":"e3","summ');
    const b = CreditLog.open(file);
    expect(b.has('e1') && b.has('e2') && !b.has('e3')).toBe(true);
    b.append('e3', credit('e3', [0], [1, 1]));
    expect(readFileSync(file, 'utf8').split('\n').filter(Boolean)).toHaveLength(3);
    // Over e1..e3: deltas 1, 0, -1, 0 -> helpful 1/4, neutral 2/4, harmful 1/4;
    // planner totals 1.5, 0.5, 1 -> mean 1; worker 2, 1, 1 -> 4/3. "e9" has no line: not counted.
    const { report, episodes } = CreditLog.open(file).report(['e1', 'e2', 'e3', 'e9']);
    expect(episodes).toBe(3);
    expect(report).toMatchObject({ workerCalls: 4, helpful: 0.25, neutral: 0.5, harmful: 0.25 });
    expect(report.meanCredit.planner).toBeCloseTo(1, 12);
    expect(report.meanCredit.worker).toBeCloseTo(4 / 3, 12);
    const md = creditMarkdown(report, episodes, configSchema.parse({}).credit);
    expect(md).toContain('| harmful (Delta < 0) | 0.250 |');
    expect(md).toContain('| worker | 1.333 | 0.333 |');
  });

  it('a bad line in the middle is a one-line error naming file, line and field', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sharp-credit-log-')), 'credit.log.jsonl');
    appendFileSync(file, '{"key":"e1","summary":{"trajectoryId":"e1","deltas":["x"]},"credits":[]}\n{"key":"e2"}\n');
    expect(() => CreditLog.open(file)).toThrow(
      `${file}:1: summary.deltas.0: Invalid input: expected number, received string`,
    );
  });

  it("keeps each episode's failure pairs across a reopen, in key order", () => {
    const file = join(mkdtempSync(join(tmpdir(), 'sharp-credit-log-')), 'credit.log.jsonl');
    const pair = (id: string, chosen: string) => ({
      prefix: [{ role: 'user' as const, content: 'Who founded Zorvex Labs?' }],
      chosen: `<answer>${chosen}</answer>`,
      rejected: '<answer>Bo Tan</answer>',
      metadata: {
        trajectoryId: id,
        episodeId: id,
        messageIndex: 5,
        agent: 1,
        role: 'worker' as const,
        judge: 'rule',
        attempts: 2,
      },
    });
    const a = CreditLog.open(file);
    a.append('e2', { ...credit('e2', [0], [0, 0]), pairs: [pair('e2', 'Alin Marek')] });
    a.append('e1', { ...credit('e1', [0], [0, 0]), pairs: [pair('e1', 'Kelmar'), pair('e1', 'Vask')] });
    const b = CreditLog.open(file);
    expect(b.pairs(['e1', 'e2', 'e9']).map((p) => p.chosen)).toEqual([
      '<answer>Kelmar</answer>',
      '<answer>Vask</answer>',
      '<answer>Alin Marek</answer>',
    ]);
    appendFileSync(
      file,
      JSON.stringify({ key: 'e3', ...credit('e3', [0], [0, 0]), pairs: [{ prefix: [], chosen: 1 }] }) +
        '\n{"key":"e4"}\n',
    );
    expect(() => CreditLog.open(file)).toThrow(`${file}:3: pairs[0]: field 'chosen' must be a string`);
  });
});
