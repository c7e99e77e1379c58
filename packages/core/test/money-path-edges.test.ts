/**
 * Edges of the authorisation and money-movement paths that a mutation pass found unpinned:
 * nonces are per wallet, referral `x-nonce` values live apart from wallet nonces, the 422 rules
 * keep the spec's order when several hold at once, invite codes are at most 7 characters, a
 * settlement names the kind of what it settles, and a cross target is market 0. Each test names
 * the one-token change to the source that it kills.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { EngineEvent, Outcome } from '../src/index.js';
import { BTC_SETTINGS, TestVenue, usd, wallet } from '../src/testing/index.js';

const A = wallet(0xa7);
const B = wallet(0xb7);
const OWNER = wallet(0x0f);

const outcome = (events: readonly EngineEvent[]): Outcome =>
  events.find((e): e is Outcome => e.type === 'outcome')!;
const refusal = (o: Outcome): string => (o.ok ? 'ok' : (o.referralError ?? o.message));

let v: TestVenue;
let n = 0;
beforeEach(() => {
  v = new TestVenue({ checkPurity: true });
  v.list(BTC_SETTINGS);
  v.oracle({ 'BTC-PERP': '50000' });
});

function mint(
  code: string,
  kind: 'system' | 'attributed' = 'system',
  maxUses = 10,
  owner?: string,
) {
  v.expectOk(
    v.run({ type: 'createReferralCode', code, kind, maxUses, ...(owner ? { owner } : {}) }),
  );
}

function apply(w: string, code: string, nonce = `nonce-${++n}-xyz`): Outcome {
  return outcome(v.run({ type: 'applyReferral', wallet: w, code, nonce, timestamp: v.time + 1 }));
}

const auth = (nonce: bigint) => ({ nonce, deadline: BigInt(Math.floor(v.time / 1000) + 60) });

describe('wallet nonces', () => {
  // Mutant: nonceKey without the wallet (`|${nonce}`): one wallet's nonce blocked every other's.
  it('are per wallet: two wallets may sign with the same millisecond nonce', () => {
    mint('GOOD');
    apply(A, 'GOOD');
    apply(B, 'GOOD');
    v.open(A);
    v.open(B);
    v.fund(A, '1000');
    v.fund(B, '1000');
    const nonce = BigInt(v.time);
    const withdraw = (w: string) =>
      outcome(
        v.run({
          type: 'withdraw',
          account: w,
          amount: usd('1'),
          target: { mode: 'Cross', market: 0 },
          auth: auth(nonce),
        }),
      );
    expect(withdraw(A).ok).toBe(true);
    expect(withdraw(B).ok).toBe(true);
    expect(refusal(withdraw(A))).toMatch(/^INVALID_NONCE: replayed/);
    // And for authenticate, whose nonce is the same kind of wallet nonce.
    const authenticate = (w: string) =>
      outcome(v.run({ type: 'authenticate', account: w, nonce: nonce + 1n }));
    expect(authenticate(A).ok).toBe(true);
    expect(authenticate(B).ok).toBe(true);
  });

  // Mutant: referral nonces keyed like wallet nonces (no `r:` prefix). Clients often use
  // Date.now() for both, and then the one spent the other.
  it('and referral x-nonce values do not spend each other, even when both are the same digits', () => {
    mint('GOOD');
    const digits = BigInt(v.time + 1);
    expect(apply(A, 'GOOD', String(digits)).ok).toBe(true);
    const o = outcome(v.run({ type: 'authenticate', account: A, nonce: digits }));
    expect(o.ok).toBe(true);
    // The other way round: a wallet nonce first, then the same digits as an x-nonce.
    const later = BigInt(v.time + 1);
    const gated = outcome(v.run({ type: 'authenticate', account: B, nonce: later }));
    expect(gated.ok ? 0 : gated.code).toBe(4015);
    expect(apply(B, 'GOOD', String(later)).ok).toBe(true);
  });
});

describe('the invite gate on every signed margin write', () => {
  // Mutants: withdraw, transferMargin or updateLeverage admitted without the gate. Only deposit
  // was pinned; the others then answered 4100 or Submitted instead of USER_NOT_INVITED.
  it('refuses withdraw, transfer and leverage of an uninvited wallet with 4015, nonce spent', () => {
    const commands = [
      {
        type: 'withdraw' as const,
        account: A,
        amount: usd('1'),
        target: { mode: 'Cross' as const, market: 0 },
      },
      {
        type: 'transferMargin' as const,
        account: A,
        amount: usd('1'),
        market: 1,
        direction: 'isolatedToCross' as const,
      },
      {
        type: 'updateLeverage' as const,
        account: A,
        market: 1,
        mode: 'Cross' as const,
        leverage: 500,
      },
    ];
    for (const cmd of commands) {
      const nonce = BigInt(v.time);
      const o = outcome(v.run({ ...cmd, auth: auth(nonce) }));
      expect(o.ok ? 0 : o.code, cmd.type).toBe(4015);
      expect(o.ok ? '' : o.message).toMatch(/^USER_NOT_INVITED: /);
      expect(o.ok ? null : o.nonceConsumed).toBe(true);
      expect(o.ok ? null : o.commandId).toBeUndefined();
      expect(v.state.accounts.has(A)).toBe(false);
      expect(v.state.nonces.has(`${A}|${nonce}`)).toBe(true);
    }
  });
});

describe('referral rules when several hold at once', () => {
  // Mutant: CODE_EXHAUSTED checked before CODE_REVOKED.
  it('a revoked code that is also used up is CODE_REVOKED', () => {
    mint('ONCE', 'system', 1);
    expect(apply(B, 'ONCE').ok).toBe(true);
    v.expectOk(v.run({ type: 'revokeReferralCode', code: 'ONCE' }));
    expect(refusal(apply(A, 'ONCE'))).toBe('CODE_REVOKED');
  });

  // Mutant: SELF_REFERRAL checked before CODE_EXHAUSTED (or before CODE_REVOKED).
  it('the owner applying their own used-up or revoked code gets CODE_EXHAUSTED or CODE_REVOKED', () => {
    mint('MINE', 'attributed', 1, OWNER);
    expect(apply(A, 'MINE').ok).toBe(true);
    expect(refusal(apply(OWNER, 'MINE'))).toBe('CODE_EXHAUSTED');
    mint('GONE', 'attributed', 5, OWNER);
    v.expectOk(v.run({ type: 'revokeReferralCode', code: 'GONE' }));
    expect(refusal(apply(OWNER, 'GONE'))).toBe('CODE_REVOKED');
    // Each of those refusals consumed its nonce and granted nothing.
    expect(v.state.referrals.has(OWNER)).toBe(false);
    expect(v.state.referralCodes.get('GONE')!.uses).toBe(0);
  });
});

describe('invite code length', () => {
  // Mutant: REFERRAL_CODE_RE {1,8}.
  it('is at most 7 characters, for the operator and for an application', () => {
    const created = outcome(
      v.run({ type: 'createReferralCode', code: 'ABCDEFGH', kind: 'system', maxUses: 1 }),
    );
    expect(refusal(created)).toBe('INVALID_REQUEST: code must match [A-Z0-9-]{1,7}');
    expect(v.state.referralCodes.size).toBe(0);
    mint('ABCDEFG');
    const before = v.state;
    const o = apply(A, 'ABCDEFGH');
    expect(o.ok ? 0 : o.code).toBe(4000);
    expect(o.ok ? null : o.nonceConsumed).toBe(false);
    expect(v.state).toBe(before);
    expect(apply(A, 'ABCDEFG').ok).toBe(true);
  });
});

describe('settlements and targets', () => {
  beforeEach(() => {
    mint('GOOD');
    apply(A, 'GOOD');
    v.open(A);
    v.fund(A, '1000');
  });

  // Mutant: settle without comparing the pending kind. A successful settleDeposit of a pending
  // withdrawal would then credit the amount back instead of paying it out.
  it('refuses a settlement of the other kind and leaves the pending command as it was', () => {
    const w = outcome(
      v.run({
        type: 'withdraw',
        account: A,
        amount: usd('400'),
        target: { mode: 'Cross', market: 0 },
      }),
    );
    const id = w.ok && w.kind === 'command' ? w.commandId : -1;
    expect(v.state.accounts.get(A)!.crossCash).toBe(usd('600'));
    const before = v.state;
    const wrong = outcome(v.run({ type: 'settleDeposit', commandId: id, success: true }));
    expect(refusal(wrong)).toBe(`INVALID_REQUEST: no pending deposit with command id ${id}`);
    expect(v.state).toBe(before);
    expect(v.state.accounts.get(A)!.crossCash).toBe(usd('600'));
    // The right settlement still completes it.
    v.expectOk(v.run({ type: 'settleWithdrawal', commandId: id, success: true }));
    expect(v.state.pending.size).toBe(0);
    expect(v.state.accounts.get(A)!.crossCash).toBe(usd('600'));
  });

  // Mutant: a Cross target accepted with any market.
  it('refuses a cross target with a market other than 0, before admission (nothing consumed)', () => {
    const before = v.state;
    for (const type of ['deposit', 'withdraw'] as const) {
      const o = outcome(
        v.run({
          type,
          account: A,
          amount: usd('1'),
          target: { mode: 'Cross', market: 1 },
          auth: auth(BigInt(v.time)),
        }),
      );
      expect(refusal(o)).toBe('INVALID_REQUEST: cross margin has market 0');
      expect(o.ok ? null : o.nonceConsumed).toBe(false);
    }
    expect(v.state).toBe(before);
  });

  // Mutant: deposit's `amount <= 0n` as `< 0n`: a zero deposit was Submitted and went to the chain.
  it('refuses a zero amount on every money path before admission (nothing consumed)', () => {
    const before = v.state;
    const cross = { mode: 'Cross' as const, market: 0 };
    for (const cmd of [
      { type: 'deposit' as const, account: A, amount: 0n, target: cross },
      { type: 'withdraw' as const, account: A, amount: 0n, target: cross },
      {
        type: 'transferMargin' as const,
        account: A,
        amount: 0n,
        market: 1,
        direction: 'crossToIsolated' as const,
      },
    ]) {
      const o = outcome(v.run({ ...cmd, auth: auth(BigInt(v.time)) }));
      expect(refusal(o), cmd.type).toBe('INVALID_REQUEST: amount must be positive');
      expect(o.ok ? null : o.nonceConsumed).toBe(false);
    }
    expect(v.state).toBe(before);
  });
});
