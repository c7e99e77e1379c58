/**
 * Exact rationals over bigint, for displayed derived prices (liquidation price, entry price,
 * return on equity): computed exactly, rounded once for output, never compared after rounding.
 *
 * @module
 */

import { formatDecimal, pow10 } from './decimal.js';
import { divHalfEven } from './rounding.js';

/** A rational number `num / den` with `den > 0`. */
export interface Rational {
  readonly num: bigint;
  readonly den: bigint;
}

function gcd(a: bigint, b: bigint): bigint {
  let x = a < 0n ? -a : a;
  let y = b < 0n ? -b : b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
}

/** Builds `num / den` in lowest terms (den made positive). */
export function ratio(num: bigint, den: bigint = 1n): Rational {
  if (den === 0n) throw new RangeError('division by zero');
  if (den < 0n) {
    num = -num;
    den = -den;
  }
  const g = gcd(num, den);
  return g > 1n ? { num: num / g, den: den / g } : { num, den };
}

// Arithmetic does not reduce to lowest terms (a gcd per operation costs more than the larger
// numbers it saves); `ratio` and `reduced` do, and equality goes through `rcmp`.

/** `a + b`. */
export function radd(a: Rational, b: Rational): Rational {
  if (a.den === b.den) return { num: a.num + b.num, den: a.den };
  return { num: a.num * b.den + b.num * a.den, den: a.den * b.den };
}

/** `a - b`. */
export function rsub(a: Rational, b: Rational): Rational {
  if (a.den === b.den) return { num: a.num - b.num, den: a.den };
  return { num: a.num * b.den - b.num * a.den, den: a.den * b.den };
}

/** `a x b`. */
export function rmul(a: Rational, b: Rational): Rational {
  return { num: a.num * b.num, den: a.den * b.den };
}

/** `a / b` (`b` non-zero). */
export function rdiv(a: Rational, b: Rational): Rational {
  if (b.num === 0n) throw new RangeError('division by zero');
  return b.num < 0n
    ? { num: -a.num * b.den, den: a.den * -b.num }
    : { num: a.num * b.den, den: a.den * b.num };
}

/** `a` in lowest terms. */
export function reduced(a: Rational): Rational {
  return ratio(a.num, a.den);
}

/** Sign of `a`: -1, 0 or 1. */
export function rsign(a: Rational): -1 | 0 | 1 {
  return a.num < 0n ? -1 : a.num > 0n ? 1 : 0;
}

/** Compares `a` with `b`: -1, 0 or 1. */
export function rcmp(a: Rational, b: Rational): -1 | 0 | 1 {
  return rsign(rsub(a, b));
}

/** A value in `decimals`-place fixed point as a rational (e.g. micro-units at 6). */
export function fromFixed(value: bigint, decimals: number): Rational {
  return ratio(value, pow10(decimals));
}

/** Rounds half-even to `decimals` places and returns the fixed-point integer. */
export function toFixedHalfEven(a: Rational, decimals: number): bigint {
  return divHalfEven(a.num * pow10(decimals), a.den);
}

/** Formats half-even to `decimals` places as a canonical decimal string. */
export function formatRational(a: Rational, decimals: number): string {
  return formatDecimal(toFixedHalfEven(a, decimals), decimals);
}
