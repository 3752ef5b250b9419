import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeFileAtomic } from '../fs/atomic.ts';

/**
 * The tool workers' entries (calculate-worker.ts, code-worker.ts) bundled by esbuild into plain ESM
 * files, committed under src/tools/built/. A worker then starts by loading one JavaScript file: no
 * TypeScript loader, no transpiling and no resolving of mathjs' hundreds of modules in each new
 * worker (measured with `npm run bench` on 2 cores shared at a load average of ~15: a calculate
 * worker's first call went from 10.6-11.9 s to 1.3 s, its restart after a timeout from 9.6-11.7 s to
 * 1.0 s; the start is paid again after every expression that times out). `npm run build:tools` rebuilds them, and
 * a test checks the committed files are what the sources build to (esbuild is a dev dependency, so
 * an install without it still has working tools).
 */
export const WORKER_ENTRIES = ['calculate-worker', 'code-worker'] as const;
export type WorkerName = (typeof WORKER_ENTRIES)[number];

export const BUILT_DIR = join(import.meta.dirname, 'built');

/** Where a worker's built entry lives (what WorkerHost loads). */
export function builtWorkerUrl(name: WorkerName): URL {
  return pathToFileURL(join(BUILT_DIR, `${name}.js`));
}

/**
 * The bundle of each worker entry. quickjs-emscripten stays an import from node_modules: it finds its
 * .wasm file next to its own module. A `require` is defined for the CommonJS code mathjs' bundled
 * dependencies contain.
 */
export async function buildWorkers(): Promise<Record<WorkerName, string>> {
  const { build } = await import('esbuild');
  const out = {} as Record<WorkerName, string>;
  for (const name of WORKER_ENTRIES) {
    const r = await build({
      entryPoints: [join(import.meta.dirname, `${name}.ts`)],
      bundle: true,
      minify: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      external: ['quickjs-emscripten', '@jitl/*'],
      banner: {
        js:
          "import { createRequire as __sharpCreateRequire } from 'node:module'; const require = " +
          '__sharpCreateRequire(import.meta.url);',
      },
      write: false,
      legalComments: 'none',
      logLevel: 'silent',
    });
    const file = r.outputFiles[0];
    if (!file) throw new Error(`esbuild produced no output for ${name}`);
    out[name] = file.text;
  }
  return out;
}

/** A committed worker bundle, or a one-line hint when it is missing. */
export function builtWorker(name: WorkerName): string {
  try {
    return readFileSync(join(BUILT_DIR, `${name}.js`), 'utf8');
  } catch {
    throw new Error(`${join(BUILT_DIR, `${name}.js`)} is missing (run npm run build:tools)`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const built = await buildWorkers();
  for (const name of WORKER_ENTRIES) {
    const file = join(BUILT_DIR, `${name}.js`);
    writeFileAtomic(file, built[name]);
    process.stdout.write(`${file}: ${(built[name].length / 1024).toFixed(0)} KiB\n`);
  }
}
