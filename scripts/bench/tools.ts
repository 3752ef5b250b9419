/**
 * Tools section of `npm run bench`: latency of the two worker-hosted tools (src/tools/worker-host.ts).
 * - warm call: a trivial call to a started worker (median);
 * - cold start: the first call after the worker was closed, i.e. starting a worker thread and
 *   loading the tool's module (median);
 * - restart after a timeout: a call that runs past its deadline kills the worker and starts a fresh
 *   one at once; this is how long the next call then takes (median, and the worst of the repeats).
 * The restart is what a rollout batch waits for after a model's runaway expression or program.
 */
import { closeCalculateWorker, createCalculate } from '../../src/tools/calculate.ts';
import { closeCodeSandbox, createCode } from '../../src/tools/code.ts';
import type { Tool } from '../../src/tools/types.ts';
import type { BenchRow } from './types.ts';
import { median } from './median.ts';

async function timed(f: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await f();
  return performance.now() - t0;
}

async function expectOk(tool: Tool, args: string, want: string): Promise<void> {
  const r = await tool(args);
  if (!r.ok || r.output !== want)
    throw new Error(`bench tools: ${JSON.stringify(args)} gave ${JSON.stringify(r)}, expected ${want}`);
}

interface Subject {
  name: string;
  tool: Tool;
  /** A trivial call and its answer. */
  ping: [string, string];
  /** A call that runs past the tool's deadline and makes the host replace the worker. */
  runaway: string;
  close: () => Promise<void>;
}

async function measure(s: Subject, quick: boolean): Promise<BenchRow[]> {
  const section = 'tools';
  const repeats = quick ? 3 : 7;
  const [args, want] = s.ping;
  const cold: number[] = [];
  for (let i = 0; i < repeats; i++) {
    await s.close();
    cold.push(await timed(() => expectOk(s.tool, args, want)));
  }
  const warm: number[] = [];
  for (let i = 0; i < (quick ? 50 : 200); i++) warm.push(await timed(() => expectOk(s.tool, args, want)));
  const restart: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const r = await s.tool(s.runaway);
    if (r.ok || !/timeout/.test(r.output))
      throw new Error(`bench tools: runaway ${s.name} call gave ${JSON.stringify(r)}`);
    restart.push(await timed(() => expectOk(s.tool, args, want)));
  }
  await s.close();
  return [
    { section, metric: `${s.name}: warm call`, value: median(warm), unit: 'ms' },
    { section, metric: `${s.name}: cold start (first call)`, value: median(cold), unit: 'ms' },
    { section, metric: `${s.name}: restart after a timeout`, value: median(restart), unit: 'ms', target: '< 1000' },
    {
      section,
      metric: `${s.name}: restart after a timeout, worst of ${repeats}`,
      value: Math.max(...restart),
      unit: 'ms',
    },
  ];
}

export async function benchTools(quick: boolean): Promise<BenchRow[]> {
  const calculate: Subject = {
    name: 'calculate',
    tool: createCalculate({ timeoutMs: 300 }),
    ping: ['6 * 7', '42'],
    // 1e8 small steps inside the size limits: seconds of work, far past the 300 ms deadline.
    runaway: 'sum(map(1:10000, f(x) = sum(1:10000)))',
    close: closeCalculateWorker,
  };
  const code: Subject = {
    name: 'code',
    tool: createCode({ timeoutMs: 300, memoryBytes: 32 * 1024 * 1024, maxOutputChars: 2000 }),
    ping: ['40 + 2', '42'],
    // One slow native call per iteration: QuickJS polls its deadline too rarely, so the host kills the worker.
    runaway: 'for (;;) { const a = new Array(2e5).fill(1); }',
    close: closeCodeSandbox,
  };
  return [...(await measure(calculate, quick)), ...(await measure(code, quick))];
}
