import { parentPort } from 'node:worker_threads';
import { getQuickJS } from 'quickjs-emscripten';
import { runInQuickJS, type CodeOptions } from './sandbox.ts';

/**
 * Worker-thread entry of the `code` tool (started by code.ts). It loads the QuickJS WASM module once
 * and runs one program per message. Running here, not on the main thread, lets the host kill a
 * program that QuickJS's own interrupt handler cannot stop in time (see code.ts).
 */

export interface CodeRequest {
  id: number;
  code: string;
  opts: CodeOptions;
}

const port = parentPort;
if (!port) throw new Error('code-worker: must run in a worker thread');
const qjs = await getQuickJS();
port.on('message', (req: CodeRequest) => {
  const { recycle, ...outcome } = runInQuickJS(qjs, req.code, req.opts);
  port.postMessage({ id: req.id, outcome, recycle });
});
port.postMessage({ ready: true });
