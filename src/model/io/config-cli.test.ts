import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

/** A config.json the decoder cannot compute exactly stops `sharp generate` with one line and exit 2. */
const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const dir = mkdtempSync(join(tmpdir(), 'sharp-badcfg-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let cases = 0;

function generateWith(
  patch: Record<string, unknown>,
  drop: string[] = [],
): { status: number | null; stderr: string; stdout: string } {
  const d = join(dir, `m${cases++}`);
  cpSync(join(repoRoot, 'models/tiny-random'), d, { recursive: true });
  const cfg = JSON.parse(readFileSync(join(d, 'config.json'), 'utf8')) as Record<string, unknown>;
  for (const k of drop) delete cfg[k];
  writeFileSync(join(d, 'config.json'), JSON.stringify({ ...cfg, ...patch }));
  const r = spawnSync(
    process.execPath,
    [join(repoRoot, 'bin/sharp.js'), 'generate', '--model', d, '--prompt', 'hi', '--max-new-tokens', '2'],
    { encoding: 'utf8', timeout: 60_000 },
  );
  return { status: r.status, stderr: r.stderr, stdout: r.stdout };
}

describe('sharp generate --model DIR with a bad config.json', () => {
  it('prints one line naming the key and exits 2 (no stack)', () => {
    const cases: [Record<string, unknown>, string[], RegExp][] = [
      [
        { rope_parameters: { rope_type: 'dynamic', rope_theta: 1e4, factor: 2 } },
        ['rope_theta', 'rope_scaling'],
        /config\.json: field 'rope_parameters': rope_type 'dynamic' \(dynamic NTK\) is not supported/,
      ],
      [
        { use_sliding_window: true, sliding_window: 4096 },
        [],
        /config\.json: field 'use_sliding_window': true: sliding-window attention is not supported/,
      ],
      [{ attn_logit_softcapping: 50 }, [], /config\.json: field 'attn_logit_softcapping': unknown config\.json key/],
    ];
    for (const [patch, drop, want] of cases) {
      const r = generateWith(patch, drop);
      expect(r.status).toBe(2);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(want);
      expect(r.stderr).not.toMatch(/\bat .*\.ts:\d+/);
    }
  }, 120_000);
});
