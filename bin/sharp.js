#!/usr/bin/env node
// Entry point of the `sharp` CLI. The TypeScript sources run through tsx's ESM loader, so a fresh
// clone works right after `npm ci` with no build step and no stale output.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
await main(process.argv);
