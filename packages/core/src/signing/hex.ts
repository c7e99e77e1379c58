/**
 * Strict hex: `0x` followed by an even number of hex digits (either case), nothing else.
 *
 * @module
 */

const HEX_RE = /^0x(?:[0-9a-fA-F]{2})*$/;

/** Bytes of a strict hex string, or a description of what is wrong with it. */
export function hexToBytesStrict(value: unknown): Uint8Array | string {
  if (typeof value !== 'string') return 'must be a 0x hex string';
  if (value.length > 2 + 2 * 65536) return 'is too long';
  if (!value.startsWith('0x')) return 'must start with 0x';
  if ((value.length & 1) === 1) return 'has an odd number of hex digits';
  if (!HEX_RE.test(value)) return 'has a non-hex character';
  const out = new Uint8Array((value.length - 2) / 2);
  for (let i = 0; i < out.length; i++)
    out[i] = Number.parseInt(value.slice(2 + 2 * i, 4 + 2 * i), 16);
  return out;
}

/** Lowercase `0x` hex of bytes. */
export function bytesToHex0x(bytes: Uint8Array): string {
  let s = '0x';
  for (let i = 0; i < bytes.length; i++) s += (bytes[i] as number).toString(16).padStart(2, '0');
  return s;
}
