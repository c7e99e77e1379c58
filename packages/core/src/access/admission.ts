/**
 * Admission of a signed request inside the reducer: deadline and nonce window against the
 * command's time, the app-access gate, replay protection through the per-wallet nonce store,
 * then consumption of the nonce. The signature itself was verified by the adapter before
 * sequencing (`auth/`). A request that fails the deadline, window or replay check changes
 * nothing; an `authenticate` that passes them consumes its nonce even when the gate refuses it.
 *
 * @module
 */

import { checkDeadline, MAX_DEADLINE_AHEAD_SECONDS } from '../auth/verify.js';
import type { AuthenticateCommand, RequestAuth } from '../engine/commands.js';
import type { Ctx } from '../engine/context.js';
import type { EngineState } from '../engine/types.js';
import { type Rejection, reject } from '../errors.js';
import { ensureAccount, isAccountAddress } from '../margin/commands.js';
import { hasAppAccess } from './referral.js';

/** The nonce window: a nonce within +-5 minutes (inclusive) of the command time is fresh. */
export const NONCE_WINDOW_MS = 300_000;
/** A signed deadline may be at most this far ahead (the one rule: `checkDeadline`). */
export const MAX_DEADLINE_AHEAD_MS = Number(MAX_DEADLINE_AHEAD_SECONDS) * 1000;
/** A consumed nonce is forgotten this long after it arrived (it is out of the window by then). */
const NONCE_RETENTION_MS = 2 * NONCE_WINDOW_MS;

/** What kind of signed request is being admitted. */
export type RequestKind = 'order' | 'cancel' | 'margin' | 'authenticate';

/** Key of a consumed wallet nonce in the store. */
export function nonceKey(wallet: string, nonce: bigint): string {
  return `${wallet}|${nonce}`;
}

/** Key of a consumed nonce given as text (referral `x-nonce` values are strings). */
export function nonceKeyText(wallet: string, nonce: string): string {
  return `${wallet}|${nonce}`;
}

/** The `USER_NOT_INVITED` refusal, with the spec's parseable prefix. */
export function notInvited(wallet: string): { code: 4015; message: string } {
  return {
    code: 4015,
    message: `USER_NOT_INVITED: ${wallet} has no app access; apply an invite code with POST /referral/apply`,
  };
}

/**
 * Checks the freshness of a signed request and consumes its nonce. On failure emits the outcome
 * and returns false: a deadline or nonce failure changes nothing; a `gated` request without app
 * access (4015) has consumed its nonce. Unsigned commands (`auth` undefined: simulations, the
 * operator) pass.
 */
export function admitRequest(
  ctx: Ctx,
  wallet: string,
  auth: RequestAuth | undefined,
  _kind: RequestKind,
  gated = false,
): boolean {
  if (auth === undefined) return true;
  const stale = freshnessProblem(ctx.state, ctx.time, wallet, auth.nonce, auth.deadline);
  if (stale !== undefined) {
    ctx.fail(stale.code, stale.message);
    return false;
  }
  consumeNonce(ctx, nonceKey(wallet, auth.nonce));
  // The gate is a business refusal: it comes after the nonce is consumed, as for authenticate, so
  // a request refused for lack of access cannot be replayed once the wallet is invited.
  if (gated && !hasAppAccess(ctx.state, wallet)) {
    const r = notInvited(wallet);
    ctx.fail(r.code, r.message, { nonceConsumed: true });
    return false;
  }
  return true;
}

/**
 * The refusal a signed request's deadline (when it has one: `authenticate` has none) and nonce
 * get at `time` in `state`, or `undefined` when both are fresh. Reads only: the reducer's
 * admission uses it, and adapters ask it before charging a wallet's rate budget, so a stale or
 * replayed request (anyone holding an old signed message can resend it) costs the wallet
 * nothing. The engine checks again at the command's own time.
 */
export function freshnessProblem(
  state: EngineState,
  time: number,
  wallet: string,
  nonce: bigint,
  deadline?: bigint,
): Rejection | undefined {
  if (deadline !== undefined) {
    const late = checkDeadline(deadline, time);
    if (late !== undefined) return late;
  }
  const failure = nonceFailureAt(state, time, wallet, nonce);
  return failure === undefined ? undefined : reject('INVALID_NONCE', failure);
}

/** Why a nonce is not acceptable now, or `undefined` when it is fresh and unused. */
export function nonceFailure(ctx: Ctx, wallet: string, nonce: bigint): string | undefined {
  return nonceFailureAt(ctx.state, ctx.time, wallet, nonce);
}

function nonceFailureAt(
  state: EngineState,
  time: number,
  wallet: string,
  nonce: bigint,
): string | undefined {
  const now = BigInt(time);
  if (nonce < now - BigInt(NONCE_WINDOW_MS)) {
    return `too old: nonce ${nonce} is more than 5 minutes before ${time}`;
  }
  if (nonce > now + BigInt(NONCE_WINDOW_MS)) {
    return `too far in the future: nonce ${nonce} is more than 5 minutes after ${time}`;
  }
  if (state.nonces.has(nonceKey(wallet, nonce))) {
    return `replayed: nonce ${nonce} was already used by ${wallet}`;
  }
  return undefined;
}

/** Records a nonce key as used; it is pruned once it can no longer be inside the window. */
export function consumeNonce(ctx: Ctx, key: string): void {
  const s = ctx.state;
  s.nonces = s.nonces.set(ctx.edit, key, ctx.time);
  s.nonceLog = {
    head: s.nonceLog.head,
    tail: s.nonceLog.tail + 1,
    entries: s.nonceLog.entries.set(ctx.edit, s.nonceLog.tail, key),
  };
}

/** Forgets nonces that can no longer be replayed inside the window. Returns whether any went. */
export function pruneNonces(ctx: Ctx): boolean {
  const s = ctx.state;
  let { head } = s.nonceLog;
  const { tail } = s.nonceLog;
  if (head === tail) return false;
  let entries = s.nonceLog.entries;
  let nonces = s.nonces;
  while (head < tail) {
    const key = entries.get(head)!;
    const arrived = nonces.get(key);
    if (arrived !== undefined && arrived + NONCE_RETENTION_MS >= ctx.time) break;
    nonces = nonces.delete(ctx.edit, key);
    entries = entries.delete(ctx.edit, head);
    head++;
  }
  if (head === s.nonceLog.head) return false;
  s.nonces = nonces;
  s.nonceLog = { head, tail, entries };
  return true;
}

/**
 * Handles WebSocket `authenticate`: the nonce window and replay check, then the nonce is
 * consumed, then the app-access gate (4015), then the account is created on first use.
 *
 * The gate is a business refusal, so it comes after the nonce is consumed (protocol.md section 3:
 * a request whose signature and nonce pass consumes its nonce, whatever the business outcome).
 * Otherwise a message refused for lack of access could be replayed once the wallet is invited.
 */
export function authenticate(ctx: Ctx, cmd: AuthenticateCommand): void {
  // Bad input, as for openAccount and the margin commands: refused before any nonce is consumed.
  if (!isAccountAddress(cmd.account)) {
    const r = reject('INVALID_REQUEST', 'account must be a lowercase 0x address');
    return ctx.fail(r.code, r.message);
  }
  const failure = nonceFailure(ctx, cmd.account, cmd.nonce);
  if (failure !== undefined) {
    const r = reject('INVALID_NONCE', failure);
    return ctx.fail(r.code, r.message);
  }
  consumeNonce(ctx, nonceKey(cmd.account, cmd.nonce));
  if (!hasAppAccess(ctx.state, cmd.account)) {
    const r = notInvited(cmd.account);
    return ctx.fail(r.code, r.message, { nonceConsumed: true });
  }
  const created = ensureAccount(ctx, cmd.account);
  ctx.emit({ type: 'outcome', ok: true, kind: 'authenticated', account: cmd.account, created });
}
