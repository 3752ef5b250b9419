import { pyEval, pyNumber, type PyValue } from './pyexpr.ts';
import { pyMax, pyMin, pyStrip } from '../../data/answers/pytext.ts';

/**
 * DocMath-Eval accuracy (Zhao et al., ACL 2024; yale-nlp/DocMath-Eval utils/evaluation_utils.py):
 * `normalize()` cleans the extracted answer (currency words, `=`, `%`, `$`, units, "10^n") and
 * eval()s it; `compare_two_numbers` accepts a prediction within 0.15 % of the gold, or off by an exact
 * power of ten, or off by a percent-style factor (100, 1000, 100000) within 0.15 %, or equal after
 * rounding both up at 3 decimals. eval() is replaced by a safe evaluator of the same subset.
 */

// Python `$` matches at the end or before a final newline; `\d` matches any Unicode digit.
const END = '(?=\\n?$)';
const D = '\\p{Nd}';
const UNIT_AFTER = new RegExp(`^([-+]?(?:[${D},]*\\.*${D}+)) [^0-9 ]+${END}`, 'u');
const UNIT_BEFORE = new RegExp(`^[^0-9 ]+ ([-+]?(?:[${D},]*\\.*${D}+))${END}`, 'u');
const SUFFIX = new RegExp(`^([-+]?(?:[${D},]*\\.*${D}+))[^${D}]{1,2}${END}`, 'u');
const PREFIX = new RegExp(`^[^\\-+${D}]{1,2}((?:[${D},]*\\.*${D}+))${END}`, 'u');
const IS_NUMBER = new RegExp(`^[-+]?(${D}{1,3}(,${D}{3})*|(${D}+))(\\.${D}+)?${END}`, 'u');

/** The answer after `normalize()`'s string stages, before eval (exported for tests). */
export function cleanDocmathAnswer(raw: string): string {
  let p = pyStrip(raw).replace(/\.+$/, '');
  for (const money of ['£', '€', '¥', 'million', 'billion', 'thousand', 'US', 'USD', 'RMB'])
    p = p.split(money).join('');
  if (p.includes('=')) p = pyStrip(p.split('=').at(-1) ?? '');
  if (p.includes('≈')) p = pyStrip(p.split('≈').at(-1) ?? '');
  for (const ch of ['`', '%', '$', '°']) p = p.split(ch).join('');
  if (['true', 'yes', 'false', 'no'].includes(p)) p = p === 'true' || p === 'yes' ? 'True' : 'False';
  if (p.includes('True') || p.includes('False')) p = p.includes('True') ? 'True' : 'False';
  if (p.includes('approximately')) p = pyStrip(p.split('approximately').join(''));
  if (p.includes(' or ')) p = p.split(' or ')[0];
  for (const re of [UNIT_AFTER, UNIT_BEFORE, SUFFIX, PREFIX]) {
    const m = re.exec(p);
    if (m) p = m[1];
  }
  if (p.includes('10^')) p = p.replace(new RegExp(`10\\^(-?${D}+)`, 'gu'), 'math.pow(10, $1)');
  if (p.includes(' x ')) p = p.split(' x ').join('*');
  if (p.includes(' × ')) p = p.split(' × ').join('*');
  if (IS_NUMBER.test(p)) p = p.split(',').join('');
  if (['(a)', '(b)', '(c)', '(d)'].some((o) => p.includes(o))) p = `"${/\([a-d]\)/.exec(p)?.[0] ?? ''}"`;
  return p.length === 0 ? '0' : p;
}

/** `normalize()`: the cleaned answer evaluated; eval failure gives int 0 as in the script. */
export function normalizeDocmath(raw: string): PyValue {
  const cleaned = cleanDocmathAnswer(raw);
  let v: PyValue;
  try {
    v = pyEval(cleaned);
  } catch {
    return { kind: 'int', v: 0 };
  }
  if (v.kind === 'tuple') return { kind: 'list', items: v.items };
  return v;
}

const withinEps = (pred: number, gt: number): boolean => {
  const eps = Math.abs(gt) * 0.0015;
  return pred >= gt - eps && pred <= gt + eps;
};

/** math.ceil(x * 10^d) / 10^d; Python raises OverflowError on inf. */
function roundUpToDecimal(x: number, decimals: number): number {
  const scaled = x * 10 ** decimals;
  if (!Number.isFinite(scaled)) throw new RangeError('cannot convert float infinity to integer');
  return Math.ceil(scaled) / 10 ** decimals;
}

/**
 * `compare_two_numbers(p, gt)`. Throws where Python raises (int(inf)), which get_acc turns into 0.
 */
export function compareTwoNumbers(p: number, gt: number): boolean {
  const v1 = pyMax(Math.abs(gt), Math.abs(p));
  const v2 = pyMin(Math.abs(gt), Math.abs(p));
  if (v1 !== 0 && v2 !== 0) {
    const l = Math.log10(v1 / v2);
    if (!Number.isFinite(l)) throw new RangeError('cannot convert float infinity to integer');
    if (Math.trunc(l) === l) return true; // an exact power of ten apart (ratio 1 included)
  }
  if (v2 <= v1 / 50 && withinEps(v2 * 100, v1)) return true;
  else if (v2 <= v1 / 500 && withinEps(v2 * 1000, v1)) return true;
  else if (v2 <= v1 / 50000 && withinEps(v2 * 100000, v1)) return true;
  if (roundUpToDecimal(v1, 3) === roundUpToDecimal(v2, 3)) return true;
  return withinEps(p, gt);
}

/** `get_acc(prediction, gt, cot=True)`: 1 or 0. Gold is a number or a boolean. */
export function docmathAccuracy(prediction: string, gt: number | boolean): number {
  try {
    const p = normalizeDocmath(prediction);
    if (typeof gt === 'boolean') {
      // Python `prediction == gt`: numbers compare by value (True == 1), other kinds are unequal.
      const n = pyNumber(p);
      return n !== null && n === (gt ? 1 : 0) ? 1 : 0;
    }
    if (p.kind === 'none') return 0;
    const n = pyNumber(p);
    if (n === null) return 0; // str and list predictions are never equal to a number
    return compareTwoNumbers(n, gt) ? 1 : 0;
  } catch {
    return 0;
  }
}
