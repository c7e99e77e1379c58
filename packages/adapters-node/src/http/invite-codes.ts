/**
 * Invite codes the venue mints itself (the bootstrap code of a new data directory and
 * `POST /admin/referral-codes` without `code`). The platform is invite-gated (interface-spec), so
 * a code must not be guessable: it is drawn here from the operating system's CSPRNG and enters
 * the core inside the `createReferralCode` command, which keeps the core deterministic and
 * makes a journal replay give the same code.
 *
 * @module
 */
import { randomInt } from 'node:crypto';
import { REFERRAL_CODE_RE } from '@perp/core';
import type { CommandResult, EngineHost } from '../engine/host.js';

/** Characters of a drawn code: a subset of the `[A-Z0-9-]` the spec allows (no `-`). */
const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
/** Length of a drawn code: the spec's maximum, 36^7 (about 7.8 x 10^10) possible codes. */
export const INVITE_CODE_LENGTH = 7;
/** Draws before giving up on finding a free code (a collision is about 1 in 10^7 per draw). */
const MAX_DRAWS = 16;

/** A uniformly random 7-character code from the CSPRNG (`crypto.randomInt` has no modulo bias). */
export function randomInviteCode(): string {
  let code = '';
  for (let i = 0; i < INVITE_CODE_LENGTH; i++) code += ALPHABET[randomInt(ALPHABET.length)];
  return code;
}

/** The fields of a `createReferralCode` command other than its code. */
export interface NewInviteCode {
  readonly kind: 'system' | 'attributed';
  readonly owner?: string | undefined;
  readonly maxUses: number;
}

/**
 * Creates an invite code with a freshly drawn value. A value that is taken (already in the
 * state, or created by a command that ran between the check and this one) is drawn again; any
 * other refusal is returned as it is. `draw` is replaceable for tests.
 */
export async function createRandomInviteCode(
  host: EngineHost,
  fields: NewInviteCode,
  draw: () => string = randomInviteCode,
): Promise<CommandResult> {
  for (let attempt = 0; attempt < MAX_DRAWS; attempt++) {
    const code = draw();
    if (!REFERRAL_CODE_RE.test(code)) throw new Error(`drawn invite code ${code} is malformed`);
    if (host.state.referralCodes.has(code)) continue;
    const r = await host.submit({
      type: 'createReferralCode',
      code,
      kind: fields.kind,
      maxUses: fields.maxUses,
      ...(fields.owner === undefined ? {} : { owner: fields.owner }),
    });
    if (!r.outcome.ok && host.state.referralCodes.has(code)) continue;
    return r;
  }
  throw new Error(`no free invite code after ${MAX_DRAWS} draws`);
}
