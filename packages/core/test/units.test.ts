/** Fixed-point units: canonical decimal codec and the named rounding directions. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  divCeil,
  divFloor,
  divHalfEven,
  formatDecimal,
  isCanonicalDecimal,
  mulDivCeil,
  mulDivFloor,
  parseDecimal,
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
