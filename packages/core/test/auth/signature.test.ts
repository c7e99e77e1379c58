/**
 * Signature parsing (research 4.5, reliability 2.1): exactly 65 bytes, v in {27, 28, 0, 1},
 * r and s in [1, n-1], low s only; every other form is 4001 with the reason.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { describe, expect, it } from 'vitest';
import {
  nobleVerifier,
  parseSignature,
  publicKeyToAddress,
  SECP256K1_HALF_N,
  SECP256K1_N,
  signatureToHex,
} from '../../src/auth/index.js';
import { A, bytes } from './fixtures.js';

const SIG = A.structs.Order!.sig; // v = 0x1c
const R = SIG.slice(2, 66);
const S = SIG.slice(66, 130);
const word = (v: bigint) => v.toString(16).padStart(64, '0');
const withV = (v: number) => `0x${R}${S}${v.toString(16).padStart(2, '0')}`;

function refusal(sig: unknown): string {
  const r = parseSignature(sig);
  if (r.ok) throw new Error('expected a refusal');
  expect(r.error.code).toBe(4001);
  return r.error.message;
}

describe('parseSignature', () => {
  it('accepts the 65-byte form; v 27/28 and 0/1 give the same recovery bit', () => {
    const r28 = parseSignature(SIG);
    const r1 = parseSignature(withV(1));
    expect(r28).toEqual({
      ok: true,
      value: { r: BigInt(`0x${R}`), s: BigInt(`0x${S}`), yParity: 1 },
    });
    expect(r1).toEqual(r28);
    const r27 = parseSignature(withV(27));
    expect(r27.ok && r27.value.yParity).toBe(0);
    expect(parseSignature(withV(0))).toEqual(r27);
  });

  it('accepts upper-case hex digits', () => {
    expect(parseSignature(`0x${SIG.slice(2).toUpperCase()}`)).toEqual(parseSignature(SIG));
  });

  it('signatureToHex normalises v to 27/28 for relaying', () => {
    const r1 = parseSignature(withV(1));
    if (!r1.ok) throw new Error('ok expected');
    expect(signatureToHex(r1.value)).toBe(SIG);
  });

  it.each([
    ['the 64-byte compact form', `0x${R}${S}`, 'signature must be 65 bytes (r || s || v), got 64'],
    ['66 bytes', `${SIG}00`, 'signature must be 65 bytes (r || s || v), got 66'],
    ['an empty signature', '0x', 'signature must be 65 bytes (r || s || v), got 0'],
    ['v = 29', withV(29), 'signature v must be 27, 28, 0 or 1, got 29'],
    ['v = 37 (EIP-155 style)', withV(37), 'signature v must be 27, 28, 0 or 1, got 37'],
    ['v = 2 (recid with the overflow bit)', withV(2), 'signature v must be 27, 28, 0 or 1, got 2'],
    ['odd-length hex', `${SIG}0`, 'signature has an odd number of hex digits'],
    ['a non-hex digit', `0x${'g'}${SIG.slice(3)}`, 'signature has a non-hex character at offset 2'],
    ['no 0x prefix', SIG.slice(2), 'signature must start with 0x'],
    ['a non-string', 65, 'signature must be a 0x-prefixed hex string'],
    ['r = 0', `0x${word(0n)}${S}1c`, 'signature r is not in [1, n-1]'],
    ['r = n', `0x${word(SECP256K1_N)}${S}1c`, 'signature r is not in [1, n-1]'],
    ['s = 0', `0x${R}${word(0n)}1c`, 'signature s is not in [1, n-1]'],
    ['s = n', `0x${R}${word(SECP256K1_N)}1c`, 'signature s is not in [1, n-1]'],
  ])('refuses %s', (_, sig, message) => {
    expect(refusal(sig)).toBe(`INVALID_SIGNATURE: ${message}`);
  });

  it('refuses high s (s -> n - s with v flipped), which ecrecover and viem would accept', () => {
    const high = `0x${R}${word(SECP256K1_N - BigInt(`0x${S}`))}1b`;
    expect(refusal(high)).toBe(
      'INVALID_SIGNATURE: high s: signature s must be at most n/2 (low-s form)',
    );
  });

  it('the low-s boundary: s = n/2 passes, s = n/2 + 1 is high', () => {
    expect(parseSignature(`0x${R}${word(SECP256K1_HALF_N)}1b`).ok).toBe(true);
    expect(refusal(`0x${R}${word(SECP256K1_HALF_N + 1n)}1b`)).toContain('high s');
  });
});

describe('nobleVerifier', () => {
  it('recovers the Appendix A signer from the Order digest', () => {
    const p = parseSignature(SIG);
    if (!p.ok) throw new Error('ok expected');
    expect(nobleVerifier.recoverAddress(bytes(A.structs.Order!.digest), p.value)).toBe(
      A.signer.toLowerCase(),
    );
  });

  it('throws when r is not the x-coordinate of any point', () => {
    let r = 1n;
    for (;;) {
      try {
        secp256k1.Point.fromBytes(bytes(`0x02${word(r)}`));
        r++;
      } catch {
        break;
      }
    }
    expect(() =>
      nobleVerifier.recoverAddress(new Uint8Array(32).fill(1), { r, s: 1n, yParity: 0 }),
    ).toThrow();
  });

  it('publicKeyToAddress takes the 65-byte uncompressed key', () => {
    const pub = secp256k1.getPublicKey(bytes(A.privateKey), false);
    expect(publicKeyToAddress(pub)).toBe(A.signer.toLowerCase());
    expect(() => publicKeyToAddress(secp256k1.getPublicKey(bytes(A.privateKey), true))).toThrow(
      RangeError,
    );
    // 65 bytes are not enough: the first must be the uncompressed-point tag 0x04.
    const tagged = Uint8Array.from(pub);
    tagged[0] = 0x03;
    expect(() => publicKeyToAddress(tagged)).toThrow(RangeError);
  });
});
