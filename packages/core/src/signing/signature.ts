/**
 * ECDSA signatures as Ethereum wallets send them (research 4.4-4.5, reliability 2.1): exactly 65
 * bytes `r || s || v`, `v` in {27, 28, 0, 1}, `r` and `s` in [1, n-1], low `s` only. Recovery
 * uses @noble/curves behind the small {@link SignatureVerifier} interface so a faster backend
 * (native libsecp256k1) can replace it with identical results.
 *
 * @module
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { type Rejection, reject } from '../errors.js';
import { bytesToHex0x, hexToBytesStrict } from './hex.js';

const N = secp256k1.Point.CURVE().n;
const HALF_N = N >> 1n;

/** A parsed, canonical signature. */
export interface ParsedSignature {
  readonly r: bigint;
  readonly s: bigint;
  /** Recovery id, 0 or 1. */
  readonly recovery: 0 | 1;
  /** The 65 bytes with v normalised to 27/28 (what a relayer sends on chain). */
  readonly normalized: string;
}

function bigintOf(bytes: Uint8Array): bigint {
  let v = 0n;
  for (let i = 0; i < bytes.length; i++) v = (v << 8n) | BigInt(bytes[i] as number);
  return v;
}

/** Result of {@link parseSignature}. */
export type ParseResult =
  | { ok: true; signature: ParsedSignature }
  | { ok: false; error: Rejection };

/** Parses a hex signature, refusing every non-canonical form with 4001 and the reason. */
export function parseSignature(sigHex: unknown): ParseResult {
  const fail = (detail: string): ParseResult => ({
    ok: false,
    error: reject('INVALID_SIGNATURE', detail),
  });
  const bytes = hexToBytesStrict(sigHex);
  if (typeof bytes === 'string') return fail(`signature ${bytes}`);
  if (bytes.length !== 65) return fail(`signature must be 65 bytes (r, s, v), got ${bytes.length}`);
  const v = bytes[64] as number;
  let recovery: 0 | 1;
  if (v === 27 || v === 0) recovery = 0;
  else if (v === 28 || v === 1) recovery = 1;
  else return fail(`signature v must be 27, 28, 0 or 1, got ${v}`);
  const r = bigintOf(bytes.subarray(0, 32));
  const s = bigintOf(bytes.subarray(32, 64));
  if (r < 1n || r >= N) return fail('signature r is out of range');
  if (s < 1n || s >= N) return fail('signature s is out of range');
  if (s > HALF_N) return fail('high s: use the low-s form (s <= n/2)');
  const normalized = new Uint8Array(bytes);
  normalized[64] = 27 + recovery;
  return { ok: true, signature: { r, s, recovery, normalized: bytesToHex0x(normalized) } };
}

/** Recovers the signer's address from a digest: a swappable backend. */
export interface SignatureVerifier {
  /** Lowercase `0x` address of the key that produced `signature` over `digest`, or null. */
  recoverAddress(digest: Uint8Array, signature: ParsedSignature): string | null;
}

/** Ethereum address of an uncompressed public key (65 bytes, 0x04 prefix). */
export function addressOfPublicKey(uncompressed: Uint8Array): string {
  return bytesToHex0x(keccak_256(uncompressed.subarray(1)).subarray(12));
}

/** The pure-JavaScript verifier (@noble/curves). */
export const nobleVerifier: SignatureVerifier = {
  recoverAddress(digest, signature) {
    try {
      const sig = new secp256k1.Signature(signature.r, signature.s, signature.recovery);
      return addressOfPublicKey(sig.recoverPublicKey(digest).toBytes(false));
    } catch {
      // A forged (r, s) may not recover at all.
      return null;
    }
  },
};
