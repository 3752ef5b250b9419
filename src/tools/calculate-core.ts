/**
 * The `calculate` tool's evaluator: mathjs in a locked scope, run inside the tool's worker
 * (calculate-worker.ts; calculate.ts hosts it). Following the mathjs "Security" page
 * (https://mathjs.org/docs/expressions/security.html) we keep a reference to `evaluate`, then
 * override, inside expressions, every function that reaches the parser, the compiler, the unit
 * system or the import machinery so that it throws. Random functions are disabled too: they draw
 * from the unseeded global generator, and a tool result must be a function of its text (replays).
 *
 * Every function that can build a collection larger than its inputs is checked by the element count
 * of its result BEFORE it runs (`MAX_ELEMENTS`). A heap limit alone does not bound these: V8 aborts
 * the whole process, not just the worker, when one allocation cannot be satisfied (measured:
 * `resize([1], [5e7])` in a worker thread with a 256 MB heap limit ended the host with "heap out of
 * memory" at 132 MB, as mathjs grows a sparse array element by element).
 */
import { create, all, type MathJsInstance } from 'mathjs';

/** Most elements a collection (or characters a string) built by an expression may have. */
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

type Fn = (...args: unknown[]) => unknown;

/** A scalar as a plain number: numbers, BigNumbers, Fractions, bigints, booleans; a Unit by its SI value. */
function num(x: unknown): number {
  if (typeof x === 'number') return x;
  if (typeof x === 'bigint' || typeof x === 'boolean') return Number(x);
  if (typeof x === 'object' && x !== null) {
    const o = x as { isUnit?: boolean; value?: unknown; valueOf: () => unknown };
    if (o.isUnit === true) return typeof o.value === 'number' ? o.value : NaN;
    const v = o.valueOf();
    if (typeof v === 'number' || typeof v === 'string' || typeof v === 'bigint') return Number(v);
  }
  return NaN;
}

function isMatrix(x: unknown): x is { size: () => number[]; valueOf: () => unknown } {
  return typeof x === 'object' && x !== null && (x as { isMatrix?: boolean }).isMatrix === true;
}

function isCollection(x: unknown): boolean {
  return Array.isArray(x) || isMatrix(x);
}

/** Shape of a collection (nested arrays by their first elements, as mathjs' `size` reads them); [] for a scalar. */
function shapeOf(x: unknown): number[] {
  if (isMatrix(x)) return x.size();
  const dims: number[] = [];
  let a: unknown = x;
  while (Array.isArray(a)) {
    dims.push(a.length);
    a = a[0];
  }
  return dims;
}

const product = (dims: readonly number[]): number => dims.reduce((p, d) => p * Math.max(0, d), 1);

/** Elements of a value: a collection's by its shape, a string's characters, 1 for a scalar. */
function count(x: unknown): number {
  if (typeof x === 'string') return x.length;
  return isCollection(x) ? product(shapeOf(x)) : 1;
}

/** The numbers of a size argument: a number, or a collection of numbers (`[2, 3]`, `matrix([2, 3])`). */
function sizeValues(x: unknown): number[] {
  if (isCollection(x)) {
    const flat = ((isMatrix(x) ? x.valueOf() : x) as unknown[]).flat(Infinity);
    return flat.map(num);
  }
  return [num(x)];
}

/** Sizes given as separate arguments or one collection, skipping a format string ('dense', 'sparse'). */
function sizeArgs(args: readonly unknown[]): number[] {
  return args.filter((a) => typeof a !== 'string').flatMap(sizeValues);
}

/** Elements of the result of broadcasting the collections among `args` (mathjs' element-wise rule). */
function broadcastCount(args: readonly unknown[]): number {
  const shapes = args.filter(isCollection).map(shapeOf);
  if (shapes.length === 0) return Math.max(1, ...args.map(count));
  const n = Math.max(...shapes.map((s) => s.length));
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(Math.max(...shapes.map((s) => s[s.length - n + i] ?? 1)));
  return product(out);
}

/** Elements of `multiply(a, b, ...)`, left to right: rows of the left times columns of the right. */
function multiplyCount(args: readonly unknown[]): number {
  let left: number[] | null = null;
  let most = 1;
  for (const a of args) {
    if (!isCollection(a)) continue;
    const s = shapeOf(a);
    if (left === null) left = s;
    else {
      const rows: number = left.length >= 2 ? (left[0] ?? 1) : 1;
      const cols: number = s.length >= 2 ? (s[s.length - 1] ?? 1) : 1;
      left = left.length < 2 && s.length < 2 ? [] : left.length < 2 ? [cols] : s.length < 2 ? [rows] : [rows, cols];
    }
    most = Math.max(most, product(left));
  }
  return most;
}

/** Elements of `range(start, end[, step][, includeEnd])`; the string form is refused. */
function rangeCount(args: readonly unknown[]): number {
  if (typeof args[0] === 'string') throw new Error('range: string form is disabled');
  const nums = args.filter((a) => typeof a !== 'boolean').map(num);
  if (nums.length < 2) return 1;
  const [start = 0, end = 0, step = 1] = nums;
  const n = Math.abs((end - start) / step);
  return Number.isNaN(n) ? Infinity : n + 1;
}

/** Elements of `diag(x, k)`: a vector of n becomes an (n + |k|)-square matrix at most. */
function diagCount(args: readonly unknown[]): number {
  const [x, k] = args;
  const offset = typeof k === 'string' || k === undefined ? 0 : Math.abs(num(k));
  const s = shapeOf(x);
  return s.length <= 1 ? (count(x) + offset) ** 2 : count(x);
}

const sum = (args: readonly unknown[]): number =>
  args.reduce<number>((t, a) => t + (typeof a === 'number' ? 0 : count(a)), 0);

/** Result elements of each allocating function, computed from its arguments before it runs. */
const RESULT_ELEMENTS: Record<string, (args: unknown[]) => number> = {
  zeros: (a) => product(sizeArgs(a)),
  ones: (a) => product(sizeArgs(a)),
  identity: (a) => {
    const s = sizeArgs(a);
    return s.length === 1 ? (s[0] ?? 0) ** 2 : product(s);
  },
  resize: (a) => Math.max(count(a[0]), product(sizeValues(a[1]))),
  reshape: (a) => product(sizeValues(a[1]).map((d) => (d === -1 ? count(a[0]) : Math.abs(d)))),
  matrixFromFunction: (a) => product(sizeValues(a[0])),
  range: rangeCount,
  diag: diagCount,
  kron: (a) => a.reduce<number>((p, x) => p * count(x), 1),
  concat: sum,
  matrixFromRows: sum,
  matrixFromColumns: sum,
  // Pairs of one element of each set: two numbers per pair.
  setCartesian: (a) => 2 * a.reduce<number>((p, x) => p * count(x), 1),
  // 2^n subsets holding n * 2^(n - 1) elements together.
  setPowerset: (a) => 2 ** count(a[0]) * Math.max(1, count(a[0])),
  setUnion: sum,
  setSymDifference: sum,
  multiply: multiplyCount,
  // Element-wise functions broadcast their collections: [n, 1] with [1, n] gives n * n.
  ...Object.fromEntries(
    [
      'add',
      'subtract',
      'dotMultiply',
      'dotDivide',
      'dotPow',
      'mod',
      'atan2',
      'bitXor',
      'compare',
      'compareNatural',
      'compareText',
      'equal',
      'equalText',
      'unequal',
      'larger',
      'largerEq',
      'smaller',
      'smallerEq',
      'gcd',
      'lcm',
      'leftShift',
      'rightArithShift',
      'rightLogShift',
      'xor',
      'nthRoot',
      'log',
      'round',
      'fix',
      'ceil',
      'floor',
      'deepEqual',
    ].map((name) => [name, broadcastCount]),
  ),
};

/** Functions whose plain-number arguments are sizes (checked even when every argument is a number). */
const SIZE_TAKING = new Set(['zeros', 'ones', 'identity', 'range']);

/** The check run before `name`: throws when its result would have more than MAX_ELEMENTS elements. */
function checker(name: string, elements: (args: unknown[]) => number): (args: unknown[]) => void {
  const sizeTaking = SIZE_TAKING.has(name);
  return (args) => {
    // Numbers alone allocate nothing here (keeps arithmetic at full speed).
    if (!sizeTaking && args.every((a) => typeof a === 'number')) return;
    const n = elements(args);
    if (!(n <= MAX_ELEMENTS)) throw new Error(`${name}: more than ${MAX_ELEMENTS} elements`);
  };
}

/**
 * An index (`A[i, j]`) addresses at most MAX_ELEMENTS elements from the origin: reading further is
 * out of range anyway, and assigning there would grow the matrix (or string) past the limit.
 */
function checkIndex(idx: unknown): void {
  const i = idx as { size?: () => number[]; max?: () => unknown[]; isObjectProperty?: () => boolean };
  if (typeof i?.max !== 'function' || i.isObjectProperty?.() === true) return;
  // Each dimension counts at least 1: `x[0, 1e9]` is out of range in its first dimension, and must
  // still not get to grow the second.
  const extent = i.max().map((m) => (typeof m === 'number' ? Math.max(1, m + 1) : 1));
  if (!(product(extent) <= MAX_ELEMENTS)) throw new Error(`index: reaches past ${MAX_ELEMENTS} elements`);
}

/**
 * `argmin('A', 1950, 'B', 1962)`: the label whose value is the smallest (`sign` -1) or the largest
 * (+1), the earliest-named on a tie. Labels are strings, values plain numbers; the result is the
 * label as written, so a comparison hop reads its answer off the tool result instead of finding
 * the item whose year came back.
 */
function labelledExtreme(name: string, args: readonly unknown[], sign: 1 | -1): string {
  if (args.length < 2 || args.length % 2 !== 0)
    throw new Error(`${name}: expects label, value pairs ('A', 1950, 'B', 1962)`);
  let best: { label: string; value: number } | null = null;
  for (let i = 0; i < args.length; i += 2) {
    const label = args[i];
    const value = args[i + 1];
    if (typeof label !== 'string') throw new Error(`${name}: argument ${i + 1} is not a label in quotes`);
    if (typeof value !== 'number' || Number.isNaN(value)) throw new Error(`${name}: argument ${i + 2} is not a number`);
    if (best === null || sign * (value - best.value) > 0) best = { label, value };
  }
  return (best as { label: string }).label;
}

function lockedMath(): { math: MathJsInstance; evaluate: MathJsInstance['evaluate'] } {
  const math = create(all);
  const evaluate = math.evaluate;
  const ns = math as unknown as Record<string, Fn>;
  const transforms = math.expression.transform as unknown as Record<string, Fn>;
  // Expressions look every name up in `mathWithTransform` (a function's transform where it has one:
  // `1:100` and `range(1, 100)` include the end, `concat` counts dimensions from 1). Replacing entries
  // there, not through `math.import`, leaves mathjs' lazy factories unresolved until an expression
  // needs them: `import` with overrides resolved most of the library, and the worker's setup took
  // 1.0-1.2 s instead of 0.3-0.5 s (measured on 2 busy cores).
  const exprNs = (math.expression as unknown as { mathWithTransform: Record<string, unknown> }).mathWithTransform;
  const put = (name: string, fn: Fn): void => {
    Object.defineProperty(exprNs, name, { value: fn, writable: false, configurable: false, enumerable: true });
  };
  for (const name of DISABLED) {
    put(name, () => {
      throw new Error(`function ${name} is disabled`);
    });
  }
  const guard = (name: string, check: (args: unknown[]) => void, after?: (r: unknown) => void): void => {
    if (!(name in ns)) throw new Error(`calculate: mathjs has no function ${name}`);
    const hasTransform = name in transforms;
    let target: Fn | undefined;
    put(name, (...args) => {
      check(args);
      target ??= hasTransform ? transforms[name] : ns[name];
      const r = (target as Fn)(...args);
      after?.(r);
      return r;
    });
  };
  for (const [name, elements] of Object.entries(RESULT_ELEMENTS)) guard(name, checker(name, elements));
  put('argmin', (...args) => labelledExtreme('argmin', args, -1));
  put('argmax', (...args) => labelledExtreme('argmax', args, 1));
  guard('index', () => undefined, checkIndex);
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
  // A string (an argmin / argmax label) as written, not as mathjs prints a string literal.
  if (typeof value === 'string') return value;
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
