/**
 * The working-order cap (engine rules 4) is the last check of a placement. It ran first at
 * first (found by a review of the change), so an account at the cap got the cap's generic 4000
 * `TooManyOrders` for an order the specs refuse with a specific code, message or reason. The cap
 * is our own rule (the spec has no code for it); the spec's own refusals win, and the cap only
 * refuses an order that would otherwise be accepted.
 *
 * - engine-rules 5: "A trigger that is already satisfied at placement is rejected (4032)".
 * - engine-rules 5 / protocol.md 5: minimum notional 4101; a post-only order that would cross is
 *   refused with 4000 and an `OrderRejected` report with reason `PostOnly`.
 * - interface-spec "Reduce-only and SL/TP placement errors come as 4000 with a message
 *   containing `requires an open position`".
 *
 * Each case gets the spec's answer below the cap (checked first, so the test shows the cap is the
 * only difference) and at it.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { EngineEvent, OrderRejectedReport } from '../src/index.js';
import { BTC_SETTINGS, type OrderSpec, TestVenue, wallet } from '../src/testing/index.js';

const BTC = 'BTC-PERP';
const A = wallet(0xa1);
const B = wallet(0xb1);

const rejectedOf = (events: readonly EngineEvent[]): OrderRejectedReport | undefined =>
  events.find(
    (e): e is OrderRejectedReport => e.type === 'executionReport' && e.kind === 'OrderRejected',
  );

/** Orders the specs refuse with their own code, message or reason. */
const CASES: [string, OrderSpec, { code: number; message?: RegExp; reason?: string }][] = [
  [
    'a stop whose trigger the mark already reached: 4032 (engine-rules 5)',
    { side: 'Buy', qty: '0.001', price: '50000', trigger: '45000', type: 'StopLimit' },
    { code: 4032, reason: 'PriceBand' },
  ],
  [
    'a post-only order that would cross: reason PostOnly (protocol.md 5)',
    { side: 'Buy', qty: '0.001', price: '50000', postOnly: true },
    { code: 4000, reason: 'PostOnly' },
  ],
  [
    'an order below the 5 USD minimum notional: 4101 (engine-rules 5)',
    { side: 'Buy', qty: '0.001', price: '4000' },
    { code: 4101, reason: 'OrderTooSmall' },
  ],
  [
    'a reduce-only order without a position: "requires an open position" (interface-spec)',
    { side: 'Sell', qty: '0.001', price: '60000', reduceOnly: true },
    { code: 4000, message: /requires an open position/, reason: 'NoPosition' },
  ],
];

describe('the working-order cap does not hide the spec-defined refusals', () => {
  let v: TestVenue;
  beforeEach(() => {
    v = new TestVenue({ settings: { maxWorkingOrdersPerAccount: 1 } });
    v.list(BTC_SETTINGS);
    for (const w of [A, B]) {
      v.open(w);
      v.fund(w, '100000');
    }
    v.oracle({ [BTC]: '50000' });
    // Something for a post-only bid at 50,000 to cross.
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '0.001', price: '50000' }));
  });

  for (const [name, order, want] of CASES) {
    it(`below the cap: ${name}`, () => {
      const events = v.place(A, BTC, order);
      expect(v.outcome(events)).toMatchObject({ ok: false, code: want.code });
      if (want.message) expect(v.outcome(events)).toMatchObject({ message: want.message });
      expect(rejectedOf(events)?.order.reason).toBe(want.reason);
    });

    it(`at the cap: ${name}`, () => {
      v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '0.001', price: '40000' }));
      expect(v.state.accounts.get(A)!.orders.size).toBe(1);
      const events = v.place(A, BTC, order);
      // Actual: code 4000, "account has 1 working orders, the most allowed is 1", TooManyOrders.
      expect(v.outcome(events)).toMatchObject({ ok: false, code: want.code });
      if (want.message) expect(v.outcome(events)).toMatchObject({ message: want.message });
      expect(rejectedOf(events)?.order.reason).toBe(want.reason);
    });
  }
});
