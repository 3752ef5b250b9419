import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JsonlMetrics } from '../train/metrics/jsonl.ts';
import { viewIndex } from './view.ts';

/**
 * `sharp view` through the real binary: the URL it prints serves the run, Ctrl-C stops it, bad input is one line and
 * exit 2.
 */
const BIN = resolve(import.meta.dirname, '../../bin/sharp.js');
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sharp-view-cli-'));
  const m = new JsonlMetrics(join(dir, 'run', 'metrics.jsonl'));
  m.write(1, { 'reward/planner': 0.25, accuracy: 0.5 });
  m.write(2, { 'reward/planner': 0.5, accuracy: 1 });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function sharp(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((res) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: dir, env: { ...process.env, FORCE_COLOR: '0' } });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (code) => res({ code, stdout, stderr }));
  });
}

describe('the overview of a run', () => {
  it('shows the replay noise floor and the non-zero credit shares beside the curves', async () => {
    const run = join(dir, 'credit-run');
    const m = new JsonlMetrics(join(run, 'metrics.jsonl'));
    m.write(1, {
      accuracy: 0.25,
      'credit/noise_floor': 0.2,
      'credit/nonzero_success': 0.5,
      'credit/nonzero_failure': 0,
    });
    m.write(2, {
      accuracy: 0.5,
      'credit/noise_floor': 0.1,
      'credit/nonzero_success': 0.25,
      'credit/nonzero_failure': 0.1,
    });
    const index = await viewIndex(run);
    expect(index.charts.map((c) => c.name)).toContain('credit-signal');
    // means over the two steps: 15%, 37.5%, 5%
    expect(index.facts).toContainEqual([
      'counterfactual credit during RL (mean over steps)',
      'noise floor 15.0%; worker calls with non-zero credit: 37.5% in successes, 5.0% in failures',
    ]);
  });
});

describe('sharp view (CLI)', () => {
  it('prints a loopback URL that serves the run, and stops cleanly on SIGINT', async () => {
    const child = spawn(process.execPath, [BIN, 'view', join(dir, 'run'), '--port', '0'], { cwd: dir });
    let out = '';
    const url = await new Promise<string>((res, rej) => {
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
        const m = /^sharp view: (http:\/\/127\.0\.0\.1:\d+\/) {2}\(Ctrl-C to stop\)$/m.exec(out);
        if (m) res(m[1] as string);
      });
      child.on('close', (code) => rej(new Error(`exited ${String(code)} before printing a URL: ${out}`)));
    });
    const index = (await (await fetch(`${url}api/index.json`)).json()) as { title: string; charts: { name: string }[] };
    expect(index.title).toBe('run');
    expect(index.charts.map((c) => c.name)).toEqual(['reward', 'accuracy']);
    const code = await new Promise<number | null>((res) => {
      child.on('close', res);
      child.kill('SIGINT');
    });
    expect(code).toBe(0);
  }, 60_000);

  it('--export writes one self-contained HTML file (creating its folder)', async () => {
    const file = join(dir, 'share', 'run.html');
    const r = await sharp(['view', join(dir, 'run'), '--export', file]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^.*run\.html \(\d+ KiB; opens without a server\)\n$/);
    const html = readFileSync(file, 'utf8');
    expect(html).toContain('<script type="application/json" id="sharp-data">');
    expect(html).not.toMatch(/<script src=/);
    expect(existsSync(`${file}.tmp`)).toBe(false);
    // Its own earlier export is replaced without --force.
    expect((await sharp(['view', join(dir, 'run'), '--export', file])).code).toBe(0);
  }, 60_000);

  it('bad input: one line on stderr, exit 2', async () => {
    writeFileSync(join(dir, 'file.txt'), 'x');
    const evalDir = (): string => {
      mkdirSync(join(dir, 'eval'), { recursive: true });
      writeFileSync(join(dir, 'eval', 'eval-setup.json'), '{}');
      return join(dir, 'eval');
    };
    const cases: [string[], string][] = [
      [['view', join(dir, 'missing')], `sharp: sharp view: ${join(dir, 'missing')} is not a folder`],
      [
        ['view', dir],
        `sharp: sharp view: ${dir} is not a run folder (no metrics.jsonl, summary.json, trajectories/ or ` +
          `ablation.json)`,
      ],
      [
        ['view', evalDir()],
        `sharp: sharp view: ${join(dir, 'eval')} is an eval folder without recorded trajectories: run the eval ` +
          `with --credit to view its trajectories and credit`,
      ],
      [['view', join(dir, 'run'), '--port', '70000'], 'sharp: sharp view: --port 70000 is not a port number (0-65535)'],
      [
        ['view', join(dir, 'run'), '--port', '6000'],
        "sharp: sharp view: --port 6000 is a port that fetch clients refuse to connect to (the Fetch standard's " +
          '"bad ports"); choose another',
      ],
      [['view', join(dir, 'run'), '--port', 'x'], "sharp: --port expects an integer, got 'x'"],
      [
        ['view', join(dir, 'run'), '--export', dir],
        `sharp: sharp view --export: ${dir} is a folder (give a file name, e.g. run.html)`,
      ],
      [
        ['view', join(dir, 'run'), '--export', join(dir, 'file.txt')],
        `sharp: sharp view --export ${join(dir, 'file.txt')}: exists and was not written by sharp; it is not ` +
          `replaced (choose another path)`,
      ],
      [
        ['view', join(dir, 'run'), '--export', join(dir, 'file.txt', 'x.html')],
        `sharp: sharp view --export ${join(dir, 'file.txt', 'x.html')}: ${join(dir, 'file.txt')} is not a folder`,
      ],
    ];
    for (const [args, line] of cases) {
      const r = await sharp(args);
      expect(r.code, args.join(' ')).toBe(2);
      const lines = r.stderr.trim().split('\n');
      expect(lines, args.join(' ')).toHaveLength(1);
      expect(lines[0]?.startsWith(line), `${lines[0]} vs ${line}`).toBe(true);
    }
    const r = await sharp(['view', join(dir, 'file.txt')]);
    expect(r.stderr).toBe(`sharp: sharp view: ${join(dir, 'file.txt')} is not a folder\n`);
  }, 120_000);
});
