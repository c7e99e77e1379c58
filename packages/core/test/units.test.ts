/** Fixed-point units: canonical decimal codec and the named rounding directions. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  abs,
  divCeil,
  divFloor,
  divHalfEven,
  formatDecimal,
  formatRational,
  fromFixed,
  isCanonicalDecimal,
  maxBig,
  minBig,
  mulDivCeil,
  mulDivFloor,
  parseDecimal,
  pow10,
  radd,
  ratio,
  rcmp,
  rdiv,
  reduced,
  rmul,
  rsign,
  rsub,
} from '../src/index.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 1000);
const big = fc.bigInt({ min: -(10n ** 40n), max: 10n ** 40n });
// Values around the decimal point too (below one whole unit, where the digits need padding).
const anyScale = fc.oneof(
  big,
  fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }),
  fc.bigInt({ min: -99n, max: 99n }),
);
const nonZero = big.filter((b) => b !== 0n);

describe('decimal codec', () => {
  it('round-trips every integer at every scale and always prints canonical text', () => {
    fc.assert(
      fc.property(anyScale, fc.integer({ min: 0, max: 18 }), (value, decimals) => {
        const text = formatDecimal(value, decimals);
        expect(isCanonicalDecimal(text)).toBe(true);
        expect(parseDecimal(text, decimals, true)).toEqual({ ok: true, value });
      }),
      { numRuns: runs },
    );
  });

  it('rejects more decimals than the unit allows instead of rounding', () => {
    expect(parseDecimal('1.0000001', 6)).toEqual({ ok: false, error: 'precision' });
    expect(parseDecimal('1.0000010', 6)).toEqual({ ok: true, value: 1_000_001n });
  });

  it.each(['1e3', '0x10', ' 1', '1,0', 'NaN', 'Infinity', '.5', '1.', '+1', '01', '', '--1'])(
    'rejects %j as not a plain decimal',
    (text) => {
      expect(parseDecimal(text, 6, true)).toEqual({ ok: false, error: 'format' });
    },
  );

  it('rejects negatives unless allowed', () => {
    expect(parseDecimal('-1', 6)).toEqual({ ok: false, error: 'negative' });
    expect(parseDecimal('-1', 6, true)).toEqual({ ok: true, value: -1_000_000n });
  });

  it('refuses text longer than 100 characters before any bigint work', () => {
    const hundred = `1${'0'.repeat(99)}`;
    expect(parseDecimal(hundred, 0)).toEqual({ ok: true, value: 10n ** 99n });
    expect(parseDecimal(`${hundred}0`, 0)).toEqual({ ok: false, error: 'format' });
  });

  it.each([
    ['0', true],
    ['-1.5', true],
    ['65000.5', true],
    ['-0', false],
    ['1.', false],
    ['1.0', false],
    ['1.50', false],
    ['01', false],
    ['.5', false],
    ['1e3', false],
  ])('isCanonicalDecimal(%j) is %s', (text, canonical) => {
    expect(isCanonicalDecimal(text)).toBe(canonical);
  });

  it('pow10 covers 0..80 and refuses anything else', () => {
    expect(pow10(0)).toBe(1n);
    expect(pow10(80)).toBe(10n ** 80n);
    expect(() => pow10(81)).toThrow(RangeError);
    expect(() => pow10(-1)).toThrow(RangeError);
  });

  it('formats canonically: no trailing zeros, "0" for zero', () => {
    expect(formatDecimal(0n, 6)).toBe('0');
    expect(formatDecimal(1_500_000n, 6)).toBe('1.5');
    expect(formatDecimal(-5n, 6)).toBe('-0.000005');
    expect(formatDecimal(65_000_500_000_000_000_000_000n, 18)).toBe('65000.5');
    expect(formatDecimal(100n, 2)).toBe('1');
    expect(formatDecimal(10n, 2)).toBe('0.1');
    expect(formatDecimal(-1_000_000n, 6)).toBe('-1');
    expect(formatDecimal(-120n, 0)).toBe('-120');
  });
});

describe('rounding', () => {
  it('floor <= a/b <= ceil, within one unit, exact when divisible', () => {
    fc.assert(
      fc.property(big, nonZero, (a, b) => {
        const f = divFloor(a, b);
        const c = divCeil(a, b);
        // f*b <= a (for b > 0) and the next multiple passes a.
        if (b > 0n) {
          expect(f * b <= a && (f + 1n) * b > a).toBe(true);
          expect(c * b >= a && (c - 1n) * b < a).toBe(true);
        } else {
          expect(f * b >= a && (f + 1n) * b < a).toBe(true);
          expect(c * b <= a && (c - 1n) * b > a).toBe(true);
        }
        expect(c - f).toBe(a % b === 0n ? 0n : 1n);
      }),
      { numRuns: runs },
    );
  });

  it('half-even picks the nearest integer and the even one on a tie', () => {
    fc.assert(
      fc.property(big, nonZero, (a, b) => {
        const h = divHalfEven(a, b);
        const twiceDiff = 2n * (a - h * b) * (b < 0n ? -1n : 1n);
        const absB = b < 0n ? -b : b;
        expect(twiceDiff <= absB && twiceDiff >= -absB).toBe(true);
        if (twiceDiff === absB || twiceDiff === -absB) expect(h % 2n).toBe(0n);
      }),
      { numRuns: runs },
    );
    expect(divHalfEven(5n, 2n)).toBe(2n);
    expect(divHalfEven(7n, 2n)).toBe(4n);
    expect(divHalfEven(-5n, 2n)).toBe(-2n);
    expect(divHalfEven(-7n, 2n)).toBe(-4n);
  });

  it('mulDiv variants bracket the exact product', () => {
    fc.assert(
      fc.property(big, big, nonZero, (a, b, c) => {
        expect(mulDivFloor(a, b, c)).toBe(divFloor(a * b, c));
        expect(mulDivCeil(a, b, c)).toBe(divCeil(a * b, c));
      }),
      { numRuns: runs },
    );
  });
});

describe('small helpers', () => {
  it('abs, minBig and maxBig', () => {
    expect(abs(-3n)).toBe(3n);
    expect(abs(3n)).toBe(3n);
    expect(minBig(-2n, 5n)).toBe(-2n);
    expect(minBig(5n, -2n)).toBe(-2n);
    expect(maxBig(-2n, 5n)).toBe(5n);
    expect(maxBig(5n, -2n)).toBe(5n);
    expect(maxBig(4n, 4n)).toBe(4n);
  });
});

describe('rationals', () => {
  it('ratio reduces to lowest terms with a positive denominator', () => {
    expect(ratio(6n, 4n)).toEqual({ num: 3n, den: 2n });
    expect(ratio(1n, -2n)).toEqual({ num: -1n, den: 2n });
    expect(ratio(-6n, -4n)).toEqual({ num: 3n, den: 2n });
    expect(ratio(0n, -5n)).toEqual({ num: 0n, den: 1n });
    expect(ratio(7n)).toEqual({ num: 7n, den: 1n });
    expect(() => ratio(1n, 0n)).toThrow(RangeError);
    expect(reduced({ num: 10n, den: 15n })).toEqual({ num: 2n, den: 3n });
  });

  it('rsign and rcmp: zero is 0, a negative denominator flips the sign', () => {
    expect(rsign(ratio(0n, 3n))).toBe(0);
    expect(rsign(ratio(1n, -2n))).toBe(-1);
    expect(rsign(ratio(-1n, -2n))).toBe(1);
    expect(rcmp(ratio(1n, 2n), ratio(2n, 4n))).toBe(0);
    expect(rcmp(ratio(1n, 3n), ratio(1n, 2n))).toBe(-1);
    expect(rcmp(ratio(1n, 2n), ratio(1n, 3n))).toBe(1);
  });

  it('arithmetic is exact; division by a negative keeps the denominator positive', () => {
    const third = ratio(1n, 3n);
    const half = ratio(1n, 2n);
    expect(reduced(radd(third, half))).toEqual({ num: 5n, den: 6n });
    expect(reduced(rsub(third, half))).toEqual({ num: -1n, den: 6n });
    expect(reduced(rsub(half, half))).toEqual({ num: 0n, den: 1n });
    expect(reduced(rmul(third, half))).toEqual({ num: 1n, den: 6n });
    const q = rdiv(third, ratio(-1n, 2n));
    expect(q.den > 0n).toBe(true);
    expect(reduced(q)).toEqual({ num: -2n, den: 3n });
    expect(() => rdiv(third, ratio(0n))).toThrow(RangeError);
  });

  it('formatRational rounds half-even once, at the last place', () => {
    expect(formatRational(ratio(1n, 3n), 6)).toBe('0.333333');
    expect(formatRational(ratio(2n, 3n), 6)).toBe('0.666667');
    expect(formatRational(ratio(5n, 2n), 0)).toBe('2');
    expect(formatRational(ratio(-5n, 2n), 0)).toBe('-2');
    expect(formatRational(fromFixed(1_250_000n, 6), 1)).toBe('1.2');
  });
});
