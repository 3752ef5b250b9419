import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RECORD_VERSION } from '../../src/credit/record.ts';
import { serveView } from '../../src/recipes/view.ts';
import { JsonlMetrics } from '../../src/train/metrics/jsonl.ts';
import { HARNESS, NODE_ARGS, sharp } from '../cli-helpers.ts';

/**
 * Every file read from a user's path or a run folder is a regular file of bounded size, opened
 * without blocking: a named pipe (which blocks open(2) until a writer comes) or a device given as a
 * config or data file is one line, exit 2, at once; in the viewer it is a status, and the server
 * keeps answering every other request meanwhile.
 */
const root = mkdtempSync(join(tmpdir(), 'sharp-files-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function fifo(path: string): string {
  execFileSync('mkfifo', [path]);
  return path;
}

async function refusedFast(args: string[], line: RegExp): Promise<void> {
  const t0 = Date.now();
  const r = await sharp(root, args);
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
  expect(r.stderr.trim()).toMatch(line);
  expect(Date.now() - t0).toBeLessThan(60_000);
}

describe('special files as inputs', () => {
  it('a pipe or a device as --config is refused at once', async () => {
    const pipe = fifo(join(root, 'config.yaml'));
    await refusedFast(['config', '--config', pipe], /^sharp: config: cannot read .*config\.yaml: .*not a regular file/);
    await refusedFast(
      ['config', '--config', '/dev/zero'],
      /^sharp: config: cannot read \/dev\/zero: .*not a regular file/,
    );
  }, 120_000);

  it('a pipe as a data or transcripts file is refused at once', async () => {
    const pipe = fifo(join(root, 'episodes.jsonl'));
    await refusedFast(
      ['data', 'expert', '--in', pipe, '--out', join(root, 't.jsonl')],
      /^sharp: data expert: .*episodes\.jsonl: not a regular file/,
    );
    await refusedFast(['sft', '--set', `train.sft.data=${pipe}`, '--set', 'model.path=models/none'], /^sharp: sft: /);
  }, 120_000);
});

describe('the viewer', () => {
  it('answers a pipe in the run folder with a status and keeps serving', async () => {
    const run = join(root, 'run');
    mkdirSync(run);
    new JsonlMetrics(join(run, 'metrics.jsonl')).write(1, { 'reward/planner': 0.5 });
    fifo(join(run, 'pipe.txt'));
    writeFileSync(join(run, 'notes.txt'), 'hello');
    const server = await serveView(run, { host: '127.0.0.1', port: 0 });
    try {
      const get = (p: string) =>
        fetch(new URL(p, `http://127.0.0.1:${server.port}/`), { signal: AbortSignal.timeout(10_000) });
      const [pipe, notes, index] = await Promise.all([
        get('files/pipe.txt'),
        get('files/notes.txt'),
        get('api/index.json'),
      ]);
      expect(pipe.status).toBe(404);
      expect(await pipe.text()).toBe('not a file\n');
      expect(await notes.text()).toBe('hello');
      expect(index.status).toBe(200);
      // A pipe where the index reads a file (summary.json): an error status, not a hang.
      fifo(join(run, 'summary.json'));
      const bad = await get('api/index.json');
      expect(bad.status).toBe(500);
      expect(await bad.text()).toMatch(/summary\.json: not a regular file/);
      expect((await get('files/notes.txt')).status).toBe(200);
    } finally {
      await server.close();
    }
  }, 60_000);

  it('answers other requests while it reads a run folder for the index', async () => {
    const run = join(root, 'many');
    mkdirSync(join(run, 'trajectories'), { recursive: true });
    new JsonlMetrics(join(run, 'metrics.jsonl')).write(1, { 'reward/planner': 0.5 });
    // 80 step records of 2 MB: reading and parsing them all takes the index a while.
    const pad = 'x'.repeat(2 * 2 ** 20);
    for (let i = 1; i <= 80; i++)
      writeFileSync(
        join(run, 'trajectories', `step-${String(i).padStart(6, '0')}.json`),
        JSON.stringify({ version: RECORD_VERSION, kind: 'step', step: i, groups: [], groupsTotal: 0, pad }),
      );
    const server = await serveView(run, { host: '127.0.0.1', port: 0 });
    try {
      const done: string[] = [];
      const get = (p: string) =>
        fetch(new URL(p, `http://127.0.0.1:${server.port}/`), { signal: AbortSignal.timeout(60_000) }).then(
          async (r) => {
            await r.arrayBuffer();
            done.push(p);
            return r.status;
          },
        );
      const index = get('api/index.json');
      await new Promise((r) => setTimeout(r, 30));
      const app = get('app.js');
      expect(await Promise.all([index, app])).toEqual([200, 200]);
      // With the index built by blocking reads the page's script waited for all 80 records.
      expect(done).toEqual(['app.js', 'api/index.json']);
    } finally {
      await server.close();
    }
  }, 120_000);
});

/** As root every folder is readable: the permission case runs the CLI as `nobody` where that is possible. */
const NOBODY = 65534;
const canDropToNobody =
  process.getuid?.() === 0 && spawnSync(process.execPath, ['-e', ''], { uid: NOBODY, gid: NOBODY }).status === 0;

describe('a folder this user may not read', () => {
  it.skipIf(!canDropToNobody)(
    'is reported as unreadable, not as "not a run folder"',
    async () => {
      const base = mkdtempSync(join(tmpdir(), 'sharp-perm-'));
      chmodSync(base, 0o755);
      const run = join(base, 'run');
      mkdirSync(run);
      new JsonlMetrics(join(run, 'metrics.jsonl')).write(1, { 'reward/planner': 0.5 });
      chmodSync(run, 0o711); // others may enter, not list
      const r = await new Promise<{ code: number | null; stderr: string }>((res) => {
        const child = spawn(process.execPath, [...NODE_ARGS, HARNESS, 'view', run, '--export', join(base, 'x.html')], {
          cwd: base,
          uid: NOBODY,
          gid: NOBODY,
          env: { ...process.env, FORCE_COLOR: '0' },
        });
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.on('close', (code) => res({ code, stderr }));
      });
      rmSync(base, { recursive: true, force: true });
      expect(r.code).toBe(2);
      expect(r.stderr).toBe(`sharp: sharp view: cannot read ${run} (EACCES: permission denied or unreadable)\n`);
    },
    60_000,
  );
});
