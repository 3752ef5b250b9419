/**
 * Entry of the `calculate` tool's worker (hosted by calculate.ts, run from its build in
 * src/tools/built/): builds the locked mathjs instance once and evaluates one expression per
 * message, so a huge or endless evaluation costs this worker (killed at its deadline or by its heap
 * limit), never the host.
 */
import { calculate } from './calculate-core.ts';
import { hostPort } from './worker-port.ts';

export interface CalculateRequest {
  id: number;
  expression: string;
}

const port = hostPort('calculate-worker');
// Build the instance and its parser before saying ready: the first call's deadline must not
// include mathjs setup.
calculate('1');
port.onMessage((req: CalculateRequest) => {
  port.post({ started: req.id });
  let outcome;
  try {
    outcome = { ok: true, output: calculate(req.expression) };
  } catch (e) {
    const msg = e instanceof Error ? e.message : String(e);
    outcome = { ok: false, output: `calculate error: ${msg.split('\n')[0]}` };
  }
  port.post({ id: req.id, outcome });
});
port.post({ ready: true });
