/**
 * Entry of the `code` tool's worker thread (hosted by code.ts, run from its build in
 * src/tools/built/). It loads the QuickJS WASM module once and runs one program per message.
 * Running here, not on the main thread, lets the host kill a program that QuickJS's own interrupt
 * handler cannot stop in time (see code.ts).
 */
import { getQuickJS } from 'quickjs-emscripten';
import { runInQuickJS, type CodeOptions } from './sandbox.ts';
import { hostPort } from './worker-port.ts';

export interface CodeRequest {
  id: number;
  code: string;
  opts: CodeOptions;
}

const port = hostPort('code-worker');
const qjs = await getQuickJS();
port.onMessage((req: CodeRequest) => {
  // The host's hard deadline counts from here.
  port.post({ started: req.id });
  const { recycle, ...outcome } = runInQuickJS(qjs, req.code, req.opts);
  port.post({ id: req.id, outcome, recycle });
});
port.post({ ready: true });
