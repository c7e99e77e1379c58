/**
 * The one place where integer division rounds. Every function names its direction; callers pick
 * the direction that favours the venue's solvency (requirements up, payouts down) and say so.
 * bigint `/` truncates toward zero, which is never the right answer for signed money on its own.
 *
 * @module
 */

/** `floor(a / b)` for any signs, `b !== 0`. */
export function divFloor(a: bigint, b: bigint): bigint {
  // One division: a remainder check by multiplication is much cheaper than `a % b`, and a
  // non-negative quotient (same signs, the common case) truncates to the floor already.
  const q = a / b;
  if (a < 0n === b < 0n) return q;
  return q * b === a ? q : q - 1n;
}

/** `ceil(a / b)` for any signs, `b !== 0`. */
export function divCeil(a: bigint, b: bigint): bigint {
  const q = a / b;
  // A non-positive quotient (opposite signs) truncates to the ceiling already.
  if (a < 0n !== b < 0n) return q;
  return q * b === a ? q : q + 1n;
}

/** `a / b` rounded to the nearest integer, ties to even, for any signs, `b !== 0`. */
export function divHalfEven(a: bigint, b: bigint): bigint {
  if (b < 0n) {
    a = -a;
    b = -b;
  }
  let q = a / b;
  let r = a - q * b; // the sign of a, |r| < b
  if (r < 0n) {
    q -= 1n;
    r += b;
  }
  const r2 = r + r; // 0 <= r2 < 2b
  if (r2 > b) return q + 1n;
  if (r2 < b) return q;
  return (q & 1n) === 0n ? q : q + 1n;
}

/** `floor(a * b / c)`. */
export function mulDivFloor(a: bigint, b: bigint, c: bigint): bigint {
  return divFloor(a * b, c);
}

/** `ceil(a * b / c)`. */
export function mulDivCeil(a: bigint, b: bigint, c: bigint): bigint {
  return divCeil(a * b, c);
}

/** `a * b / c` rounded half-even. */
export function mulDivHalfEven(a: bigint, b: bigint, c: bigint): bigint {
  return divHalfEven(a * b, c);
}

/** Absolute value. */
export function abs(a: bigint): bigint {
  return a < 0n ? -a : a;
}

/** The smaller of two bigints. */
export function minBig(a: bigint, b: bigint): bigint {
  return a < b ? a : b;
}

/** The larger of two bigints. */
export function maxBig(a: bigint, b: bigint): bigint {
  return a > b ? a : b;
}
