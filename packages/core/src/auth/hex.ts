/**
 * Strict hex for signed input: `0x`, then an even number of hex digits (either case), nothing
 * else. Parsing never throws; it returns the bytes or says what is wrong, so the caller can turn
 * the reason into its own rejection.
 *
 * @module
 */

// Value of each char code as a hex digit, -1 when it is not one.
const DIGIT = new Int8Array(128).fill(-1);
for (let i = 0; i < 10; i++) DIGIT[48 + i] = i;
for (let i = 0; i < 6; i++) {
  DIGIT[65 + i] = 10 + i;
  DIGIT[97 + i] = 10 + i;
}

const BYTE_HEX: readonly string[] = Array.from({ length: 256 }, (_, i) =>
  i.toString(16).padStart(2, '0'),
);

/** Bytes of a strict `0x` hex string, or the reason it is not one (e.g. `has an odd number of hex digits`). */
export function parseHex(value: unknown): Uint8Array | string {
  if (typeof value !== 'string') return 'must be a 0x-prefixed hex string';
  if (value.length < 2 || value.charCodeAt(0) !== 48 || value.charCodeAt(1) !== 120)
    return 'must start with 0x';
  const digits = value.length - 2;
  if ((digits & 1) === 1) return 'has an odd number of hex digits';
  const out = new Uint8Array(digits >> 1);
  for (let i = 0, j = 2; i < out.length; i++, j += 2) {
    const hi = DIGIT[value.charCodeAt(j)] ?? -1;
    const lo = DIGIT[value.charCodeAt(j + 1)] ?? -1;
    if (hi < 0 || lo < 0) return `has a non-hex character at offset ${hi < 0 ? j : j + 1}`;
    out[i] = (hi << 4) | lo;
  }
  return out;
}

/** Lowercase hex of `bytes[start, end)` without a prefix. */
export function hexOf(bytes: Uint8Array, start = 0, end = bytes.length): string {
  let s = '';
  for (let i = start; i < end; i++) s += BYTE_HEX[bytes[i] as number];
  return s;
}

/** Lowercase `0x` hex of bytes. */
export function toHex(bytes: Uint8Array): string {
  return `0x${hexOf(bytes)}`;
}

/** Unsigned big-endian integer of `bytes[start, end)`. */
export function bigintOf(bytes: Uint8Array, start = 0, end = bytes.length): bigint {
  if (end <= start) return 0n;
  return BigInt(`0x${hexOf(bytes, start, end)}`);
}
