import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { writeFileAtomic } from '../fs/atomic.ts';

/**
 * The page bundle: src/view/page/main.ts with vega-embed, bundled by esbuild into one script. It is
 * committed as src/view/built/app.js, so `sharp view` works offline right after `npm ci` without a
 * build step (esbuild is a dev dependency); `npm run build:view` rebuilds it, and a test checks the
 * committed file is what the sources build to.
 */
export const PAGE_ENTRY = join(import.meta.dirname, 'page', 'main.ts');
export const BUILT_SCRIPT = join(import.meta.dirname, 'built', 'app.js');

export async function buildPage(): Promise<string> {
  // Imported here only: the served page never needs esbuild at run time.
  const { build } = await import('esbuild');
  const r = await build({
    entryPoints: [PAGE_ENTRY],
    bundle: true,
    minify: true,
    format: 'iife',
    platform: 'browser',
    target: 'es2022',
    write: false,
    legalComments: 'none',
    logLevel: 'silent',
  });
  const out = r.outputFiles[0];
  if (!out) throw new Error('esbuild produced no output for the view page');
  return out.text;
}

/** The committed page script (what `sharp view` serves and inlines). */
export function builtScript(): string {
  try {
    return readFileSync(BUILT_SCRIPT, 'utf8');
  } catch {
    throw new Error(`sharp view: ${BUILT_SCRIPT} is missing (run npm run build:view)`);
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const js = await buildPage();
  writeFileAtomic(BUILT_SCRIPT, js);
  process.stdout.write(`${BUILT_SCRIPT}: ${(js.length / 1024).toFixed(0)} KiB\n`);
}
