import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JsonlMetrics } from '../../src/train/metrics/jsonl.ts';
import { HARNESS, NODE_ARGS } from '../cli-helpers.ts';

/**
 * `sharp view` (the real binary) on a run folder whose files misbehave: a file the server may not
 * read, a file deleted and rewritten while it is requested, a corrupt gzipped step record. The server
 * answers each with a status and keeps serving. Root reads every file, so as root the server runs as
 * `nobody` (spawn's uid option); where that is impossible the unreadable-file case is skipped.
 */
const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;
const canDropToNobody = isRoot && spawnSync(process.execPath, ['-e', ''], { uid: NOBODY, gid: NOBODY }).status === 0;
const unreadableTestable = !isRoot || canDropToNobody;
if (!unreadableTestable)
  console.warn(
    'view-server faults: running as root and cannot start a process as uid 65534: the unreadable-file case is skipped',
  );

let base: string;
let run: string;
let child: ChildProcess;
let url: string;
let stderr = '';

const validRecord = (step: number): string =>
  JSON.stringify({ version: 1, kind: 'train', step, groups: [], groupsTotal: 4 });

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'sharp-view-faults-'));
  chmodSync(base, 0o755);
  run = join(base, 'run');
  const m = new JsonlMetrics(join(run, 'metrics.jsonl'));
  m.write(1, { 'reward/planner': 0.25, accuracy: 0.5 });
  mkdirSync(join(run, 'trajectories'));
  writeFileSync(join(run, 'trajectories', 'step-000001.json.gz'), gzipSync(validRecord(1)).subarray(0, 20)); // torn
  writeFileSync(join(run, 'trajectories', 'step-000002.json.gz'), gzipSync(validRecord(2)));
  writeFileSync(join(run, 'trajectories', 'step-000003.json'), '{"version": 1, "kind": "tr'); // cut mid-write
  writeFileSync(join(run, 'secret.txt'), 'only the owner reads this');
  chmodSync(join(run, 'secret.txt'), 0o600);
  for (const d of [run, join(run, 'trajectories')]) chmodSync(d, 0o777);
  const ids = canDropToNobody ? { uid: NOBODY, gid: NOBODY } : {};
  child = spawn(process.execPath, [...NODE_ARGS, HARNESS, 'view', run, '--port', '0'], {
    cwd: base,
    env: { ...process.env, FORCE_COLOR: '0' },
    ...ids,
  });
  child.stderr?.on('data', (d: Buffer) => (stderr += d.toString()));
  let out = '';
  url = await new Promise<string>((res, rej) => {
    child.stdout?.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /^sharp view: (http:\/\/127\.0\.0\.1:\d+\/) {2}\(Ctrl-C to stop\)$/m.exec(out);
      if (m) res(m[1] as string);
    });
    child.on('close', (code) =>
      rej(new Error(`sharp view exited ${String(code)} before printing a URL: ${out} ${stderr}`)),
    );
  });
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null) {
    await new Promise((res) => {
      child.once('close', res);
      child.kill('SIGTERM');
    });
  }
  rmSync(base, { recursive: true, force: true });
});

const alive = async (): Promise<void> => {
  const r = await fetch(`${url}files/metrics.jsonl`);
  expect(r.status).toBe(200);
  expect(await r.text()).toMatch(/^\{"step":1,/);
  expect(child.exitCode).toBeNull();
};

describe('sharp view under file faults', () => {
  it.skipIf(!unreadableTestable)('an unreadable file is a 403 and the server stays up', async () => {
    if (!isRoot) chmodSync(join(run, 'secret.txt'), 0o000);
    for (let i = 0; i < 3; i++) {
      const r = await fetch(`${url}files/secret.txt`);
      expect(r.status).toBe(403);
      expect(await r.text()).toBe('forbidden: the server may not read this file\n');
    }
    await alive();
    expect(stderr).toBe('');
  });

  it('a file deleted and rewritten while requested is a 200 or a 404, whole, and the server stays up', async () => {
    const file = join(run, 'flap.jsonl');
    const versions = ['x'.repeat(300_000), 'y'.repeat(50_000)];
    let stop = false;
    let flips = 0;
    const flapper = (async () => {
      while (!stop) {
        writeFileSync(`${file}.tmp`, versions[flips % 2] as string);
        renameSync(`${file}.tmp`, file);
        await new Promise((r) => setTimeout(r, 1));
        unlinkSync(file);
        flips++;
        await new Promise((r) => setTimeout(r, 1));
      }
    })();
    const statuses = new Map<number, number>();
    // Several requests in flight at once, so opens race the flapper inside the server.
    for (let round = 0; round < 60; round++) {
      const rs = await Promise.all(
        Array.from({ length: 5 }, async () => {
          const r = await fetch(`${url}files/flap.jsonl`);
          return { status: r.status, body: await r.text() };
        }),
      );
      for (const r of rs) {
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        expect([200, 404]).toContain(r.status);
        if (r.status === 200) expect(versions).toContain(r.body);
      }
    }
    stop = true;
    await flapper;
    expect(flips).toBeGreaterThan(20);
    expect([...statuses.values()].reduce((a, b) => a + b, 0)).toBe(300);
    await alive();
  });

  it('corrupt step records are skipped in /api/index.json, which names them', async () => {
    const r = await fetch(`${url}api/index.json`);
    expect(r.status).toBe(200);
    const index = (await r.json()) as {
      steps: { name: string; step: number }[];
      skipped: string[];
      facts: [string, string][];
    };
    expect(index.steps.map((s) => s.name)).toEqual(['step-000002']);
    expect(index.skipped).toHaveLength(2);
    expect(index.skipped[0]).toMatch(/^trajectories\/step-000001\.json\.gz: .+/);
    expect(index.skipped[1]).toMatch(/^trajectories\/step-000003\.json: .+/);
    expect(index.facts.find(([k]) => k === 'unreadable step records (skipped)')?.[1]).toBe(index.skipped.join('; '));
    // The corrupt record itself is an error answer, the good one is served.
    expect((await fetch(`${url}api/steps/step-000001`)).status).toBe(500);
    expect(((await (await fetch(`${url}api/steps/step-000002`)).json()) as { step: number }).step).toBe(2);
    await alive();
  });
});
