import { afterAll, describe, expect, it } from 'vitest';
import {
  calculate,
  calculateWorkersStarted,
  closeCalculateWorker,
  createCalculate,
  formatNumber,
} from './calculate.ts';

afterAll(async () => {
  await closeCalculateWorker();
});

const calc = createCalculate();

describe('formatNumber', () => {
  it('writes integers exactly and others with at most 10 significant digits, no exponent for normal magnitudes', () => {
    expect(formatNumber(37)).toBe('37');
    expect(formatNumber(-1950)).toBe('-1950');
    expect(formatNumber(123456789012345)).toBe('123456789012345');
    expect(formatNumber(0.1 + 0.2)).toBe('0.3'); // 0.30000000000000004 rounded to 10 digits
    expect(formatNumber(1 / 3)).toBe('0.3333333333');
    expect(formatNumber(2.5)).toBe('2.5');
    expect(formatNumber(0.000001234)).toBe('0.000001234');
    expect(formatNumber(123456789.123456)).toBe('123456789.1');
    expect(formatNumber(2 ** 60)).toBe('1.152921505e+18');
    expect(formatNumber(1e21)).toBe('1e+21');
    expect(formatNumber(2e-12)).toBe('2e-12');
    expect(formatNumber(Infinity)).toBe('Infinity');
    expect(formatNumber(NaN)).toBe('NaN');
  });
});

describe('calculate tool', () => {
  it('evaluates arithmetic, functions, matrices and units', async () => {
    expect(await calc('1987 - 1950')).toEqual({ ok: true, output: '37' });
    expect(await calc(' 10 / 4 ')).toEqual({ ok: true, output: '2.5' });
    expect(await calc('sqrt(2)')).toEqual({ ok: true, output: '1.414213562' });
    expect(await calc('max(3, 7, 2) * 2')).toEqual({ ok: true, output: '14' });
    expect(await calc('[1, 2] * 2')).toEqual({ ok: true, output: '[2, 4]' });
    expect(await calc('5 cm + 2 inch')).toEqual({ ok: true, output: '10.08 cm' }); // 2 inch = 5.08 cm
    expect(await calc('a = 3; a * 2')).toEqual({ ok: true, output: '6' });
    expect(await calc('f(x) = x^2; f(3)')).toEqual({ ok: true, output: '9' });
  });

  it('caps its own result (not only the engine): a long matrix text is cut with a note', async () => {
    const r = await calc('ones(100, 100)');
    expect(r.ok).toBe(true);
    expect(r.output).toMatch(/^\[\[1, 1, 1,/);
    expect(r.output).toMatch(/\n\[calculate result truncated at 4000 characters of \d+\]$/);
    expect(r.output.length).toBeLessThan(4100);
  });

  it('names the item with the smallest or largest value: argmin / argmax over label, value pairs', async () => {
    expect(await calc("argmin('Sousax Drufailk', 1950, 'Ymir Velm', 1962)")).toEqual({
      ok: true,
      output: 'Sousax Drufailk',
    });
    expect(await calc("argmax('Sousax Drufailk', 1950, 'Ymir Velm', 1962, 'Ola', 1955)")).toEqual({
      ok: true,
      output: 'Ymir Velm',
    });
    // tie: the earlier-named
    expect(await calc("argmin('A', 1962, 'B', 1950, 'C', 1950)")).toEqual({ ok: true, output: 'B' });
    expect(await calc("argmax('A', 3 * 2, 'B', 5)")).toEqual({ ok: true, output: 'A' });
    expect(await calc("argmin('A', 1950, 'B')")).toEqual({
      ok: false,
      output: "calculate error: argmin: expects label, value pairs ('A', 1950, 'B', 1962)",
    });
    expect(await calc("argmin(1950, 'A', 1962, 'B')")).toEqual({
      ok: false,
      output: 'calculate error: argmin: argument 1 is not a label in quotes',
    });
    expect(await calc("argmax('A', 'x', 'B', 2)")).toEqual({
      ok: false,
      output: 'calculate error: argmax: argument 2 is not a number',
    });
  });

  it('keeps no state between calls', async () => {
    expect((await calc('zz = 5')).ok).toBe(true);
    expect(await calc('zz + 1')).toEqual({ ok: false, output: 'calculate error: Undefined symbol zz' });
  });

  it.each([
    ['import({x: 1})', 'import'],
    ['evaluate("1 + 1")', 'evaluate'],
    ['parse("1")', 'parse'],
    ['compile("1")', 'compile'],
    ['createUnit("foo")', 'createUnit'],
    ['simplify("x + x")', 'simplify'],
    ['derivative("x^2", "x")', 'derivative'],
    ['resolve("x", {})', 'resolve'],
    ['reviver()', 'reviver'],
    ['random()', 'random'],
    ['randomInt(1, 9)', 'randomInt'],
  ])('locks %s', async (expr, name) => {
    expect(await calc(expr)).toEqual({ ok: false, output: `calculate error: function ${name} is disabled` });
  });

  it('guards array builders against huge sizes', async () => {
    expect(await calc('zeros(100000, 100000)')).toEqual({
      ok: false,
      output: 'calculate error: zeros: more than 10000 elements',
    });
    expect(await calc('1:1e9')).toEqual({ ok: false, output: 'calculate error: range: more than 10000 elements' });
    expect(await calc('ones(3)')).toEqual({ ok: true, output: '[1, 1, 1]' });
    expect(await calc('sum(1:100)')).toEqual({ ok: true, output: '5050' }); // expression ranges include the end
    // Inside expressions mathjs' range() includes the end as well (its transform), as unlocked mathjs does.
    expect(await calc('sum(range(1, 100))')).toEqual({ ok: true, output: '5050' });
  });

  it('answers bad expressions with a short error and never throws', async () => {
    expect(await calc('1 +')).toEqual({ ok: false, output: 'calculate error: Unexpected end of expression (char 4)' });
    expect(await calc('')).toEqual({ ok: false, output: 'calculate error: empty expression' });
    expect(await calc('sin')).toEqual({ ok: false, output: 'calculate error: result is a function, not a value' });
    expect(await calc('x'.repeat(501))).toEqual({
      ok: false,
      output: 'calculate error: expression longer than 500 characters',
    });
    expect((await calc('sin.constructor("return process")()')).ok).toBe(false);
  });

  it('still computes after a disabled function was called (the overrides did not break the instance)', async () => {
    await calc('config({number: "BigNumber"})');
    expect(calculate('0.1 + 0.2')).toBe('0.3');
  });
});

describe('calculate tool element bounds (checked before a function runs)', () => {
  // Each of these hung for seconds at 1-4 GB on the main thread; resize([1], [1e9]) and the index
  // assignment ended the whole process with V8's "heap out of memory" even from a worker thread.
  it.each([
    ['resize([1], [1e9])', 'resize: more than 10000 elements'],
    ['resize([0], [10000, 10000])', 'resize: more than 10000 elements'],
    ['resize("ab", [1e9], "x")', 'resize: more than 10000 elements'],
    ['diag(1:10000)', 'diag: more than 10000 elements'],
    ['diag([1, 2], 1e6)', 'diag: more than 10000 elements'],
    ['identity(5000)', 'identity: more than 10000 elements'],
    ['zeros(matrix([1e5, 1e5]))', 'zeros: more than 10000 elements'],
    ['ones(bignumber(1e5), 1e5)', 'ones: more than 10000 elements'],
    ['range(bignumber(1), bignumber(1e9))', 'range: more than 10000 elements'],
    ['range(0 m, 1 km, 1 mm)', 'range: more than 10000 elements'],
    ['kron(ones(100, 100), ones(100, 100))', 'kron: more than 10000 elements'],
    ['setCartesian(1:10000, 1:10000)', 'setCartesian: more than 10000 elements'],
    ['setPowerset(1:24)', 'setPowerset: more than 10000 elements'],
    ['concat(ones(5000), ones(5000), ones(5000))', 'concat: more than 10000 elements'],
    ['matrixFromFunction([1e5, 1e5], f(i) = 1)', 'matrixFromFunction: more than 10000 elements'],
    ['ones(10000, 1) + ones(1, 10000)', 'add: more than 10000 elements'],
    ['ones(10000, 1) * ones(1, 10000)', 'multiply: more than 10000 elements'],
    ['a = [1]; a[1e9] = 2', 'index: reaches past 10000 elements'],
    ['A = sparse([1]); A[1e5, 1e5] = 1', 'index: reaches past 10000 elements'],
    ['s = "ab"; s[1e8] = "x"', 'index: reaches past 10000 elements'],
  ])('%s: refused before it allocates; same worker, next call works', async (expr, error) => {
    const before = calculateWorkersStarted();
    expect(await calc(expr)).toEqual({ ok: false, output: `calculate error: ${error}` });
    expect(await calc('6 * 7')).toEqual({ ok: true, output: '42' });
    // No worker was lost: the bound, not the heap limit or the deadline, stopped it.
    expect(calculateWorkersStarted()).toBe(before);
  });

  it('allows results up to the bound', async () => {
    expect(await calc('size(resize([1], [100, 100]))')).toEqual({ ok: true, output: '[100, 100]' });
    expect(await calc('size(ones(100, 1) + ones(1, 100))')).toEqual({ ok: true, output: '[100, 100]' });
    expect(await calc('ones(1, 10000) * ones(10000, 1)')).toEqual({ ok: true, output: '[[10000]]' });
    expect(await calc('a = [1]; a[5] = 2; a')).toEqual({ ok: true, output: '[1, 0, 0, 0, 2]' });
    expect(await calc('x = [1, 2; 3, 4]; x[:, 1]')).toEqual({ ok: true, output: '[1, 3]' });
    expect(await calc('size(range(0 m, 1 m, 1 cm))')).toEqual({ ok: true, output: '[101]' });
    expect(await calc('concat([1, 2], [3, 4], 1)')).toEqual({ ok: true, output: '[1, 2, 3, 4]' });
  });
});

describe('calculate tool resource limits (worker process with deadline and heap limit)', () => {
  // Within the element bounds at every step, but 10,000 callbacks that each build 10,000 elements.
  it.each(['map(ones(100, 100), f(x) = ones(100, 100))', 'sum(map(1:10000, f(x) = sum(1:10000)))'])(
    '%s: stopped by the deadline or the heap limit, process alive, one restart, next call works',
    async (expr) => {
      const calc = createCalculate({ timeoutMs: 1000 });
      const before = calculateWorkersStarted();
      const r = await calc(expr);
      expect(r.ok).toBe(false);
      expect(r.output).toMatch(
        /^calculate error: (timeout: evaluation ran longer than 1000 ms|sandbox crashed: out of memory)$/,
      );
      expect(await calc('6 * 7')).toEqual({ ok: true, output: '42' });
      expect(calculateWorkersStarted()).toBe(before + 1);
    },
  );

  it('runs 200 ordinary calls in one warm worker with correct results (latency: npm run bench)', async () => {
    await calc('1 + 1');
    const before = calculateWorkersStarted();
    for (let i = 0; i < 200; i++) expect(await calc(`${i} * 2 + 1`)).toEqual({ ok: true, output: String(i * 2 + 1) });
    expect(calculateWorkersStarted()).toBe(before);
  });
});
