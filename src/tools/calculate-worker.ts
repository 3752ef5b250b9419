import { parentPort } from 'node:worker_threads';
import { calculate } from './calculate.ts';

/**
 * Worker-thread entry of the `calculate` tool (started by calculate.ts): builds the locked mathjs
 * instance once and evaluates one expression per message, so a huge or endless evaluation costs
 * this worker (killed at its deadline or by its heap limit), never the host.
 */

export interface CalculateRequest {
  id: number;
  expression: string;
}

const port = parentPort;
if (!port) throw new Error('calculate-worker: must run in a worker thread');
// Build the instance before saying ready: the first call's deadline must not include mathjs setup.
calculate('1');
port.on('message', (req: CalculateRequest) => {
  let outcome;
  try {
    outcome = { ok: true, output: calculate(req.expression) };
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    outcome = { ok: false, output: `calculate error: ${msg.split('\n')[0]}` };
  }
  port.postMessage({ id: req.id, outcome });
});
port.postMessage({ ready: true });
