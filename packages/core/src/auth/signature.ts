/**
 * ECDSA signatures as Ethereum wallets send them (research 4.4-4.5, reliability 2.1): exactly
 * 65 bytes `r || s || v`, `v` in {27, 28, 0, 1}, `r` and `s` in [1, n-1], low `s` only. Every
 * other form is 4001. Recovery sits behind {@link SignatureVerifier} so a native backend can
 * replace the pure-JavaScript one with identical results.
 *
 * @module
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { reject } from '../errors.js';
import { bigintOf, hexOf, parseHex } from './hex.js';
import type { AuthResult } from './structs.js';

/** The secp256k1 group order n. */
export const SECP256K1_N: bigint = secp256k1.Point.CURVE().n;
/** The largest low `s`, n / 2 rounded down; any larger `s` is refused. */
export const SECP256K1_HALF_N: bigint = SECP256K1_N >> 1n;

/** A canonical signature: `r`, low `s`, and the recovery bit (y parity). */
export interface ParsedSignature {
  readonly r: bigint;
  readonly s: bigint;
  /** 0 for v = 27 or 0, 1 for v = 28 or 1. */
  readonly yParity: 0 | 1;
}

/** Parses a hex signature: 65 bytes, v in {27, 28, 0, 1}, r and s in range, low s (else 4001). */
export function parseSignature(sigHex: unknown): AuthResult<ParsedSignature> {
  const fail = (detail: string): AuthResult<ParsedSignature> => ({
    ok: false,
    error: reject('INVALID_SIGNATURE', detail),
  });
  const bytes = parseHex(sigHex);
  if (typeof bytes === 'string') return fail(`signature ${bytes}`);
  if (bytes.length !== 65) {
    return fail(`signature must be 65 bytes (r || s || v), got ${bytes.length}`);
  }
  const v = bytes[64] as number;
  let yParity: 0 | 1;
  if (v === 27 || v === 0) yParity = 0;
  else if (v === 28 || v === 1) yParity = 1;
  else return fail(`signature v must be 27, 28, 0 or 1, got ${v}`);
  const r = bigintOf(bytes, 0, 32);
  const s = bigintOf(bytes, 32, 64);
  if (r === 0n || r >= SECP256K1_N) return fail('signature r is not in [1, n-1]');
  if (s === 0n || s >= SECP256K1_N) return fail('signature s is not in [1, n-1]');
  if (s > SECP256K1_HALF_N) return fail('high s: signature s must be at most n/2 (low-s form)');
  return { ok: true, value: { r, s, yParity } };
}

/** The 65-byte hex of a signature with `v` normalised to 27/28, as a relayer sends it on chain. */
export function signatureToHex(sig: ParsedSignature): string {
  return `0x${sig.r.toString(16).padStart(64, '0')}${sig.s.toString(16).padStart(64, '0')}${(27 + sig.yParity).toString(16)}`;
}

/** Recovers signers from digests: the swappable ECDSA backend. */
export interface SignatureVerifier {
  /**
   * Lowercase `0x` address of the key that signed `digest` (32 bytes) with `sig`. Throws when no
   * public key recovers (a forged `r`); callers turn that into a 4001.
   */
  recoverAddress(digest: Uint8Array, sig: ParsedSignature): string;
}

/** Ethereum address of an uncompressed public key: the last 20 bytes of keccak256(x || y). */
export function publicKeyToAddress(uncompressed: Uint8Array): string {
  if (uncompressed.length !== 65 || uncompressed[0] !== 4) {
    throw new RangeError('public key must be 65 bytes, uncompressed (0x04 prefix)');
  }
  return `0x${hexOf(keccak_256(uncompressed.subarray(1)), 12, 32)}`;
}

/** The pure-JavaScript verifier, @noble/curves secp256k1 (digest used as is: no prehash). */
export const nobleVerifier: SignatureVerifier = Object.freeze({
  recoverAddress(digest: Uint8Array, sig: ParsedSignature): string {
    // The Signature method takes the digest as the message representative (no sha256 prehash),
    // and the recovery bit explicitly, so the recid||r||s byte-order trap does not arise.
    const point = new secp256k1.Signature(sig.r, sig.s, sig.yParity).recoverPublicKey(digest);
    return publicKeyToAddress(point.toBytes(false));
  },
});
