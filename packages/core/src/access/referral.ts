/**
 * The invite gate and referral rules (interface-spec "App access gate", protocol.md section 3):
 * codes are `system` (minted by the operator) or `attributed` (owned by an affiliate), with a use
 * limit and revocation; a wallet gains app access by applying one code, once, forever
 * (first-touch, immutable attribution). `hasAppAccess` is the single source of truth.
 *
 * @module
 */

import {
  INVITE_CODE_PATTERN,
  LOWERCASE_ADDRESS_PATTERN,
  X_NONCE_PATTERN,
} from '../auth/canonical-json.js';
import type {
  ApplyReferralCommand,
  CreateReferralCodeCommand,
  RevokeReferralCodeCommand,
} from '../engine/commands.js';
import type { Ctx } from '../engine/context.js';
import type { EngineState, Referral, ReferralCode } from '../engine/types.js';
import { reject } from '../errors.js';
import { consumeNonce, NONCE_WINDOW_MS, nonceKeyText } from './admission.js';

/** Pattern of an invite code (interface-spec "Limits"); the signed body's own check. */
export const REFERRAL_CODE_RE = INVITE_CODE_PATTERN;
/** Pattern of the `x-nonce` header of `POST /referral/apply`; the signed body's own check. */
export const REFERRAL_NONCE_RE = X_NONCE_PATTERN;
const ADDRESS_RE = LOWERCASE_ADDRESS_PATTERN;

/** The 422 reasons of `POST /referral/apply`, in the order they are checked. */
export type ReferralError =
  | 'ALREADY_REFERRED'
  | 'CODE_NOT_FOUND'
  | 'CODE_REVOKED'
  | 'CODE_EXHAUSTED'
  | 'SELF_REFERRAL';

/** Whether a wallet may authenticate and use signed writes. */
export function hasAppAccess(state: EngineState, wallet: string): boolean {
  return state.referrals.has(wallet);
}

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ';
const SPACE = 36n ** 7n;
// Odd and not a multiple of 3, so coprime with 36^7: n -> n x K mod 36^7 is a bijection, and
// consecutive counters give codes that do not look sequential.
const SCRAMBLE = 48_271_911_587n;

/**
 * The `n`-th generated code: 7 characters, unique for n < 36^7, deterministic and therefore
 * predictable. It is only the fallback for a `createReferralCode` command without `code`, which
 * journals written before the adapters drew codes still hold (replaying them must give the same
 * codes). Adapters must draw new codes from a CSPRNG and pass them in the command: a code that
 * anyone can compute opens the invite gate.
 */
export function generatedCode(n: number): string {
  let x = (BigInt(n) * SCRAMBLE) % SPACE;
  let out = '';
  for (let i = 0; i < 7; i++) {
    out = ALPHABET[Number(x % 36n)] + out;
    x /= 36n;
  }
  return out;
}

/** Handles `createReferralCode` (operator). */
export function createReferralCode(ctx: Ctx, cmd: CreateReferralCodeCommand): void {
  if (cmd.kind !== 'system' && cmd.kind !== 'attributed') {
    const r = reject('INVALID_REQUEST', 'kind must be system or attributed');
    return ctx.fail(r.code, r.message);
  }
  if (cmd.kind === 'attributed' && (cmd.owner === undefined || !ADDRESS_RE.test(cmd.owner))) {
    const r = reject('INVALID_REQUEST', 'an attributed code needs a lowercase owner address');
    return ctx.fail(r.code, r.message);
  }
  if (cmd.kind === 'system' && cmd.owner !== undefined) {
    const r = reject('INVALID_REQUEST', 'a system code has no owner');
    return ctx.fail(r.code, r.message);
  }
  if (!Number.isSafeInteger(cmd.maxUses) || cmd.maxUses < 1) {
    const r = reject('INVALID_REQUEST', 'maxUses must be a positive integer');
    return ctx.fail(r.code, r.message);
  }
  let code = cmd.code;
  if (code === undefined) {
    // Old journals only (see generatedCode); new commands carry a random code.
    let n = ctx.state.referralCodes.size + 1;
    do code = generatedCode(n++);
    while (ctx.state.referralCodes.has(code));
  } else if (!REFERRAL_CODE_RE.test(code)) {
    const r = reject('INVALID_REQUEST', 'code must match [A-Z0-9-]{1,7}');
    return ctx.fail(r.code, r.message);
  } else if (ctx.state.referralCodes.has(code)) {
    const r = reject('INVALID_REQUEST', `code ${code} already exists`);
    return ctx.fail(r.code, r.message);
  }
  const record: ReferralCode = {
    code,
    kind: cmd.kind,
    owner: cmd.kind === 'attributed' ? (cmd.owner as string) : null,
    maxUses: cmd.maxUses,
    uses: 0,
    revoked: false,
    createdTime: ctx.time,
  };
  ctx.state.referralCodes = ctx.state.referralCodes.set(ctx.edit, code, record);
  ctx.emit({ type: 'outcome', ok: true, kind: 'referralCode', code: record });
}

/** Handles `revokeReferralCode` (operator). */
export function revokeReferralCode(ctx: Ctx, cmd: RevokeReferralCodeCommand): void {
  const record = ctx.state.referralCodes.get(cmd.code);
  if (record === undefined) {
    const r = reject('INVALID_REQUEST', `no code ${cmd.code}`);
    return ctx.fail(r.code, r.message);
  }
  const next = { ...record, revoked: true };
  ctx.state.referralCodes = ctx.state.referralCodes.set(ctx.edit, cmd.code, next);
  ctx.emit({ type: 'outcome', ok: true, kind: 'referralCode', code: next });
}

/** Referral `x-nonce` values live in their own key space of the nonce store. */
function referralNonceKey(wallet: string, nonce: string): string {
  return nonceKeyText(wallet, `r:${nonce}`);
}

/**
 * Whether `wallet` already used the referral nonce `nonce` (still inside the window). Reads
 * only: the referral route asks it before charging the wallet's rate budget, so a resent
 * application costs the wallet nothing.
 */
export function referralNonceUsed(state: EngineState, wallet: string, nonce: string): boolean {
  return state.nonces.has(referralNonceKey(wallet, nonce));
}

/**
 * Handles `applyReferral`. The adapter has checked the body shape, the headers and the
 * personal_sign signature; here: the timestamp window and the nonce (401 class, 4002), then the
 * 422 rules in the spec's order. A 422 consumes the nonce.
 */
export function applyReferral(ctx: Ctx, cmd: ApplyReferralCommand): void {
  if (!ADDRESS_RE.test(cmd.wallet) || !REFERRAL_CODE_RE.test(cmd.code)) {
    const r = reject('INVALID_REQUEST', 'walletAddress and code are required');
    return ctx.fail(r.code, r.message);
  }
  if (!REFERRAL_NONCE_RE.test(cmd.nonce)) {
    const r = reject('INVALID_NONCE', 'x-nonce must match [A-Za-z0-9_-]{8,128}');
    return ctx.fail(r.code, r.message);
  }
  const skew = cmd.timestamp - ctx.time;
  if (skew > NONCE_WINDOW_MS || skew < -NONCE_WINDOW_MS) {
    const r = reject(
      'INVALID_NONCE',
      `expired timestamp: ${cmd.timestamp} is more than 5 minutes from ${ctx.time}`,
    );
    return ctx.fail(r.code, r.message);
  }
  if (referralNonceUsed(ctx.state, cmd.wallet, cmd.nonce)) {
    const r = reject('INVALID_NONCE', `replayed nonce ${cmd.nonce}`);
    return ctx.fail(r.code, r.message);
  }
  consumeNonce(ctx, referralNonceKey(cmd.wallet, cmd.nonce));
  const refused = (reason: ReferralError): void => {
    const r = reject('INVALID_REQUEST', reason);
    ctx.fail(r.code, r.message, { nonceConsumed: true, referralError: reason });
  };
  if (ctx.state.referrals.has(cmd.wallet)) return refused('ALREADY_REFERRED');
  const record = ctx.state.referralCodes.get(cmd.code);
  if (record === undefined) return refused('CODE_NOT_FOUND');
  if (record.revoked) return refused('CODE_REVOKED');
  if (record.uses >= record.maxUses) return refused('CODE_EXHAUSTED');
  if (record.owner === cmd.wallet) return refused('SELF_REFERRAL');
  const referral: Referral = {
    wallet: cmd.wallet,
    code: record.code,
    kind: record.kind,
    referrer: record.owner,
    time: ctx.time,
  };
  ctx.state.referrals = ctx.state.referrals.set(ctx.edit, cmd.wallet, referral);
  ctx.state.referralCodes = ctx.state.referralCodes.set(ctx.edit, record.code, {
    ...record,
    uses: record.uses + 1,
  });
  ctx.emit({ type: 'outcome', ok: true, kind: 'referral', referral });
}
