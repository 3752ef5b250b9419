// The entry of a search-pool.ts worker thread. A worker starts with no TypeScript loader (bin/sharp.js
// registers tsx on the main thread only), so it registers tsx itself and then loads the worker's code.
import { register } from 'tsx/esm/api';

register();
await import('./search-thread.ts');
