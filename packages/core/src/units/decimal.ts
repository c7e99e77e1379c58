/**
 * Canonical decimal strings <-> bigint fixed point. The wire carries human decimals (`"65000.5"`),
 * the core keeps integers in a unit (`65000500000000000000000n` at 18 decimals). A string with more
 * decimals than the unit allows is rejected, never rounded.
 *
 * @module
 */

/** Decimals of a price (interface spec "Encoded precision"). */
export const PRICE_DECIMALS = 18;
/** Decimals of collateral token amounts. */
export const COLLATERAL_DECIMALS = 6;
/** One whole price unit in raw form. */
export const PRICE_SCALE = 10n ** 18n;
/** One whole collateral unit (1 USD) in micro-units. */
export const COLLATERAL_SCALE = 10n ** 6n;

const POW10: bigint[] = [];
for (let i = 0; i <= 80; i++) POW10.push(10n ** BigInt(i));

/** 10^n as a bigint for 0 <= n <= 80. */
export function pow10(n: number): bigint {
  const v = POW10[n];
  if (v === undefined) throw new RangeError(`pow10 out of range: ${n}`);
  return v;
}

const DECIMAL_RE = /^(-?)(0|[1-9][0-9]*)(?:\.([0-9]+))?$/;
const CANONICAL_RE = /^-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?$/;

/** Why a decimal string was refused. */
export type DecimalError = 'format' | 'precision' | 'negative';

/** Result of {@link parseDecimal}. */
export type ParsedDecimal = { ok: true; value: bigint } | { ok: false; error: DecimalError };

/**
 * Parses a plain decimal string into an integer at `decimals` places. Accepts `"1"`, `"1.50"`,
 * `"0.000001"`; refuses exponents, signs other than a leading `-` (and that only when
 * `allowNegative`), spaces, `.5`, `1.` and anything with more than `decimals` fraction digits.
 */
export function parseDecimal(text: string, decimals: number, allowNegative = false): ParsedDecimal {
  if (text.length > 100) return { ok: false, error: 'format' };
  const m = DECIMAL_RE.exec(text);
  if (m === null) return { ok: false, error: 'format' };
  const negative = m[1] === '-';
  if (negative && !allowNegative) return { ok: false, error: 'negative' };
  const fraction = m[3] ?? '';
  // Trailing zeros never change the value, so "1.50" at 1 decimal is fine.
  const significant = fraction.replace(/0+$/, '');
  if (significant.length > decimals) return { ok: false, error: 'precision' };
  const value =
    BigInt(m[2] as string) * pow10(decimals) +
    (significant.length === 0 ? 0n : BigInt(significant) * pow10(decimals - significant.length));
  return { ok: true, value: negative ? -value : value };
}

/** Whether `text` is already in canonical form (no exponent, no trailing zeros, "0" for zero). */
export function isCanonicalDecimal(text: string): boolean {
  return CANONICAL_RE.test(text) && text !== '-0';
}

/**
 * Formats an integer at `decimals` places as a canonical decimal string. One digit string cut at
 * the point (no bigint division: summaries and wire reports format many values per message).
 */
export function formatDecimal(value: bigint, decimals: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString();
  let out: string;
  if (decimals === 0) {
    out = digits;
  } else {
    const cut = digits.length - decimals;
    const whole = cut > 0 ? digits.slice(0, cut) : '0';
    const frac = cut > 0 ? digits.slice(cut) : digits.padStart(decimals, '0');
    let end = frac.length;
    while (end > 0 && frac.charCodeAt(end - 1) === 48) end--; // trailing '0's
    out = end === 0 ? whole : `${whole}.${frac.slice(0, end)}`;
  }
  return negative ? `-${out}` : out;
}

/** Formats a price (18 decimals). */
export function formatPrice(value: bigint): string {
  return formatDecimal(value, PRICE_DECIMALS);
}

/** Formats a collateral amount (6 decimals). */
export function formatCollateral(value: bigint): string {
  return formatDecimal(value, COLLATERAL_DECIMALS);
}
