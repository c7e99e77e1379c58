/**
 * The per-account working-order cap over random command sequences: limits of every time in force
 * (crossing and not), stop-limits, managed and plain TP/SL, cancels, cancel-alls, amends, mark
 * moves that fire triggers, and expiries, under a random cap of 1 to 4. After every command each
 * account's count (its order list's length) equals its working orders and is at most the cap;
 * an order that could rest is accepted only below the cap, is refused for the cap only at it,
 * and an IOC or FOK limit order is never refused for it. Every invariant of
 * src/testing/invariants.ts and the reducer's purity are checked too (TestVenue).
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { EngineEvent, OrderRejectedReport } from '../src/index.js';
import { BTC_SETTINGS, TestVenue, wallet } from '../src/testing/index.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 100);
const BTC = 'BTC-PERP';
const W = [wallet(0x301), wallet(0x302), wallet(0x303)];

type Step =
  | {
      k: 'order';
      w: number;
      buy: boolean;
      /** 0-1 limit, 2 stop-limit, 3 StopLoss, 4 TakeProfit. */
      kind: number;
      tif: 'GTC' | 'IOC' | 'FOK' | 'GTD';
      managed: boolean;
      off: number;
      trig: number;
      qty: number;
    }
  | { k: 'cancel'; w: number; pick: number }
  | { k: 'cancelAll'; w: number }
  | { k: 'replace'; w: number; pick: number; off: number; qty: number }
  | { k: 'oracle'; off: number }
  | { k: 'advance'; ms: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      k: fc.constant('order' as const),
      w: fc.nat(2),
      buy: fc.boolean(),
      kind: fc.constantFrom(0, 0, 1, 1, 2, 3, 4),
      tif: fc.constantFrom('GTC', 'GTC', 'GTC', 'IOC', 'FOK', 'GTD'),
      managed: fc.boolean(),
      off: fc.integer({ min: -20, max: 20 }),
      trig: fc.integer({ min: 1, max: 40 }),
      qty: fc.integer({ min: 1, max: 20 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ k: fc.constant('cancel' as const), w: fc.nat(2), pick: fc.nat() }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('cancelAll' as const), w: fc.nat(2) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('replace' as const),
      w: fc.nat(2),
      pick: fc.nat(),
      off: fc.integer({ min: -20, max: 20 }),
      qty: fc.integer({ min: 1, max: 20 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('oracle' as const),
      off: fc.integer({ min: -60, max: 60 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('advance' as const),
      ms: fc.constantFrom(1_000, 30_000, 120_000),
    }),
  },
);

/** How often each side of the rule was reached, so the property cannot pass vacuously. */
const stats = { runs: 0, refusedAtCap: 0, neverRestsAtCap: 0, acceptedBelowCap: 0 };

function setup(cap: number): TestVenue {
  const v = new TestVenue({ settings: { maxWorkingOrdersPerAccount: cap }, checkPurity: true });
  v.list(BTC_SETTINGS);
  for (const w of W) {
    v.open(w);
    v.fund(w, '200000');
  }
  v.oracle({ [BTC]: '50000' });
  return v;
}

function ordersOf(v: TestVenue, w: string): number[] {
  const out: number[] = [];
  v.state.orders.forEach((o, id) => {
    if (o.account === w) out.push(id);
  });
  return out.sort((a, b) => a - b);
}

const rejected = (events: readonly EngineEvent[]): OrderRejectedReport | undefined =>
  events.find(
    (e): e is OrderRejectedReport => e.type === 'executionReport' && e.kind === 'OrderRejected',
  );

function run(v: TestVenue, cap: number, s: Step): void {
  const mark = Number(v.state.markets.get(1)!.prices.mark! / 10n ** 17n) / 10;
  if (s.k === 'order') {
    const w = W[s.w]!;
    const type = (['Limit', 'Limit', 'StopLimit', 'StopLoss', 'TakeProfit'] as const)[s.kind]!;
    const tpsl = type === 'StopLoss' || type === 'TakeProfit';
    // Buyers lean up and sellers down so that a share of the limits cross.
    const price = (Math.round(mark) + (s.buy ? s.off + 5 : s.off - 5) * 10).toFixed(1);
    const stopUp = s.buy === (type !== 'TakeProfit');
    const trigger = (Math.round(mark) + (stopUp ? 1 : -1) * s.trig * 10).toFixed(1);
    const before = ordersOf(v, w).length;
    const events = v.place(w, BTC, {
      side: s.buy ? 'Buy' : 'Sell',
      qty: (s.qty / 1000).toFixed(3),
      type,
      price: tpsl ? undefined : price,
      trigger: type === 'Limit' ? undefined : trigger,
      reduceOnly: tpsl,
      managed: tpsl && s.managed,
      tif: s.tif,
      ...(s.tif === 'GTD' ? { expiry: Math.floor(v.time / 1000) + 60 } : {}),
    });
    const outcome = v.outcome(events);
    const neverRests = type === 'Limit' && (s.tif === 'IOC' || s.tif === 'FOK');
    const refusal = rejected(events);
    const forCap = refusal?.order.reason === 'TooManyOrders';
    if (forCap) {
      stats.refusedAtCap++;
      expect(neverRests).toBe(false);
      expect(before).toBeGreaterThanOrEqual(cap);
      expect(refusal?.message).toBe(
        `INVALID_REQUEST: account has ${before} working orders, the most allowed is ${cap}`,
      );
    }
    if (outcome.ok && !neverRests) {
      stats.acceptedBelowCap++;
      expect(before).toBeLessThan(cap);
    }
    if (neverRests && before >= cap) {
      stats.neverRestsAtCap++;
      expect(forCap).toBe(false);
    }
  } else if (s.k === 'cancel' || s.k === 'replace') {
    const w = W[s.w]!;
    const mine = ordersOf(v, w);
    const id = mine.length > 0 ? mine[s.pick % mine.length]! : 1;
    if (s.k === 'cancel') {
      v.cancel(w, BTC, { orderId: id });
    } else {
      const o = v.state.orders.get(id);
      v.run({
        type: 'replaceOrder',
        account: w,
        market: 1,
        orderId: BigInt(id),
        origCloid: null,
        price:
          o !== undefined && o.price === 0n
            ? 0n
            : BigInt(Math.round(mark) + s.off * 10) * 10n ** 18n,
        triggerPrice: o?.ordStatus === 'Untriggered' ? o.triggerPrice : 0n,
        quantity: (o?.cumQty ?? 0n) + BigInt(s.qty) * 10n,
        cloid: null,
      });
    }
  } else if (s.k === 'cancelAll') {
    v.run({ type: 'cancelAll', account: W[s.w]!, market: 0 });
  } else if (s.k === 'oracle') {
    v.oracle({ [BTC]: String(50_000 + s.off * 10) });
  } else {
    v.advance(s.ms);
  }
  for (const w of W) {
    const count = v.state.accounts.get(w)!.orders.size;
    expect(count).toBe(ordersOf(v, w).length);
    expect(count).toBeLessThanOrEqual(cap);
  }
}

describe('the working-order cap over random sequences', () => {
  afterAll(() => {
    if (process.env.LOG_STATS) console.log(JSON.stringify(stats));
    if (stats.runs >= 50) {
      expect(stats.refusedAtCap).toBeGreaterThan(0);
      expect(stats.neverRestsAtCap).toBeGreaterThan(0);
      expect(stats.acceptedBelowCap).toBeGreaterThan(0);
    }
  });

  it('no account ever holds more working orders than the cap, and the cap refuses only at it', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.array(stepArb, { minLength: 10, maxLength: 60 }),
        (cap, steps) => {
          stats.runs++;
          const v = setup(cap);
          for (const s of steps) run(v, cap, s);
        },
      ),
      { numRuns: runs },
    );
  }, 240_000);
});
