// The package's library entry ("exports" in package.json; the API is src/index.ts, its types
// dist/types/index.d.ts, docs/extending.md). The sources are TypeScript and run through tsx, as
// bin/sharp.js runs the CLI, rather than as JavaScript compiled at install: a fresh clone works right
// after an offline `npm ci` and a packed tarball works as installed, with no build step whose output
// could be missing or stale, and the library runs exactly the code the CLI runs. tsImport loads
// src/index.ts and what it imports under a namespace of its own, so the importing program's other
// modules are left to Node's own loader.
import { tsImport } from 'tsx/esm/api';

const api = await tsImport('./src/index.ts', import.meta.url);

export const { loadConfig, train, evaluate, audit, defineReward, defineTool, UserError } = api;
