/**
 * Python string and number semantics that the official evaluation scripts rely on, so that our
 * metrics give the same numbers as running those scripts ("exactly as the official scripts
 * compute them"). JavaScript differs from Python in each of these: `\s` and `String.trim` know a
 * different whitespace set, `\b` is ASCII-only, `Number()` accepts "" and "0x10" but rejects "1_000",
 * and `Math.round(x * 1000) / 1000` does not round half to even on the exact binary value.
 */

/**
 * Python's `str.isspace()` set (what `str.split()`, `str.strip()` and `re` `\s` use on str):
 * Unicode Zs plus bidi classes B, S, WS. JavaScript `\s` lacks \x1c-\x1f and \x85 and adds \ufeff.
 */
const PY_WHITESPACE = '\\t\\n\\v\\f\\r\\x1c-\\x1f \\x85\\xa0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000';

const WS_RUN = new RegExp(`[${PY_WHITESPACE}]+`, 'u');
const WS_ALL = new RegExp(`[${PY_WHITESPACE}]`, 'gu');
const WS_LEAD = new RegExp(`^[${PY_WHITESPACE}]+`, 'u');
const WS_TRAIL = new RegExp(`[${PY_WHITESPACE}]+$`, 'u');

/** Python `s.split()` (no argument): split on whitespace runs, drop empty pieces. */
export function pySplit(s: string): string[] {
  return s.split(WS_RUN).filter((t) => t.length > 0);
}

/** Python `s.strip()` (no argument). */
export function pyStrip(s: string): string {
  return s.replace(WS_LEAD, '').replace(WS_TRAIL, '');
}

/** Python `re.sub(r"\s", "", s)` on a str. */
export function pyRemoveWhitespace(s: string): string {
  return s.replace(WS_ALL, '');
}

/** Python `string.punctuation`: the 32 ASCII punctuation characters. */
const PY_PUNCTUATION = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~';
const PUNCT_SET = new Set(PY_PUNCTUATION);

/** `''.join(ch for ch in s if ch not in string.punctuation)`. */
export function pyRemovePunctuation(s: string): string {
  let out = '';
  for (const ch of s) if (!PUNCT_SET.has(ch)) out += ch;
  return out;
}

/**
 * Python 3 `re` word character on str patterns: `ch.isalnum() or ch == '_'`, i.e. letters and
 * numbers of any script. Used to emulate Unicode `\b`, which JavaScript regexes lack.
 */
export const PY_WORD_CHAR = '\\p{L}\\p{N}_';

/**
 * Python `round(x, ndigits)` on a float: the decimal nearest to the exact binary value of x, ties to
 * even. `toFixed` rounds the exact value too but breaks ties away from zero; an exact tie at n
 * digits happens only when x * 2^(n+1) is an odd integer (x = j / 2^(n+1), e.g. 0.0625 at n = 3),
 * which means of 16 items hit, so those are resolved here by hand.
 */
export function pyRound(x: number, ndigits: number): number {
  if (!Number.isFinite(x)) return x;
  const scaledHalf = x * 2 ** (ndigits + 1); // exact: multiplying by a power of two
  if (Number.isInteger(scaledHalf) && Math.abs(scaledHalf) % 2 === 1 && Math.abs(scaledHalf) < 2 ** 40) {
    // x * 10^n = j * 5^n / 2 lies exactly between two integers: pick the even one.
    const twice = scaledHalf * 5 ** ndigits; // 2 * x * 10^n, an odd integer
    const lo = (twice - 1) / 2;
    const pick = lo % 2 === 0 ? lo : lo + 1;
    return pick / 10 ** ndigits;
  }
  return Number(x.toFixed(ndigits));
}

/**
 * Value of a Unicode decimal digit (category Nd). Unicode assigns Nd only in contiguous runs of ten
 * code points valued 0..9 in order, so the value is the distance to the run start modulo 10.
 */
function unicodeDigitValue(ch: string): number {
  let cp = ch.codePointAt(0) ?? 0;
  let offset = 0;
  while (offset < 100 && /\p{Nd}/u.test(String.fromCodePoint(cp - 1))) {
    cp -= 1;
    offset += 1;
  }
  return offset % 10;
}

const FLOAT_BODY = /^[+-]?(?:(?:\d(?:_?\d)*)?\.\d(?:_?\d)*|\d(?:_?\d)*\.?)(?:[eE][+-]?\d(?:_?\d)*)?$/;
const FLOAT_SPECIAL = /^([+-]?)(inf|infinity|nan)$/i;

/**
 * Python `float(s)` for a str: surrounding whitespace allowed, underscores between digits, any
 * Unicode decimal digits, "inf"/"infinity"/"nan" in any case with a sign; "", "0x10", "1e", "1,000"
 * raise ValueError. Returns null where Python raises. "1e400" is inf, as in Python.
 */
export function pyFloat(s: string): number | null {
  // CPython first maps Unicode decimals to ASCII digits (_PyUnicode_TransformDecimalAndSpaceToASCII).
  const ascii = pyStrip(s).replace(/\p{Nd}/gu, (d) => (d >= '0' && d <= '9' ? d : String(unicodeDigitValue(d))));
  const special = FLOAT_SPECIAL.exec(ascii);
  if (special) {
    if (special[2].toLowerCase() === 'nan') return Number.NaN;
    return special[1] === '-' ? -Infinity : Infinity;
  }
  if (!FLOAT_BODY.test(ascii)) return null;
  // Both languages round decimal strings to the nearest double, so the value agrees bit for bit.
  return Number(ascii.replace(/_/g, ''));
}

/** Python `max(a, b)`: b only when b > a (so a NaN second argument is ignored, a NaN first kept). */
export function pyMax(a: number, b: number): number {
  return b > a ? b : a;
}

/** Python `min(a, b)`: b only when b < a. */
export function pyMin(a: number, b: number): number {
  return b < a ? b : a;
}
