/**
 * A small evaluator for the Python expressions that DocMath-Eval's `normalize()` hands to `eval()`
 * after cleaning an answer: numeric literals (Python grammar), True/False/None, strings, tuples and
 * lists, + - * / // % ** with Python's int/float rules, and math.pow / math.sqrt / abs (the
 * cleaner writes `math.pow(10, n)` for "10^n"). Anything else raises, as eval() on an arbitrary
 * answer would, and the caller maps that to the script's fallback. Never runs host code.
 */

export type PyValue =
  | { kind: 'int'; v: number }
  | { kind: 'float'; v: number }
  | { kind: 'bool'; v: boolean }
  | { kind: 'str'; v: string }
  | { kind: 'none' }
  | { kind: 'tuple'; items: PyValue[] }
  | { kind: 'list'; items: PyValue[] };

class PyEvalError extends Error {
  override readonly name = 'PyEvalError';
}

type Tok = { t: 'num'; text: string } | { t: 'str'; v: string } | { t: 'name'; v: string } | { t: 'op'; v: string };

// Python numeric literals: floats (digits with single underscores), hex/octal/binary ints, decimal ints.
const NUM =
  /^(?:(?:\d(?:_?\d)*)?\.\d(?:_?\d)*(?:[eE][+-]?\d(?:_?\d)*)?|\d(?:_?\d)*\.(?:[eE][+-]?\d(?:_?\d)*)?|\d(?:_?\d)*[eE][+-]?\d(?:_?\d)*|0[xX](?:_?[0-9a-fA-F])+|0[oO](?:_?[0-7])+|0[bB](?:_?[01])+|\d(?:_?\d)*)/;
const OPS = ['**', '//', '+', '-', '*', '/', '%', '(', ')', '[', ']', ',', '.'];

function tokenize(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === ' ' || c === '\t') {
      i += 1;
      continue;
    }
    const rest = src.slice(i);
    const num = NUM.exec(rest);
    if (num && /[0-9.]/.test(c) && !(c === '.' && !/^\.\d/.test(rest))) {
      // "1abc" or "1.2.3" are syntax errors in Python: a number may not run into a name or a dot.
      if (/^[A-Za-z_0-9]/.test(rest.slice(num[0].length)))
        throw new PyEvalError(`invalid number literal near '${rest.slice(0, 12)}'`);
      out.push({ t: 'num', text: num[0] });
      i += num[0].length;
      continue;
    }
    if (c === '"' || c === "'") {
      const end = src.indexOf(c, i + 1);
      if (end < 0) throw new PyEvalError('unterminated string');
      const body = src.slice(i + 1, end);
      if (body.includes('\\')) throw new PyEvalError('escapes are not supported');
      out.push({ t: 'str', v: body });
      i = end + 1;
      continue;
    }
    const name = /^[A-Za-z_][A-Za-z_0-9]*/.exec(rest);
    if (name) {
      out.push({ t: 'name', v: name[0] });
      i += name[0].length;
      continue;
    }
    const op = OPS.find((o) => rest.startsWith(o));
    if (!op) throw new PyEvalError(`unexpected character '${c}'`);
    out.push({ t: 'op', v: op });
    i += op.length;
  }
  return out;
}

function numberLiteral(text: string): PyValue {
  const s = text.replace(/_/g, '');
  if (/^0[xX]/.test(s)) return { kind: 'int', v: parseInt(s.slice(2), 16) };
  if (/^0[oO]/.test(s)) return { kind: 'int', v: parseInt(s.slice(2), 8) };
  if (/^0[bB]/.test(s)) return { kind: 'int', v: parseInt(s.slice(2), 2) };
  if (/^\d+$/.test(s)) {
    if (/^0+[1-9]/.test(s)) throw new PyEvalError('leading zeros in decimal integer literals are not permitted');
    return { kind: 'int', v: Number(s) };
  }
  return { kind: 'float', v: Number(s) };
}

/** Numeric value of int/float/bool (bool is an int subclass in Python); null for other kinds. */
export function pyNumber(x: PyValue): number | null {
  if (x.kind === 'int' || x.kind === 'float') return x.v;
  if (x.kind === 'bool') return x.v ? 1 : 0;
  return null;
}

function num(x: PyValue, op: string): number {
  const n = pyNumber(x);
  if (n === null) throw new PyEvalError(`unsupported operand type for ${op}: ${x.kind}`);
  return n;
}
const isIntLike = (x: PyValue): boolean => x.kind === 'int' || x.kind === 'bool';

function finite(v: number, what: string): number {
  if (!Number.isFinite(v)) throw new PyEvalError(`${what}: result too large`);
  return v;
}

function binary(op: string, a: PyValue, b: PyValue): PyValue {
  if (op === '+' && a.kind === 'str' && b.kind === 'str') return { kind: 'str', v: a.v + b.v };
  const x = num(a, op);
  const y = num(b, op);
  const ints = isIntLike(a) && isIntLike(b);
  switch (op) {
    case '+':
      return { kind: ints ? 'int' : 'float', v: x + y };
    case '-':
      return { kind: ints ? 'int' : 'float', v: x - y };
    case '*':
      return { kind: ints ? 'int' : 'float', v: x * y };
    case '/':
      if (y === 0) throw new PyEvalError('division by zero');
      return { kind: 'float', v: x / y };
    case '//':
      if (y === 0) throw new PyEvalError('integer division or modulo by zero');
      return { kind: ints ? 'int' : 'float', v: Math.floor(x / y) };
    case '%':
      if (y === 0) throw new PyEvalError('integer division or modulo by zero');
      // Python's modulo takes the sign of the divisor.
      return { kind: ints ? 'int' : 'float', v: x - y * Math.floor(x / y) };
    case '**': {
      if (x === 0 && y < 0) throw new PyEvalError('zero to a negative power');
      const v = x ** y;
      if (Number.isNaN(v)) throw new PyEvalError('negative number to a fractional power gives a complex');
      return { kind: ints && y >= 0 ? 'int' : 'float', v: finite(v, '**') };
    }
    default:
      throw new PyEvalError(`operator ${op}`);
  }
}

const FUNCS: Record<string, (args: PyValue[]) => PyValue> = {
  'math.pow': (a) => {
    if (a.length !== 2) throw new PyEvalError('math.pow takes 2 arguments');
    return { kind: 'float', v: finite(num(a[0], 'pow') ** num(a[1], 'pow'), 'math.pow') };
  },
  'math.sqrt': (a) => {
    const x = num(a[0] ?? { kind: 'none' }, 'sqrt');
    if (a.length !== 1 || x < 0) throw new PyEvalError('math domain error');
    return { kind: 'float', v: Math.sqrt(x) };
  },
  abs: (a) => {
    if (a.length !== 1) throw new PyEvalError('abs takes 1 argument');
    const x = num(a[0], 'abs');
    return { kind: a[0].kind === 'float' ? 'float' : 'int', v: Math.abs(x) };
  },
};

class Parser {
  private pos = 0;
  constructor(private readonly toks: Tok[]) {}

  private peekOp(v: string): boolean {
    const t = this.toks[this.pos];
    return t !== undefined && t.t === 'op' && t.v === v;
  }
  private expect(v: string): void {
    if (!this.peekOp(v)) throw new PyEvalError(`expected '${v}'`);
    this.pos += 1;
  }
  done(): boolean {
    return this.pos >= this.toks.length;
  }

  /** expr (',' expr)* [','] -> a tuple when there is a comma. */
  exprList(close: string | null): PyValue {
    const { items, comma } = this.exprItems(close);
    if (items.length === 1 && !comma) return items[0];
    return { kind: 'tuple', items };
  }

  private exprItems(close: string | null): { items: PyValue[]; comma: boolean } {
    const items: PyValue[] = [];
    let comma = false;
    while (!(close !== null && this.peekOp(close)) && !this.done()) {
      items.push(this.expr());
      if (this.peekOp(',')) {
        this.pos += 1;
        comma = true;
      } else break;
    }
    return { items, comma };
  }

  private expr(): PyValue {
    let left = this.term();
    while (this.peekOp('+') || this.peekOp('-')) {
      const op = (this.toks[this.pos++] as { v: string }).v;
      left = binary(op, left, this.term());
    }
    return left;
  }
  private term(): PyValue {
    let left = this.factor();
    while (this.peekOp('*') || this.peekOp('/') || this.peekOp('//') || this.peekOp('%')) {
      const op = (this.toks[this.pos++] as { v: string }).v;
      left = binary(op, left, this.factor());
    }
    return left;
  }
  private factor(): PyValue {
    if (this.peekOp('-') || this.peekOp('+')) {
      const op = (this.toks[this.pos++] as { v: string }).v;
      const x = this.factor();
      const n = num(x, `unary ${op}`);
      return { kind: x.kind === 'float' ? 'float' : 'int', v: op === '-' ? -n : n };
    }
    return this.power();
  }
  private power(): PyValue {
    const base = this.primary();
    if (this.peekOp('**')) {
      this.pos += 1;
      return binary('**', base, this.factor()); // right-associative, unary binds on the right
    }
    return base;
  }
  private primary(): PyValue {
    const t = this.toks[this.pos++];
    if (t === undefined) throw new PyEvalError('unexpected end of expression');
    if (t.t === 'num') return numberLiteral(t.text);
    if (t.t === 'str') return { kind: 'str', v: t.v };
    if (t.t === 'op' && (t.v === '(' || t.v === '[')) {
      const close = t.v === '(' ? ')' : ']';
      const { items, comma } = this.exprItems(close);
      this.expect(close);
      if (close === ']') return { kind: 'list', items };
      if (items.length === 0 && !comma) return { kind: 'tuple', items: [] };
      return items.length === 1 && !comma ? items[0] : { kind: 'tuple', items };
    }
    if (t.t === 'name') {
      if (t.v === 'True' || t.v === 'False') return { kind: 'bool', v: t.v === 'True' };
      if (t.v === 'None') return { kind: 'none' };
      let name = t.v;
      while (this.peekOp('.')) {
        this.pos += 1;
        const n = this.toks[this.pos++];
        if (n === undefined || n.t !== 'name') throw new PyEvalError('expected a name after "."');
        name += `.${n.v}`;
      }
      const fn = FUNCS[name];
      if (!fn || !this.peekOp('(')) throw new PyEvalError(`name '${name}' is not defined`);
      this.pos += 1;
      const { items } = this.exprItems(')');
      this.expect(')');
      return fn(items);
    }
    throw new PyEvalError(`unexpected token`);
  }
}

/** Python `eval(src)` for the supported subset; throws PyEvalError where Python would raise. */
export function pyEval(src: string): PyValue {
  const toks = tokenize(src.replace(/^[ \t]+/, ''));
  if (toks.length === 0) throw new PyEvalError('empty expression');
  const p = new Parser(toks);
  const v = p.exprList(null);
  if (!p.done()) throw new PyEvalError('invalid syntax');
  return v;
}
