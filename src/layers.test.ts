import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative, resolve } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The layer rule of docs/architecture.md, checked on the code: every relative import of every
 * source file under src/ (tests excluded: they may wire any layers together) goes to its own
 * top-level folder or to a lower layer; src/cli imports only the recipes and config / errors; no
 * source file imports vitest. The layers are read from the table in docs/architecture.md itself,
 * so the document and the code cannot drift apart.
 */
const ROOT = resolve(import.meta.dirname, '..');
const CLI_MAY_IMPORT = ['recipes', 'config', 'errors'];

/** folder -> layer from the "| layer | folders | ... |" table of docs/architecture.md. */
export function layersFromDoc(markdown: string): Map<string, number> {
  const layers = new Map<string, number>();
  for (const line of markdown.split('\n')) {
    const m = /^\|\s*(\d+)\s*\|([^|]+)\|/.exec(line);
    if (!m) continue;
    for (const f of (m[2] as string).split(',')) layers.set(f.trim().replace(/`/g, ''), Number(m[1]));
  }
  return layers;
}

/** The top-level folder of a path under src/ ('src/train/loop.ts' -> 'train', 'src/errors.ts' -> 'errors'). */
function folderOf(path: string): string {
  const rest = path.split('/').slice(1);
  return rest.length === 1 ? (rest[0] as string).replace(/\.ts$/, '') : (rest[0] as string);
}

/** Module specifiers of a file (static imports, re-exports, dynamic import()), by TypeScript's own pre-parser. */
function importsOf(source: string): string[] {
  return ts.preProcessFile(source, true, true).importedFiles.map((f) => f.fileName);
}

/** Every broken arrow of a set of files (path relative to the repo -> source), one line each. */
export function violations(files: ReadonlyMap<string, string>, layers: ReadonlyMap<string, number>): string[] {
  const out: string[] = [];
  for (const [from, source] of files) {
    const a = folderOf(from);
    for (const spec of importsOf(source)) {
      if (spec === 'vitest' || spec.startsWith('vitest/')) {
        out.push(`${from}: a source file imports vitest (test support belongs in test/)`);
        continue;
      }
      if (!spec.startsWith('.')) continue;
      const to = normalize(join(dirname(from), spec)).replace(/\\/g, '/');
      if (!to.startsWith('src/')) {
        out.push(`${from} -> ${to}: a source file imports from outside src/`);
        continue;
      }
      const b = folderOf(to);
      if (a === b) continue;
      const la = layers.get(a);
      const lb = layers.get(b);
      if (la === undefined) out.push(`${from}: src/${a} has no layer in docs/architecture.md`);
      else if (lb === undefined) out.push(`${from} -> ${to}: src/${b} has no layer in docs/architecture.md`);
      else if (a === 'cli' && !CLI_MAY_IMPORT.includes(b))
        out.push(`${from} -> ${to}: the CLI imports only ${CLI_MAY_IMPORT.join(', ')}`);
      else if (lb >= la)
        out.push(
          `${from} -> ${to}: ${a} (layer ${la}) imports ${b} (layer ${lb}), ${lb === la ? 'a peer' : 'a higher layer'}`,
        );
    }
  }
  return out;
}

function sourceFiles(dir: string, out = new Map<string, string>()): Map<string, string> {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) sourceFiles(p, out);
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.test.ts'))
      out.set(relative(ROOT, p).replace(/\\/g, '/'), readFileSync(p, 'utf8'));
  }
  return out;
}

const layers = layersFromDoc(readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8'));

describe('layers (docs/architecture.md)', () => {
  it('the document names a layer for every top-level folder of src/', () => {
    const folders = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
      .filter((e) => e.isDirectory())
      .map((e) => e.name);
    expect(folders.filter((f) => !layers.has(f))).toEqual([]);
    expect(layers.get('cli')).toBeGreaterThan(layers.get('recipes') as number);
    expect(layers.get('generation')).toBeLessThan(layers.get('rollout') as number);
  });

  it(
    'no source file imports upward, sideways into a peer, or vitest; the CLI imports only recipes, config and ' +
      'errors',
    () => {
      expect(violations(sourceFiles(join(ROOT, 'src')), layers)).toEqual([]);
    },
  );

  it('the check fails on each kind of broken arrow', () => {
    const bad = new Map([
      ['src/generation/x.ts', "import type { Policy } from '../rollout/policy.ts';"], // up
      ['src/train/y.ts', "export { z } from '../eval/z.ts';"], // a peer
      // dynamic, up, into a nested folder
      ['src/model/z.ts', 'const m = await ' + "import('../recipes/stages/run-setup.ts');"],
      ['src/cli/commands/w.ts', "import { rollout } from '../../rollout/engine.ts';"], // CLI past the recipes
      ['src/credit/v.ts', "import { expect } from 'vitest';"],
      ['src/rollout/u.ts', "import { tiny } from '../../test/tiny-lm.ts';"],
      ['src/newthing/t.ts', "import { x } from '../model/x.ts';"],
      [
        'src/rollout/ok.ts',
        "import { generate } from '../generation/generate.ts';\nimport { a } " + 'from ' + "'./b.ts';",
      ], // fine: down, own folder
      [
        'src/recipes/stages/ok.ts',
        "import { a } from '../train.ts';\nimport { b " + '} ' + 'from ' + "'../../train/c.ts';",
      ], // fine: a nested folder is its top-level folder's layer
    ]);
    expect(violations(bad, layers)).toEqual([
      'src/generation/x.ts -> src/rollout/policy.ts: generation (layer 5) imports rollout (layer 6), a higher layer',
      'src/train/y.ts -> src/eval/z.ts: train (layer 8) imports eval (layer 8), a peer',
      'src/model/z.ts -> src/recipes/stages/run-setup.ts: model (layer 3) imports recipes (layer 10), a higher layer',
      'src/cli/commands/w.ts -> src/rollout/engine.ts: the CLI imports only recipes, config, errors',
      'src/credit/v.ts: a source file imports vitest (test support belongs in test/)',
      'src/rollout/u.ts -> test/tiny-lm.ts: a source file imports from outside src/',
      'src/newthing/t.ts: src/newthing has no layer in docs/architecture.md',
    ]);
  });

  it('reads the layer table as written', () => {
    const doc = '| layer | folders | what |\n| --- | --- | --- |\n| 2 | `config`, `data` | x |\n| 11 | `cli` | y |\n';
    expect([...layersFromDoc(doc)]).toEqual([
      ['config', 2],
      ['data', 2],
      ['cli', 11],
    ]);
  });
});
