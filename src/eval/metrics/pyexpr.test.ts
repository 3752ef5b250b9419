import { describe, it, expect } from 'vitest';
import { pyEval } from './pyexpr.ts';

describe('pyEval (safe subset of Python eval)', () => {
  it('literals and Python number rules', () => {
    expect(pyEval('1_000')).toEqual({ kind: 'int', v: 1000 });
    expect(pyEval('7/2')).toEqual({ kind: 'float', v: 3.5 });
    expect(pyEval('-7//2')).toEqual({ kind: 'int', v: -4 });
    expect(pyEval('-7 % 3')).toEqual({ kind: 'int', v: 2 }); // sign of the divisor
    expect(pyEval('2**-1')).toEqual({ kind: 'float', v: 0.5 });
    expect(pyEval('-2**2')).toEqual({ kind: 'int', v: -4 }); // ** binds tighter than unary minus
    expect(pyEval('2**3**2')).toEqual({ kind: 'int', v: 512 }); // right-associative
    expect(pyEval('0x10')).toEqual({ kind: 'int', v: 16 });
    expect(pyEval('math.pow(10, 3)')).toEqual({ kind: 'float', v: 1000 });
    expect(pyEval('True')).toEqual({ kind: 'bool', v: true });
    expect(pyEval('"(a)"')).toEqual({ kind: 'str', v: '(a)' });
    expect(pyEval('1, 2')).toEqual({
      kind: 'tuple',
      items: [
        { kind: 'int', v: 1 },
        { kind: 'int', v: 2 },
      ],
    });
    expect(pyEval('[(1)]')).toEqual({ kind: 'list', items: [{ kind: 'int', v: 1 }] });
  });
  it('raises where Python raises', () => {
    for (const s of ['007', '1/0', 'abc', 'os.system(1)', '1 2', '1.2.3', '3abc', '(1', '10.0**400', ''])
      expect(() => pyEval(s), s).toThrow();
  });
});
