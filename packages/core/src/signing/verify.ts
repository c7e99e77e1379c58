/**
 * Verification of a signed request (research 7.4, reliability 2.8): the cheap checks first
 * (hex, discriminator, length, canonical words, flag bits), then the signature form, then one
 * recovery, then the signer against the struct's account or owner. Nonces, deadlines and time
 * are checked by the engine with the command's time, not here.
 *
 * @module
 */

import type { OrderRequest } from '../engine/commands.js';
import { type Rejection, reject } from '../errors.js';
import {
  authenticateMessage,
  personalMessageHash,
  type SigningDomains,
  typedDataDigest,
} from './eip712.js';
import { bytesToHex0x } from './hex.js';
import {
  nobleVerifier,
  type ParsedSignature,
  parseSignature,
  type SignatureVerifier,
} from './signature.js';
import { type DecodedStruct, decodePayload, structHash } from './structs.js';

/** The signature object of request bodies and WebSocket messages. */
export interface SignatureObject {
  readonly sig: string;
  readonly payload: string;
}

/** A request whose signature checked out. */
export interface VerifiedRequest {
  readonly struct: DecodedStruct;
  /** Lowercase address that signed, equal to the struct's account/owner. */
  readonly signer: string;
  readonly signature: ParsedSignature;
  readonly digest: Uint8Array;
}

/** Result of {@link verifySignedPayload}. */
export type VerifyResult = { ok: true; value: VerifiedRequest } | { ok: false; error: Rejection };

/** Whether a value looks like `{ sig: string, payload: string }`. */
export function isSignatureObject(value: unknown): value is SignatureObject {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const v = value as Record<string, unknown>;
  return typeof v.sig === 'string' && typeof v.payload === 'string';
}

/** The digest a struct's signature covers. */
export function digestOf(domains: SigningDomains, struct: DecodedStruct): Uint8Array {
  const d = struct.def.domain;
  if (d === 'personal') {
    return personalMessageHash(
      authenticateMessage(struct.values.account as string, struct.values.nonce as bigint),
    );
  }
  return typedDataDigest(
    d === 'token' ? domains.tokenSeparator : domains.vaultSeparator,
    structHash(struct),
  );
}

/**
 * Verifies `signature` for one of the `allowed` discriminators. Failures: 4000 for the payload
 * (malformed, wrong struct for this endpoint), 4001 for the signature (form, recovery, signer).
 */
export function verifySignedPayload(
  domains: SigningDomains,
  signature: unknown,
  allowed: readonly number[],
  verifier: SignatureVerifier = nobleVerifier,
): VerifyResult {
  if (!isSignatureObject(signature)) {
    return {
      ok: false,
      error: reject(
        'INVALID_REQUEST',
        'signature must be an object { sig, payload } of hex strings',
      ),
    };
  }
  const decoded = decodePayload(signature.payload, allowed);
  if (!decoded.ok) return decoded;
  return verifyDecoded(domains, decoded.struct, signature.sig, verifier);
}

/** Checks the signature of an already decoded struct. */
export function verifyDecoded(
  domains: SigningDomains,
  struct: DecodedStruct,
  sigHex: unknown,
  verifier: SignatureVerifier = nobleVerifier,
): VerifyResult {
  const parsed = parseSignature(sigHex);
  if (!parsed.ok) return parsed;
  const digest = digestOf(domains, struct);
  const claimed = (struct.values.account ?? struct.values.owner) as string;
  const signer = verifier.recoverAddress(digest, parsed.signature);
  if (signer === null) {
    return {
      ok: false,
      error: reject(
        'INVALID_SIGNATURE',
        `signature does not recover a key (digest ${bytesToHex0x(digest)})`,
      ),
    };
  }
  if (signer !== claimed) {
    return {
      ok: false,
      error: reject(
        'INVALID_SIGNATURE',
        `signer ${signer} does not match ${struct.values.account === undefined ? 'owner' : 'account'} ${claimed} (${struct.def.name} digest ${bytesToHex0x(digest)}: check the domain, chain id and field values)`,
      ),
    };
  }
  return { ok: true, value: { struct, signer, signature: parsed.signature, digest } };
}

const ZERO16 = `0x${'0'.repeat(32)}`;

/** A bytes16 client id, `null` for zero. */
export function cloidOf(value: unknown): string | null {
  return typeof value === 'string' && value !== ZERO16 ? value : null;
}

function small(value: unknown): number {
  const v = value as bigint;
  return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : Number.MAX_SAFE_INTEGER;
}

/** The engine's order request from a verified Order struct. */
export function orderRequestOf(struct: DecodedStruct): OrderRequest {
  const v = struct.values;
  return {
    market: small(v.market),
    isBuy: v.isBuy as boolean,
    orderType: small(v.orderType),
    timeInForce: small(v.timeInForce),
    price: v.price as bigint,
    triggerPrice: v.triggerPrice as bigint,
    quantity: v.quantity as bigint,
    flags: small(v.flags),
    expiry: v.expiry as bigint,
    cloid: cloidOf(v.cloid),
    parentCloid: cloidOf(v.parentCloid),
  };
}

/** Number view of a small integer field (market ids, leverage, flags). */
export function smallOf(value: unknown): number {
  return small(value);
}
