/**
 * Verification of a signed payload, the hot path (research 7.4, reliability 2.8): the cheap
 * checks first (hex, discriminator, endpoint, length, canonical words, flag bits: 4000), then the
 * signature's form (4001), then one recovery, then the signer against the struct's account or
 * owner (4001). Permit uses the token domain, Authenticate personal_sign over the rebuilt text,
 * everything else the vault domain.
 *
 * Nonces, deadlines and time are not checked here: the engine does that with the command's time,
 * using {@link checkDeadline} and {@link checkPermit}.
 *
 * @module
 */
import { invariant, type Rejection, reject } from '../errors.js';
import { structHashOf, typedDataDigest } from './eip712.js';
import { parseHex, toHex } from './hex.js';
import type { SigningContext } from './network.js';
import { authenticateMessage, personalMessageHash } from './personal-sign.js';
import { type ParsedSignature, parseSignature, type SignatureVerifier } from './signature.js';
import {
  type AuthResult,
  type DecodedPayload,
  decodePayloadBytes,
  type ExpectedPayload,
  type PermitStruct,
  type StructDef,
  structDefOf,
} from './structs.js';

/** A payload whose signature checked out. */
export interface VerifiedPayload {
  readonly payload: DecodedPayload;
  /** Lowercase address that signed; equals the struct's account or owner. */
  readonly signer: string;
  /** EIP-712 hashStruct; null for Authenticate (personal_sign has none). */
  readonly structHash: Uint8Array | null;
  /** What was signed: the EIP-712 digest, or the EIP-191 hash for Authenticate. */
  readonly digest: Uint8Array;
  readonly signature: ParsedSignature;
}

/** The signature object of request bodies and WebSocket messages: `{ sig, payload }`. */
export interface SignatureObject {
  readonly sig: string;
  readonly payload: string;
}

/** Whether a value is a `{ sig: string, payload: string }` object. */
export function isSignatureObject(value: unknown): value is SignatureObject {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const v = value as { readonly sig?: unknown; readonly payload?: unknown };
  return typeof v.sig === 'string' && typeof v.payload === 'string';
}

/**
 * The signer of `digest`, or null when no public key recovers (a forged `r` need not be the
 * x-coordinate of any point): the one expensive step, kept apart so it can run elsewhere.
 */
export function recoverSigner(
  verifier: SignatureVerifier,
  digest: Uint8Array,
  sig: ParsedSignature,
): string | null {
  try {
    return verifier.recoverAddress(digest, sig);
  } catch {
    return null;
  }
}

/** What to check when an EIP-712 struct's signer does not match. */
const EIP712_HINT = 'check the domain, chain id, struct type and field values';
/** What to check when an `authenticate` personal_sign signer does not match. */
const AUTHENTICATE_HINT =
  'the signed text is personal_sign of "<lowercase account>:<nonce>", the nonce in decimal';

/**
 * Compares a recovered signer (null: recovery failed) with `claimed` (lowercase): 4001 when
 * recovery failed or the signer differs, naming the digest so a client can diff its own.
 */
export function matchSigner(
  recovered: string | null,
  digest: Uint8Array,
  claimed: string,
  claimedLabel: string,
  hint: string = EIP712_HINT,
): AuthResult<string> {
  if (recovered === null) {
    return {
      ok: false,
      error: reject(
        'INVALID_SIGNATURE',
        `signature does not recover a public key (digest ${toHex(digest)})`,
      ),
    };
  }
  if (recovered !== claimed) {
    return {
      ok: false,
      error: reject(
        'INVALID_SIGNATURE',
        `signer ${recovered} does not match ${claimedLabel} ${claimed} (server digest ${toHex(digest)}; ${hint})`,
      ),
    };
  }
  return { ok: true, value: recovered };
}

/**
 * Recovers the signer of `digest` and compares it with `claimed` (lowercase): 4001 when recovery
 * fails or the signer differs, naming the digest so a client can diff its own; `hint` says what
 * a client should compare (it differs between EIP-712 structs and personal_sign texts).
 */
export function recoverAndMatch(
  verifier: SignatureVerifier,
  digest: Uint8Array,
  sig: ParsedSignature,
  claimed: string,
  claimedLabel: string,
  hint: string = EIP712_HINT,
): AuthResult<string> {
  return matchSigner(recoverSigner(verifier, digest, sig), digest, claimed, claimedLabel, hint);
}

/** The digest a struct's signature covers, and its hashStruct (null for personal_sign). */
function digestOf(
  ctx: SigningContext,
  def: StructDef,
  payload: DecodedPayload,
  bytes: Uint8Array,
): { digest: Uint8Array; structHash: Uint8Array | null } {
  if (payload.kind === 'Authenticate') {
    const { account, nonce } = payload.struct;
    return { digest: personalMessageHash(authenticateMessage(account, nonce)), structHash: null };
  }
  const hash = structHashOf(def, bytes);
  const separator = def.scheme === 'token' ? ctx.tokenSeparator : ctx.vaultSeparator;
  return { digest: typedDataDigest(separator, hash), structHash: hash };
}

/** A payload that passed the cheap checks, with the bytes its struct hash is taken from. */
export interface ReceivedPayload {
  readonly payload: DecodedPayload;
  readonly bytes: Uint8Array;
}

/** Strict hex, then the payload checks of {@link decodePayloadBytes}; every failure is 4000. */
export function receivePayload(
  payloadHex: unknown,
  expected?: ExpectedPayload,
): AuthResult<ReceivedPayload> {
  const bytes = parseHex(payloadHex);
  if (typeof bytes === 'string') {
    return { ok: false, error: reject('INVALID_REQUEST', `payload ${bytes}`) };
  }
  const decoded = decodePayloadBytes(bytes, expected);
  if (!decoded.ok) return decoded;
  return { ok: true, value: { payload: decoded.value, bytes } };
}

/** The lowercase address a decoded payload names as its signer (its `account` or `owner`). */
export function claimedSigner(payload: DecodedPayload): string {
  const struct = payload.struct as unknown as {
    readonly account?: string;
    readonly owner?: string;
  };
  return (struct.account ?? struct.owner) as string;
}

/** A received payload with a well-formed signature: everything one recovery decides. */
export interface PendingSignature {
  readonly payload: DecodedPayload;
  /** What was signed: the EIP-712 digest, or the EIP-191 hash for Authenticate. */
  readonly digest: Uint8Array;
  /** EIP-712 hashStruct; null for Authenticate. */
  readonly structHash: Uint8Array | null;
  readonly signature: ParsedSignature;
  /** The struct's signer field (lowercase), which the recovered signer must equal. */
  readonly claimed: string;
  readonly claimedField: 'account' | 'owner';
}

/**
 * Checks a signature's form (4001) and computes the digest of a received payload: everything
 * before the one recovery. {@link settleSignature} finishes with the recovered signer.
 */
export function prepareSignature(
  ctx: SigningContext,
  received: ReceivedPayload,
  sigHex: unknown,
): AuthResult<PendingSignature> {
  const sig = parseSignature(sigHex);
  if (!sig.ok) return sig;
  const { payload, bytes } = received;
  const def = structDefOf(bytes[0] as number) as StructDef;
  const { digest, structHash } = digestOf(ctx, def, payload, bytes);
  return {
    ok: true,
    value: {
      payload,
      digest,
      structHash,
      signature: sig.value,
      claimed: claimedSigner(payload),
      claimedField: def.signerField,
    },
  };
}

/** Finishes a pending check with the recovered signer (null: no key recovers): 4001 or verified. */
export function settleSignature(
  pending: PendingSignature,
  recovered: string | null,
): AuthResult<VerifiedPayload> {
  const match = matchSigner(
    recovered,
    pending.digest,
    pending.claimed,
    pending.claimedField,
    pending.payload.kind === 'Authenticate' ? AUTHENTICATE_HINT : EIP712_HINT,
  );
  if (!match.ok) return match;
  return {
    ok: true,
    value: {
      payload: pending.payload,
      signer: match.value,
      structHash: pending.structHash,
      digest: pending.digest,
      signature: pending.signature,
    },
  };
}

/**
 * Verifies a signature object `{sig, payload}` for one network: payload checks (4000, including a
 * discriminator this endpoint does not accept), then signature form, recovery and signer (4001).
 */
export function verifySignedPayload(
  ctx: SigningContext,
  sigHex: unknown,
  payloadHex: unknown,
  expected?: ExpectedPayload,
): AuthResult<VerifiedPayload> {
  const received = receivePayload(payloadHex, expected);
  if (!received.ok) return received;
  const pending = prepareSignature(ctx, received.value, sigHex);
  if (!pending.ok) return pending;
  const { digest, signature } = pending.value;
  return settleSignature(pending.value, recoverSigner(ctx.verifier, digest, signature));
}

/** The furthest a signed deadline may be ahead of the command's time: 1 hour. */
export const MAX_DEADLINE_AHEAD_SECONDS = 3600n;

function assertTime(nowMs: number): void {
  invariant(Number.isSafeInteger(nowMs) && nowMs >= 0, `time must be integer ms, got ${nowMs}`);
}

/**
 * Checks a signed deadline (seconds) against the command's time (ms): not in the future is 4002
 * `deadline passed`, more than one hour ahead is 4000; undefined when acceptable.
 */
export function checkDeadline(deadlineSeconds: bigint, nowMs: number): Rejection | undefined {
  assertTime(nowMs);
  const deadlineMs = deadlineSeconds * 1000n;
  const now = BigInt(nowMs);
  if (deadlineMs <= now) {
    return reject(
      'INVALID_NONCE',
      `deadline passed: ${deadlineSeconds} s is not after ${nowMs} ms`,
    );
  }
  if (deadlineMs > now + MAX_DEADLINE_AHEAD_SECONDS * 1000n) {
    return reject(
      'INVALID_REQUEST',
      `deadline too far in the future: ${deadlineSeconds} s is more than ${MAX_DEADLINE_AHEAD_SECONDS} s after ${nowMs} ms`,
    );
  }
  return undefined;
}

/** What a deposit's permit must satisfy. */
export interface PermitExpectations {
  /** The vault contract: the only acceptable spender. */
  readonly vault: string;
  /** The deposit amount (x 10^6); the permit's value must be at least this. */
  readonly amount: bigint;
  /** The token's current `nonces(owner)`. */
  readonly tokenNonce: bigint;
  /** The command's time in milliseconds. */
  readonly nowMs: number;
  /** The deposit's owner, when known: the permit's owner must equal it. */
  readonly owner?: string;
}

/**
 * Checks a verified permit against its deposit: owner, spender = vault, value >= amount, nonce =
 * current token nonce (4000 each), deadline in the future (4002); undefined when acceptable.
 */
export function checkPermit(
  permit: PermitStruct,
  expected: PermitExpectations,
): Rejection | undefined {
  assertTime(expected.nowMs);
  if (expected.owner !== undefined && permit.owner !== expected.owner.toLowerCase()) {
    return reject(
      'INVALID_REQUEST',
      `permit owner ${permit.owner} is not the deposit owner ${expected.owner.toLowerCase()}`,
    );
  }
  const vault = expected.vault.toLowerCase();
  if (permit.spender !== vault) {
    return reject('INVALID_REQUEST', `permit spender ${permit.spender} is not the vault ${vault}`);
  }
  if (permit.value < expected.amount) {
    return reject(
      'INVALID_REQUEST',
      `permit value ${permit.value} is less than the deposit amount ${expected.amount}`,
    );
  }
  if (permit.nonce !== expected.tokenNonce) {
    return reject(
      'INVALID_REQUEST',
      `permit nonce ${permit.nonce} is not the current token nonce ${expected.tokenNonce}`,
    );
  }
  return checkPermitDeadline(permit.deadline, expected.nowMs);
}

/**
 * A permit's deadline (seconds) against the command's time (ms): passed is 4002 `permit deadline
 * passed`, as for a request's own deadline; undefined while it is still ahead. (No upper bound:
 * the token, not the venue, decides how long a permit may live.)
 */
export function checkPermitDeadline(deadlineSeconds: bigint, nowMs: number): Rejection | undefined {
  if (deadlineSeconds * 1000n > BigInt(nowMs)) return undefined;
  return reject(
    'INVALID_NONCE',
    `permit deadline passed: ${deadlineSeconds} s is not after ${nowMs} ms`,
  );
}
