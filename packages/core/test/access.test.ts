/**
 * Invite gate, referral rules, WebSocket authentication, the nonce store and rate accounting
 * (issue "Core authorisation": items 4, 5 and 6).
 */
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  type EngineEvent,
  generatedCode,
  hasAppAccess,
  type Outcome,
  RateLimiter,
  REFERRAL_CODE_RE,
  WALLET_LIMITS,
} from '../src/index.js';
import { BTC_SETTINGS, px, TestVenue, units, usd, wallet } from '../src/testing/index.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 300);
const A = wallet(0xa2);
const B = wallet(0xb2);
const OWNER = wallet(0x0e);

const outcome = (events: readonly EngineEvent[]): Outcome =>
  events.find((e): e is Outcome => e.type === 'outcome')!;

let v: TestVenue;
beforeEach(() => {
  v = new TestVenue({ checkPurity: true });
  v.list(BTC_SETTINGS);
});

function mint(
  code: string,
  kind: 'system' | 'attributed' = 'system',
  maxUses = 10,
  owner?: string,
): void {
  v.expectOk(
    v.run({ type: 'createReferralCode', code, kind, maxUses, ...(owner ? { owner } : {}) }),
  );
}

let nonceN = 0;
function apply(
  w: string,
  code: string,
  extra: { nonce?: string; timestamp?: number } = {},
): Outcome {
  return outcome(
    v.run({
      type: 'applyReferral',
      wallet: w,
      code,
      nonce: extra.nonce ?? `nonce-${++nonceN}-abc`,
      timestamp: extra.timestamp ?? v.time + 1,
    }),
  );
}

describe('referral application', () => {
  it('grants app access with the spec result shape (system code: no referrer)', () => {
    mint('WELCOME');
    expect(hasAppAccess(v.state, A)).toBe(false);
    const o = apply(A, 'WELCOME');
    expect(o.ok && o.kind === 'referral' ? o.referral : null).toMatchObject({
      wallet: A,
      code: 'WELCOME',
      kind: 'system',
      referrer: null,
    });
    expect(hasAppAccess(v.state, A)).toBe(true);
    expect(v.state.referralCodes.get('WELCOME')!.uses).toBe(1);
  });

  it('records an attributed referral with its referrer', () => {
    mint('AFF-1', 'attributed', 5, OWNER);
    const o = apply(A, 'AFF-1');
    expect(o.ok && o.kind === 'referral' ? o.referral.referrer : null).toBe(OWNER);
  });

  it('checks the 422 rules in the spec order, each consuming the nonce', () => {
    mint('GOOD');
    mint('OLD');
    v.run({ type: 'revokeReferralCode', code: 'OLD' });
    mint('ONCE', 'system', 1);
    mint('MINE', 'attributed', 5, OWNER);
    const refusal = (o: Outcome) => (o.ok ? 'ok' : o.referralError);
    expect(refusal(apply(A, 'NOPE'))).toBe('CODE_NOT_FOUND');
    expect(refusal(apply(A, 'OLD'))).toBe('CODE_REVOKED');
    expect(refusal(apply(B, 'ONCE'))).toBe('ok');
    expect(refusal(apply(A, 'ONCE'))).toBe('CODE_EXHAUSTED');
    expect(refusal(apply(OWNER, 'MINE'))).toBe('SELF_REFERRAL');
    expect(refusal(apply(A, 'GOOD'))).toBe('ok');
    // Already referred wins over every other rule, and the attribution stays.
    expect(refusal(apply(A, 'NOPE'))).toBe('ALREADY_REFERRED');
    expect(refusal(apply(A, 'MINE'))).toBe('ALREADY_REFERRED');
    expect(v.state.referrals.get(A)!.code).toBe('GOOD');
    const o = apply(A, 'NOPE');
    expect(o.ok ? false : o.nonceConsumed).toBe(true);
  });

  it('accepts a timestamp exactly 5 minutes off and refuses one a millisecond further (4002, no change)', () => {
    mint('GOOD', 'system', 10);
    v.advance(1_000_000);
    const before = v.state;
    const late = apply(A, 'GOOD', { timestamp: v.time + 1 - 300_001 });
    expect(late.ok ? 0 : late.code).toBe(4002);
    expect(late.ok ? '' : late.message).toMatch(/expired timestamp/);
    expect(v.state).toBe(before);
    expect(apply(A, 'GOOD', { timestamp: v.time + 1 - 300_000 }).ok).toBe(true);
    expect(apply(B, 'GOOD', { timestamp: v.time + 1 + 300_000 }).ok).toBe(true);
  });

  it('refuses a replayed nonce (4002) and a nonce outside [A-Za-z0-9_-]{8,128}', () => {
    mint('GOOD');
    expect(apply(A, 'GOOD', { nonce: 'same-nonce' }).ok).toBe(true);
    const replay = apply(A, 'GOOD', { nonce: 'same-nonce' });
    expect(replay.ok ? '' : replay.message).toMatch(/replayed/);
    for (const nonce of ['short77', 'x'.repeat(129), 'has space', 'dot.nonce']) {
      const o = apply(B, 'GOOD', { nonce });
      expect(o.ok ? 0 : o.code).toBe(4002);
    }
    expect(apply(B, 'GOOD', { nonce: 'x'.repeat(128) }).ok).toBe(true);
  });

  it('generates distinct codes of the spec pattern', () => {
    const seen = new Set<string>();
    for (let n = 1; n <= 5000; n++) {
      const c = generatedCode(n);
      expect(c).toMatch(REFERRAL_CODE_RE);
      seen.add(c);
    }
    expect(seen.size).toBe(5000);
    const o = outcome(v.run({ type: 'createReferralCode', kind: 'system', maxUses: 3 }));
    expect(o.ok && o.kind === 'referralCode' ? o.code.code : '').toMatch(/^[A-Z0-9]{7}$/);
  });

  // Found by mutation: none of these three refusals had a test.
  it('refuses a code that exists, a system code with an owner and a code of 0 uses', () => {
    mint('TAKEN');
    const before = v.state;
    const refusal = (cmd: Record<string, unknown>) => {
      const o = outcome(v.run({ type: 'createReferralCode', ...cmd } as never));
      return o.ok ? 'accepted' : o.message;
    };
    expect(refusal({ code: 'TAKEN', kind: 'system', maxUses: 5 })).toBe(
      'INVALID_REQUEST: code TAKEN already exists',
    );
    expect(refusal({ code: 'OWNED', kind: 'system', maxUses: 5, owner: OWNER })).toBe(
      'INVALID_REQUEST: a system code has no owner',
    );
    expect(refusal({ code: 'EMPTY', kind: 'system', maxUses: 0 })).toBe(
      'INVALID_REQUEST: maxUses must be a positive integer',
    );
    expect(v.state.referralCodes).toBe(before.referralCodes);
    expect(v.state.referralCodes.get('TAKEN')!.maxUses).toBe(10);
  });
});

describe('authentication and the gate', () => {
  beforeEach(() => mint('GOOD'));

  it('refuses an uninvited wallet with 4015 USER_NOT_INVITED and creates no account', () => {
    const before = v.state;
    const o = outcome(v.run({ type: 'authenticate', account: A, nonce: BigInt(v.time) }));
    expect(o.ok ? 0 : o.code).toBe(4015);
    expect(o.ok ? '' : o.message).toMatch(/^USER_NOT_INVITED:/);
    expect(v.state.accounts.has(A)).toBe(false);
    expect(v.state.accounts).toBe(before.accounts);
  });

  it('a refused-for-access authenticate consumes its nonce: it cannot be replayed once invited', () => {
    const n = BigInt(v.time);
    const gated = outcome(v.run({ type: 'authenticate', account: A, nonce: n }));
    expect(gated.ok ? 0 : gated.code).toBe(4015);
    expect(gated.ok ? null : gated.nonceConsumed).toBe(true);
    apply(A, 'GOOD');
    const replay = outcome(v.run({ type: 'authenticate', account: A, nonce: n }));
    expect(replay.ok ? 0 : replay.code).toBe(4002);
    expect(replay.ok ? '' : replay.message).toMatch(/replayed/);
    expect(v.state.accounts.has(A)).toBe(false);
    // A fresh nonce is accepted.
    expect(outcome(v.run({ type: 'authenticate', account: A, nonce: n + 1n })).ok).toBe(true);
  });

  it('a nonce refused by the window or as a replay is not consumed by the gate either', () => {
    const t = v.time + 10;
    const before = v.state;
    const old = outcome(
      v.run({ type: 'authenticate', account: A, nonce: BigInt(t - 300_001), time: t }),
    );
    expect(old.ok ? 0 : old.code).toBe(4002);
    expect(old.ok ? null : old.nonceConsumed).toBe(false);
    expect(v.state.nonces).toBe(before.nonces);
  });

  it('creates the account on the first authentication of an invited wallet', () => {
    apply(A, 'GOOD');
    const o = outcome(v.run({ type: 'authenticate', account: A, nonce: BigInt(v.time) }));
    expect(o.ok && o.kind === 'authenticated' ? o.created : null).toBe(true);
    expect(v.state.accounts.has(A)).toBe(true);
    const again = outcome(v.run({ type: 'authenticate', account: A, nonce: BigInt(v.time) }));
    expect(again.ok && again.kind === 'authenticated' ? again.created : null).toBe(false);
  });

  it('refuses a replayed authentication nonce and one 5 minutes + 1 ms old', () => {
    apply(A, 'GOOD');
    const n = BigInt(v.time);
    expect(outcome(v.run({ type: 'authenticate', account: A, nonce: n })).ok).toBe(true);
    const replay = outcome(v.run({ type: 'authenticate', account: A, nonce: n }));
    expect(replay.ok ? 0 : replay.code).toBe(4002);
    const t = v.time + 10;
    const old = outcome(
      v.run({ type: 'authenticate', account: A, nonce: BigInt(t - 300_001), time: t }),
    );
    expect(old.ok ? '' : old.message).toMatch(/too old/);
    expect(
      outcome(
        v.run({ type: 'authenticate', account: A, nonce: BigInt(t + 1 - 300_000), time: t + 1 }),
      ).ok,
    ).toBe(true);
  });

  it('gates signed margin writes: 4015 for an uninvited wallet, no account created, nonce spent', () => {
    const deposit = {
      type: 'deposit' as const,
      account: A,
      amount: usd('10'),
      target: { mode: 'Cross' as const, market: 0 },
      auth: { nonce: BigInt(v.time), deadline: BigInt(Math.floor(v.time / 1000) + 60) },
    };
    const o = outcome(v.run(deposit));
    expect(o.ok ? 0 : o.code).toBe(4015);
    expect(o.ok ? false : o.nonceConsumed).toBe(true);
    expect(v.state.accounts.has(A)).toBe(false);
    // Once invited, the refused request cannot be replayed (protocol.md section 3).
    mint('LATER');
    apply(A, 'LATER');
    const replay = outcome(v.run(deposit));
    expect(replay.ok ? '' : replay.message).toMatch(/^INVALID_NONCE: replayed/);
  });
});

it('a withdrawal or transfer of a wallet with no account is 4040: nonce spent, no account opened', () => {
  // protocol.md 4: "unknown account where one must exist: 404". A deposit or a leverage change
  // opens the account; taking margin out of one that does not exist cannot.
  mint('NOACCT');
  apply(B, 'NOACCT');
  const auth = (n: number) => ({
    nonce: BigInt(v.time + n),
    deadline: BigInt(Math.floor(v.time / 1000) + 60),
  });
  const commands = [
    {
      type: 'withdraw' as const,
      account: B,
      amount: usd('1'),
      target: { mode: 'Cross' as const, market: 0 },
      auth: auth(0),
    },
    {
      type: 'transferMargin' as const,
      account: B,
      amount: usd('1'),
      market: 1,
      direction: 'crossToIsolated' as const,
      auth: auth(1),
    },
  ];
  for (const command of commands) {
    const commandsBefore = v.state.counters;
    const o = outcome(v.run(command));
    expect(o.ok ? 0 : o.code).toBe(4040);
    expect(o.ok ? '' : o.message).toMatch(/^ACCOUNT_NOT_FOUND: no trading account for 0x/);
    expect(o.ok ? false : o.nonceConsumed).toBe(true);
    expect(o.ok ? 1 : o.commandId).toBeUndefined();
    expect(v.state.accounts.has(B)).toBe(false);
    expect(v.state.counters).toEqual(commandsBefore);
    const replay = outcome(v.run(command));
    expect(replay.ok ? '' : replay.message).toMatch(/^INVALID_NONCE: replayed/);
  }
});

describe('nonces of signed requests', () => {
  const auth = (nonce: number, deadlineSec?: number) => ({
    nonce: BigInt(nonce),
    deadline: BigInt(deadlineSec ?? Math.floor(v.time / 1000) + 60),
  });

  beforeEach(() => {
    mint('GOOD');
    apply(A, 'GOOD');
    v.open(A);
    v.fund(A, '100000');
    v.oracle({ 'BTC-PERP': '50000' });
  });

  it('consumes a nonce once signature and window pass, whatever the business outcome', () => {
    const n = v.time;
    const refused = outcome(
      v.place(A, 'BTC-PERP', { side: 'Buy', qty: '100', price: '50000' }, { auth: auth(n) }),
    );
    expect(refused.ok ? 0 : refused.code).toBe(4100);
    expect(refused.ok ? false : refused.nonceConsumed).toBe(true);
    const replay = outcome(
      v.place(A, 'BTC-PERP', { side: 'Buy', qty: '0.1', price: '50000' }, { auth: auth(n) }),
    );
    expect(replay.ok ? '' : replay.message).toMatch(/replayed/);
  });

  it('consumes nothing for a field error, a passed deadline or a deadline more than an hour ahead', () => {
    const n = v.time;
    const before = v.state;
    expect(
      outcome(v.place(A, 'BTC-PERP', { side: 'Buy', qty: '0', price: '50000' }, { auth: auth(n) }))
        .ok,
    ).toBe(false);
    const past = outcome(
      v.place(
        A,
        'BTC-PERP',
        { side: 'Buy', qty: '0.1', price: '50000' },
        { auth: auth(n, Math.floor(v.time / 1000) - 1) },
      ),
    );
    expect(past.ok ? '' : past.message).toMatch(/^INVALID_NONCE: deadline passed/);
    const far = outcome(
      v.place(
        A,
        'BTC-PERP',
        { side: 'Buy', qty: '0.1', price: '50000' },
        { auth: auth(n, Math.floor(v.time / 1000) + 3700) },
      ),
    );
    expect(far.ok ? 0 : far.code).toBe(4000);
    expect(v.state).toBe(before);
    expect(
      outcome(
        v.place(A, 'BTC-PERP', { side: 'Buy', qty: '0.1', price: '50000' }, { auth: auth(n) }),
      ).ok,
    ).toBe(true);
  });

  it("consumes the nonce of an amend refused for the order's state, so it cannot pass later", () => {
    const placed = outcome(
      v.place(A, 'BTC-PERP', {
        side: 'Buy',
        qty: '0.01',
        type: 'StopLimit',
        price: '51000',
        trigger: '51000',
      }),
    );
    const orderId = BigInt((placed as { order: { orderId: number } }).order.orderId);
    const amend = (nonce: number, triggerPrice: bigint) => ({
      type: 'replaceOrder' as const,
      account: A,
      market: 1,
      orderId,
      origCloid: null,
      price: px('51000'),
      triggerPrice,
      quantity: units('0.02', BTC_SETTINGS.quantityDecimals),
      cloid: null,
      auth: auth(nonce),
    });
    // A trigger order needs a trigger price: refused while it waits, after admission.
    const n = v.time;
    const refused = outcome(v.run(amend(n, 0n)));
    expect(refused.ok ? 0 : refused.code).toBe(4032);
    expect(refused.ok ? false : refused.nonceConsumed).toBe(true);
    // Once triggered, the same signed amend would be valid: it is a replay now.
    v.oracle({ 'BTC-PERP': '51000' });
    expect(v.state.orders.get(Number(orderId))?.ordStatus).not.toBe('Untriggered');
    const replay = outcome(v.run(amend(n, 0n)));
    expect(replay.ok ? '' : replay.message).toMatch(/replayed/);
    // Off the tick grid is the request's own fault: nothing consumed.
    const m = v.time + 1;
    const offGrid = outcome(v.run(amend(m, px('51000.3'))));
    expect(offGrid.ok ? null : offGrid.nonceConsumed).toBe(false);
    expect(v.state.nonces.has(`${A}|${m}`)).toBe(false);
  });

  it('consumes the nonce of a claim on an auction that has ended (a lost race)', () => {
    const n = v.time;
    const claim = {
      type: 'claimLiquidation' as const,
      account: A,
      auctionId: 7,
      quantity: units('0.01', BTC_SETTINGS.quantityDecimals),
      maxPrice: px('70000'),
      auth: auth(n),
    };
    const o = outcome(v.run(claim));
    expect(o.ok ? '' : o.message).toMatch(/no live liquidation auction 7/);
    expect(o.ok ? false : o.nonceConsumed).toBe(true);
    const again = outcome(v.run(claim));
    expect(again.ok ? '' : again.message).toMatch(/replayed/);
    // A claim of nothing is malformed whatever the auction: nothing consumed.
    const zero = outcome(v.run({ ...claim, quantity: 0n, auth: auth(n + 1) }));
    expect(zero.ok ? null : zero.nonceConsumed).toBe(false);
  });

  it('accepts any unused nonce in the window whatever the order of arrival, and prunes past it', () => {
    const t = v.time;
    for (const n of [t + 5, t - 100, t + 1, t - 299_000]) {
      expect(
        outcome(
          v.place(A, 'BTC-PERP', { side: 'Buy', qty: '0.001', price: '40000' }, { auth: auth(n) }),
        ).ok,
      ).toBe(true);
    }
    expect(v.state.nonces.size).toBeGreaterThanOrEqual(4);
    v.advance(700_000);
    expect(v.state.nonces.size).toBe(0);
    const stale = outcome(
      v.place(A, 'BTC-PERP', { side: 'Buy', qty: '0.001', price: '40000' }, { auth: auth(t + 5) }),
    );
    expect(stale.ok ? '' : stale.message).toMatch(/too old/);
  });
  // Found by mutation: each edge below could move by one unit and every test still passed.
  const buy = { side: 'Buy' as const, qty: '0.001', price: '40000' };
  const placeAt = (time: number, nonce: number, deadlineSec: number) =>
    outcome(v.place(A, 'BTC-PERP', buy, { time, auth: auth(nonce, deadlineSec) }));
  const message = (o: Outcome) => (o.ok ? '' : o.message);

  it('accepts a nonce exactly 5 minutes ahead and refuses one a millisecond further', () => {
    const t = v.time + 1;
    const deadline = Math.floor(t / 1000) + 60;
    expect(message(placeAt(t, t + 300_001, deadline))).toMatch(/too far in the future/);
    expect(placeAt(t, t + 300_000, deadline).ok).toBe(true);
  });

  it('remembers a nonce for as long as the window could accept it again, then calls it too old', () => {
    const t = v.time + 1;
    // A nonce 5 minutes ahead is inside the window until 10 minutes after it arrived.
    expect(placeAt(t, t + 300_000, Math.floor(t / 1000) + 60).ok).toBe(true);
    const last = t + 600_000;
    const deadline = Math.floor(last / 1000) + 60;
    expect(message(placeAt(last, t + 300_000, deadline))).toMatch(/replayed/);
    expect(message(placeAt(last + 1, t + 300_000, deadline))).toMatch(/too old/);
  });

  it('refuses a deadline equal to the command time and accepts one exactly an hour ahead', () => {
    // A whole second, so a deadline in seconds can equal the command time.
    const t = (Math.floor(v.time / 1000) + 1) * 1000;
    const now = t / 1000;
    expect(message(placeAt(t, t, now))).toMatch(/^INVALID_NONCE: deadline passed/);
    const far = placeAt(t, t, now + 3601);
    expect(far.ok ? 0 : far.code).toBe(4000);
    expect(placeAt(t, t, now + 3600).ok).toBe(true);
  });
});

describe('rate accounting', () => {
  it('admits at most 20 per rolling second with a correct retryAfterMs; refusals do not count', () => {
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 0, max: 120 }), { minLength: 1, maxLength: 300, size: 'max' }),
        (gaps) => {
          const limiter = new RateLimiter();
          const admitted: number[] = [];
          let t = 0;
          for (const g of gaps) {
            t += g;
            const d = limiter.admit('w', t, 'unsigned');
            if (d.ok) admitted.push(t);
            else {
              expect(d.code).toBe(4029);
              // Retrying exactly when told succeeds (unless something else arrives meanwhile).
              expect(admitted.filter((x) => x > t + d.retryAfterMs - 1000).length).toBeLessThan(20);
              expect(admitted.filter((x) => x > t + d.retryAfterMs - 1 - 1000).length).toBe(20);
            }
          }
          for (let i = 20; i < admitted.length; i++)
            expect(admitted[i]! - admitted[i - 20]!).toBeGreaterThanOrEqual(1000);
        },
      ),
      { numRuns: runs },
    );
  });

  it('enforces the sustained budget (3,000 per 5 minutes) and lets cancels go on to 6,000', () => {
    const limiter = new RateLimiter();
    let t = 0;
    let orders = 0;
    let refusedAt = -1;
    for (let i = 0; i < 4000; i++) {
      t += 60; // 16.7/s: under the per-second limit
      const d = limiter.admit('w', t, 'signed');
      if (d.ok) orders++;
      else if (refusedAt < 0) {
        refusedAt = i;
        expect(d.code).toBe(4035);
        break;
      }
    }
    expect(orders).toBe(3000);
    let cancels = 0;
    for (let i = 0; i < 3500; i++) {
      t += 60;
      if (limiter.admit('w', t, 'cancel').ok) cancels++;
    }
    // The window also ages: count what is inside it now.
    expect(limiter.sustainedUsed('w', t)).toBeLessThanOrEqual(6000);
    expect(cancels).toBeGreaterThan(0);
    expect(limiter.admit('w', t + 1, 'signed').ok).toBe(false);
  });

  it('agrees call for call with a naive model of both windows, retryAfterMs included', () => {
    // Small windows so the boundaries (an entry exactly one window old) come up often, and the
    // sustained ring (first capacity 64) grows after evictions have moved its head.
    const config = {
      perWindow: 6,
      windowMs: 10,
      sustained: 70,
      sustainedWindowMs: 400,
      cancelHeadroom: 2,
    } as const;
    type Call = 'signed' | 'cancel' | 'unsigned' | 'sustained-signed' | 'sustained-cancel';
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.integer({ min: 0, max: 4 }),
            fc.constantFrom<Call>(
              'signed',
              'cancel',
              'unsigned',
              'sustained-signed',
              'sustained-cancel',
            ),
          ),
          { minLength: 50, maxLength: 400, size: 'max' },
        ),
        (steps) => {
          const limiter = new RateLimiter(config);
          // The model keeps each window's admitted times in arrival order, dropping those one
          // window old or more (time is non-decreasing here).
          const recent: number[] = [];
          const sustained: number[] = [];
          const inside = (times: number[], t: number, windowMs: number): number[] => {
            while (times.length > 0 && (times[0] as number) <= t - windowMs) times.shift();
            return times;
          };
          const model = (t: number, call: Call) => {
            if (!call.startsWith('sustained-')) {
              const r = inside(recent, t, config.windowMs);
              if (r.length >= config.perWindow) {
                const first = r[r.length - config.perWindow] as number;
                return { ok: false, code: 4029, retryAfterMs: first + config.windowMs - t };
              }
            }
            if (call !== 'unsigned') {
              const b = inside(sustained, t, config.sustainedWindowMs);
              const limit = call.endsWith('cancel')
                ? config.sustained * config.cancelHeadroom
                : config.sustained;
              if (b.length >= limit) {
                const first = b[b.length - limit] as number;
                return {
                  ok: false,
                  code: 4035,
                  retryAfterMs: first + config.sustainedWindowMs - t,
                };
              }
              b.push(t);
            }
            if (!call.startsWith('sustained-')) recent.push(t);
            return { ok: true };
          };
          let t = 0;
          for (const [gap, call] of steps) {
            t += gap;
            const d =
              call === 'sustained-signed' || call === 'sustained-cancel'
                ? limiter.admitSustained('w', t, call === 'sustained-signed' ? 'signed' : 'cancel')
                : limiter.admit('w', t, call);
            const expected = model(t, call);
            expect(
              d.ok ? { ok: true } : { ok: false, code: d.code, retryAfterMs: d.retryAfterMs },
            ).toEqual(expected);
            expect(limiter.sustainedUsed('w', t)).toBe(
              inside(sustained, t, config.sustainedWindowMs).length,
            );
          }
        },
      ),
      { numRuns: Math.min(runs, 150), interruptAfterTimeLimit: 20_000 },
    );
  });

  it('the sustained window stays in order when its buffer grows after evictions', () => {
    const limiter = new RateLimiter({
      perWindow: 1000,
      windowMs: 1,
      sustained: 1000,
      sustainedWindowMs: 100,
      cancelHeadroom: 1,
    });
    for (let t = 0; t < 10; t++) expect(limiter.admit('w', t, 'signed').ok).toBe(true);
    // At 105 the six requests at 0..5 leave the window; 61 more overflow the first 64 slots.
    for (let i = 0; i < 61; i++) expect(limiter.admit('w', 105, 'signed').ok).toBe(true);
    expect(limiter.sustainedUsed('w', 105)).toBe(65);
    expect(limiter.sustainedUsed('w', 107)).toBe(63);
    expect(limiter.sustainedUsed('w', 109)).toBe(61);
    expect(limiter.sustainedUsed('w', 205)).toBe(0);
  });

  it('forgets idle keys by itself: memory follows the active keys, answers do not change', () => {
    // Keys are wallets and addresses, free to make; the venue never sweeps its wallet limiter.
    const limiter = new RateLimiter({ ...WALLET_LIMITS, sustained: 2 });
    for (let i = 0; i < 1_000; i++) expect(limiter.admit(`k${i}`, i, 'signed').ok).toBe(true);
    expect(limiter.admit('busy', 1_000, 'signed').ok).toBe(true);
    expect(limiter.admit('busy', 1_000, 'signed').ok).toBe(true);
    expect(limiter.size).toBe(1_001);
    // It sweeps once per span (5 minutes) of call time, keys idle for two spans.
    expect(limiter.admit('late', 300_500, 'unsigned').ok).toBe(true);
    expect(limiter.size).toBe(1_002);
    expect(limiter.admit('late', 600_000, 'unsigned').ok).toBe(true);
    expect(limiter.size).toBe(1_002);
    expect(limiter.admitSustained('later', 600_501, 'cancel').ok).toBe(true);
    expect(limiter.size).toBe(502);
    expect(limiter.admitSustained('later', 900_000, 'cancel').ok).toBe(true);
    expect(limiter.size).toBe(502);
    expect(limiter.admit('x', 900_501, 'unsigned').ok).toBe(true);
    expect(limiter.size).toBe(3);
    // A key that was swept answers as a fresh one; one that was kept still counts its entries.
    expect(limiter.admit('k0', 900_501, 'signed').ok).toBe(true);
    expect(limiter.admit('k0', 900_501, 'signed').ok).toBe(true);
    // `later` still holds its cancel of 900 000 (the one of 600 501 left the window).
    expect(limiter.admit('later', 900_501, 'signed').ok).toBe(true);
    expect(limiter.admit('later', 900_501, 'signed')).toMatchObject({ ok: false, code: 4035 });
  });

  it('a call stamped a little earlier than the sweep still counts the entries of its window', () => {
    const limiter = new RateLimiter({ ...WALLET_LIMITS, sustained: 1 });
    expect(limiter.admit('w', 0, 'signed').ok).toBe(true);
    // Another key's call sweeps at 301 000; w, last seen at 0, arrives stamped 299 000.
    expect(limiter.admit('v', 301_000, 'unsigned').ok).toBe(true);
    expect(limiter.admit('w', 299_000, 'signed')).toMatchObject({ ok: false, code: 4035 });
  });

  it('a retry exactly retryAfterMs later is admitted: an entry one window old has left it', () => {
    const limiter = new RateLimiter();
    for (let i = 0; i < 20; i++) expect(limiter.admit('w', 100, 'unsigned').ok).toBe(true);
    const refused = limiter.admit('w', 600, 'unsigned');
    expect(refused).toMatchObject({ ok: false, code: 4029, retryAfterMs: 500 });
    expect(limiter.admit('w', 1099, 'unsigned').ok).toBe(false);
    expect(limiter.admit('w', 1100, 'unsigned').ok).toBe(true);
  });

  it('retryAfterMs is whole milliseconds, rounded up, on a sub-millisecond clock', () => {
    // The service counts on performance.timeOrigin + performance.now(); the wait goes on the
    // wire (4029 retryAfterMs, the 429 message) and must be integer ms a client can wait out.
    const limiter = new RateLimiter({ ...WALLET_LIMITS, sustained: 20 });
    for (let i = 0; i < 20; i++) expect(limiter.admit('w', 100.25, 'signed').ok).toBe(true);
    const perSecond = limiter.admit('w', 600.5, 'unsigned');
    expect(perSecond).toMatchObject({ ok: false, code: 4029, retryAfterMs: 500 });
    expect(perSecond.ok || perSecond.message).toMatch(/retry in 500 ms$/);
    // Waiting the rounded figure is enough: the exact wait was 499.75 ms.
    expect(limiter.admit('w', 600.5 + 499.5, 'unsigned').ok).toBe(false);
    const sustained = limiter.admit('w', 1_100.5, 'signed');
    expect(sustained).toMatchObject({ ok: false, code: 4035, retryAfterMs: 299_000 });
    expect(limiter.admitSustained('w', 1_100.5, 'signed')).toMatchObject({
      ok: false,
      retryAfterMs: 299_000,
    });
    expect(limiter.admit('w', 600.5 + 500, 'unsigned').ok).toBe(true);
  });

  it('unsigned requests never spend the sustained budget; cancels have twice the room', () => {
    const limiter = new RateLimiter({ ...WALLET_LIMITS, sustained: 3 });
    for (let i = 0; i < 10; i++) expect(limiter.admit('w', i, 'unsigned').ok).toBe(true);
    expect(limiter.sustainedUsed('w', 10)).toBe(0);
    for (let i = 0; i < 3; i++) expect(limiter.admit('w', 10, 'signed').ok).toBe(true);
    expect(limiter.admit('w', 10, 'signed')).toMatchObject({ ok: false, code: 4035 });
    for (let i = 0; i < 3; i++) expect(limiter.admit('w', 10, 'cancel').ok).toBe(true);
    expect(limiter.admit('w', 10, 'cancel')).toMatchObject({ ok: false, code: 4035 });
    expect(limiter.admitSustained('w', 10, 'signed')).toMatchObject({ ok: false, code: 4035 });
    expect(limiter.admitSustained('v', 10, 'cancel').ok).toBe(true);
  });

  it("a call stamped earlier than the key's latest counts at that latest time", () => {
    const limiter = new RateLimiter({
      perWindow: 1000,
      windowMs: 1,
      sustained: 2,
      sustainedWindowMs: 100,
      cancelHeadroom: 2,
    });
    expect(limiter.admit('w', 50, 'cancel').ok).toBe(true);
    // Stamped 0 after 50 (a clock stepped back): it counts at 50, so it leaves the window with
    // the entry before it, not before it.
    expect(limiter.admit('w', 0, 'cancel').ok).toBe(true);
    expect(limiter.admit('w', 60, 'cancel').ok).toBe(true);
    // Third-newest of the budget is the late call: counted at 50, it frees the slot at 150.
    expect(limiter.admit('w', 105, 'signed')).toMatchObject({ ok: false, retryAfterMs: 45 });
    expect(limiter.sustainedUsed('w', 0)).toBe(3);
    expect(limiter.admit('w', 149, 'signed').ok).toBe(false);
    expect(limiter.admit('w', 150, 'signed').ok).toBe(true);
  });

  it('times that go back give the answers of the same calls at the running latest time', () => {
    const config = {
      perWindow: 5,
      windowMs: 10,
      sustained: 8,
      sustainedWindowMs: 60,
      cancelHeadroom: 2,
    } as const;
    const kinds = ['signed', 'cancel', 'unsigned', 'sustained-signed', 'sustained-cancel'] as const;
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: -15, max: 6 }), fc.constantFrom(...kinds)), {
          minLength: 20,
          maxLength: 300,
          size: 'max',
        }),
        (steps) => {
          const late = new RateLimiter(config);
          const ordered = new RateLimiter(config);
          const call = (l: RateLimiter, t: number, kind: (typeof kinds)[number]) =>
            kind === 'sustained-signed' || kind === 'sustained-cancel'
              ? l.admitSustained('w', t, kind === 'sustained-signed' ? 'signed' : 'cancel')
              : l.admit('w', t, kind);
          let clock = 1_000;
          let latest = Number.NEGATIVE_INFINITY;
          for (const [step, kind] of steps) {
            clock += step;
            latest = Math.max(latest, clock);
            const d = call(late, clock, kind);
            expect(d).toEqual(call(ordered, latest, kind));
            if (!d.ok) expect(d.retryAfterMs).toBeGreaterThan(0);
            expect(late.sustainedUsed('w', clock)).toBe(ordered.sustainedUsed('w', latest));
          }
        },
      ),
      { numRuns: Math.min(runs, 150), interruptAfterTimeLimit: 20_000 },
    );
  });

  it('sweep keeps a key whose latest request is recent, even after a late-stamped one', () => {
    const limiter = new RateLimiter();
    expect(limiter.admit('w', 10_000, 'signed').ok).toBe(true);
    // A request stamped earlier (another connection's clock read) must not age the key.
    expect(limiter.admit('w', 5_000, 'signed').ok).toBe(true);
    limiter.sweep(5_000 + WALLET_LIMITS.sustainedWindowMs + 1);
    expect(limiter.size).toBe(1);
    limiter.sweep(10_000 + WALLET_LIMITS.sustainedWindowMs + 1);
    expect(limiter.size).toBe(0);
  });

  it('never admits more than the budgets in any window (model check)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.tuple(
            fc.integer({ min: 0, max: 400 }),
            fc.constantFrom<'signed' | 'cancel'>('signed', 'cancel'),
          ),
          { maxLength: 400, size: 'max' },
        ),
        (steps) => {
          const small = new RateLimiter({
            perWindow: 20,
            windowMs: 1000,
            sustained: 30,
            sustainedWindowMs: 5000,
            cancelHeadroom: 2,
          });
          const log: [number, 'signed' | 'cancel'][] = [];
          let t = 0;
          for (const [gap, kind] of steps) {
            t += gap;
            if (small.admit('w', t, kind).ok) log.push([t, kind]);
          }
          for (const [time] of log) {
            const inWindow = log.filter(([x]) => x > time - 5000 && x <= time);
            expect(inWindow.length).toBeLessThanOrEqual(60);
            // Every admitted non-cancel saw fewer than 30 before it in its window.
          }
          for (let i = 0; i < log.length; i++) {
            const [time, kind] = log[i]!;
            const before = log.slice(0, i).filter(([x]) => x > time - 5000).length;
            expect(before).toBeLessThan(kind === 'cancel' ? 60 : 30);
          }
        },
      ),
      { numRuns: runs },
    );
  });
});
