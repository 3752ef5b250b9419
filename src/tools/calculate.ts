import { create, all, type MathJsInstance } from 'mathjs';
import type { Tool, ToolOutcome } from './types.ts';
import type { CalculateRequest } from './calculate-worker.ts';
import { WorkerHost } from './worker-host.ts';

/**
 * `calculate` tool: mathjs in a locked scope. Following the
 * mathjs "Security" page (https://mathjs.org/docs/expressions/security.html) we keep a reference to
 * `evaluate`, then override, inside expressions, every function that reaches the parser, the
 * compiler, the unit system or the import machinery so that it throws. Random functions are disabled
 * too: they draw from the unseeded global generator, and a tool result must be a function of its text (replays).
 * Functions that build arrays are size-guarded so `zeros(1e9)` cannot exhaust memory.
 */

/** Longest expression accepted. */
const MAX_EXPRESSION_CHARS = 500;
/** Most elements an array-building call may create. */
const MAX_ELEMENTS = 10_000;
/** Significant digits kept for non-integer results. */
const PRECISION = 10;

const DISABLED = [
  'import',
  'createUnit',
  'evaluate',
  'parse',
  'simplify',
  'simplifyConstant',
  'simplifyCore',
  'derivative',
  'compile',
  'resolve',
  'reviver',
  'replacer',
  'parser',
  'rationalize',
  'leafCount',
  'symbolicEqual',
  'help',
  'chain',
  'config',
  'random',
  'randomInt',
  'pickRandom',
] as const;

function sizeOf(args: unknown[]): number {
  // zeros(n, m), zeros([n, m]), ones(...), identity(...): the element count is the product of sizes.
  const dims: number[] = [];
  for (const a of args) {
    if (typeof a === 'number') dims.push(a);
    else if (Array.isArray(a)) for (const d of a) if (typeof d === 'number') dims.push(d);
  }
  return dims.reduce((p, d) => p * Math.max(0, d), 1);
}

function lockedMath(): { math: MathJsInstance; evaluate: MathJsInstance['evaluate'] } {
  const math = create(all);
  const evaluate = math.evaluate;
  const zeros = math.zeros;
  const ones = math.ones;
  const identity = math.identity;
  const range = math.range;
  const overrides: Record<string, (...args: unknown[]) => unknown> = {};
  for (const name of DISABLED) {
    overrides[name] = () => {
      throw new Error(`function ${name} is disabled`);
    };
  }
  const guarded = (name: string, fn: (...args: never[]) => unknown) => (...args: unknown[]) => {
    if (sizeOf(args) > MAX_ELEMENTS) throw new Error(`${name}: more than ${MAX_ELEMENTS} elements`);
    return (fn as (...a: unknown[]) => unknown)(...args);
  };
  overrides.zeros = guarded('zeros', zeros);
  overrides.ones = guarded('ones', ones);
  overrides.identity = guarded('identity', identity);
  // range(start, end[, step]) or range('a:b:c'); count the elements before building them.
  const checkRange = (args: unknown[]) => {
    const nums = args.filter((a): a is number => typeof a === 'number');
    if (nums.length >= 2) {
      const step = nums[2] ?? 1;
      const count = step === 0 ? Infinity : Math.abs((nums[1] - nums[0]) / step);
      if (count > MAX_ELEMENTS) throw new Error(`range: more than ${MAX_ELEMENTS} elements`);
    } else if (typeof args[0] === 'string') {
      throw new Error('range: string form is disabled');
    }
  };
  // Expressions (`1:100`) call range's transform (end included), so both are guarded; importing a
  // function without a `transform` would silently drop the expression semantics.
  const rangeTransform = (math.expression.transform as unknown as Record<string, (...a: unknown[]) => unknown>).range;
  overrides.range = Object.assign(
    (...args: unknown[]) => {
      checkRange(args);
      return (range as (...a: unknown[]) => unknown)(...args);
    },
    {
      transform: (...args: unknown[]) => {
        checkRange(args);
        return rangeTransform(...args);
      },
    },
  );
  math.import(overrides, { override: true });
  return { math, evaluate };
}

let shared: { math: MathJsInstance; evaluate: MathJsInstance['evaluate'] } | undefined;

/**
 * A number as an agent should read it: integers exactly (no exponent below 1e15), others with at
 * most 10 significant digits and no exponent for magnitudes in [1e-9, 1e15).
 */
export function formatNumber(x: number): string {
  if (Number.isNaN(x)) return 'NaN';
  if (!Number.isFinite(x)) return x > 0 ? 'Infinity' : '-Infinity';
  if (Number.isInteger(x) && Math.abs(x) < 1e15) return String(x);
  const s = Number(x.toPrecision(PRECISION));
  if (Number.isInteger(s) && Math.abs(s) < 1e15) return String(s);
  const abs = Math.abs(s);
  if (abs >= 1e-9 && abs < 1e15) {
    // toFixed with enough decimals for 10 significant digits, then drop trailing zeros.
    const decimals = Math.min(100, Math.max(0, PRECISION - 1 - Math.floor(Math.log10(abs))));
    return s.toFixed(decimals).replace(/\.?0+$/, '');
  }
  // Huge or tiny: mantissa with its trailing zeros dropped, e.g. 1.152921505e+18, 2e-12.
  return x.toPrecision(PRECISION).replace(/\.?0+e/, 'e');
}

function formatResult(math: MathJsInstance, value: unknown): string {
  if (typeof value === 'number') return formatNumber(value);
  if (typeof value === 'function') throw new Error('result is a function, not a value');
  if (value === undefined || value === null) throw new Error('expression has no value');
  return math.format(value, { precision: PRECISION, lowerExp: -9, upperExp: 15 });
}

/**
 * Evaluates one expression in a fresh scope on the calling thread; returns the formatted value or
 * throws. No time or memory limit here: untrusted text goes through `createCalculate`.
 */
export function calculate(expression: string): string {
  shared ??= lockedMath();
  const { math, evaluate } = shared;
  const value: unknown = evaluate(expression, new Map());
  // `a = 2; a * 3` yields a ResultSet: the last entry is the answer.
  const last = math.isResultSet(value) ? (value as { entries: unknown[] }).entries.at(-1) : value;
  return formatResult(math, last);
}

/**
 * Hard wall-clock limit of one evaluation in the worker. Ordinary expressions take well under a
 * millisecond; the size guards above cannot foresee every builder (`kron`, `setPowerset`, `map`
 * returning matrices), so the deadline and the heap limit are what bound them.
 */
export const CALCULATE_TIMEOUT_MS = 2000;
/** V8 heap of the calculate worker: mathjs itself needs ~40 MB; anything bigger is a runaway expression. */
const WORKER_HEAP_MB = 256;

let host: WorkerHost<Omit<CalculateRequest, 'id'>> | undefined;

function sharedHost(): WorkerHost<Omit<CalculateRequest, 'id'>> {
  host ??= new WorkerHost({
    entry: new URL('./calculate-worker.ts', import.meta.url),
    errorPrefix: 'calculate error',
    resourceLimits: { maxOldGenerationSizeMb: WORKER_HEAP_MB, maxYoungGenerationSizeMb: 32, stackSizeMb: 8 },
  });
  return host;
}

/**
 * The `calculate` tool: the expression's value, or a one-line error for the agent. Evaluation runs
 * in one shared worker thread (calculate-worker.ts) with a deadline and a heap limit, so no
 * expression can hang or abort the process; the worker stays warm between calls.
 */
export function createCalculate(opts: { timeoutMs?: number } = {}): Tool {
  const timeoutMs = opts.timeoutMs ?? CALCULATE_TIMEOUT_MS;
  return async (args: string): Promise<ToolOutcome> => {
    const expression = args.trim();
    if (expression.length === 0) return { ok: false, output: 'calculate error: empty expression' };
    if (expression.length > MAX_EXPRESSION_CHARS) {
      return { ok: false, output: `calculate error: expression longer than ${MAX_EXPRESSION_CHARS} characters` };
    }
    return sharedHost().run({ expression }, timeoutMs, `calculate error: timeout: evaluation ran longer than ${timeoutMs} ms`);
  };
}

/** Workers started by this process so far (for tests of the kill-and-restart path). */
export function calculateWorkersStarted(): number {
  return host?.started ?? 0;
}

/** Terminates the calculate worker, if any (call at shutdown or in a test's afterAll). */
export async function closeCalculateWorker(): Promise<void> {
  await host?.close();
}
