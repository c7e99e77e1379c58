/**
 * One test per order-book rule (engine-rules section 5, research 6.3-6.4): validation codes,
 * priority, every order type and time in force, post-only, self-trade prevention, cancel,
 * replace, cancel-all, cloid reservation, triggers and the FIX quantities of reports.
 */

import { beforeEach, describe, expect, it } from 'vitest';
import type { EngineEvent, ExecutionReport, OrderReport, Outcome } from '../src/index.js';
import { formatPrice, levelOrderIds } from '../src/index.js';
import { BTC_SETTINGS, cloid, px, type TestVenue, wallet } from '../src/testing/index.js';
import { btcOrderVenue } from './order-events.js';

const BTC = 'BTC-PERP';
const A = wallet(0xa);
const B = wallet(0xb);
const C = wallet(0xc);

function outcome(events: readonly EngineEvent[]): Outcome {
  const o = events.find((e): e is Outcome => e.type === 'outcome');
  if (o === undefined) throw new Error('no outcome');
  return o;
}

function orderIdOf(events: readonly EngineEvent[]): number {
  const o = outcome(events);
  if (o.ok && 'order' in o) return o.order.orderId;
  if (!o.ok && o.orderId !== undefined) return o.orderId;
  throw new Error(
    `no order in outcome ${JSON.stringify(o, (_k, v) => (typeof v === 'bigint' ? String(v) : v))}`,
  );
}

function reports(events: readonly EngineEvent[], account?: string): ExecutionReport[] {
  return events.filter(
    (e): e is ExecutionReport =>
      e.type === 'executionReport' && (account === undefined || e.account === account),
  );
}

function kinds(events: readonly EngineEvent[], account?: string): string[] {
  return reports(events, account).map((r) => r.kind);
}

function orderReports(events: readonly EngineEvent[]): OrderReport[] {
  return reports(events).filter((r): r is OrderReport => 'fill' in r || r.kind.startsWith('Order'));
}

let v: TestVenue;

beforeEach(() => {
  v = btcOrderVenue();
});

describe('field validation (nothing changes, no nonce consumed)', () => {
  const bad = (order: Partial<ReturnType<TestVenue['request']>>, code: number, text?: RegExp) => {
    const before = v.state;
    const request = { ...v.request(BTC, { side: 'Buy', qty: '1', price: '65000' }), ...order };
    const events = v.run({ type: 'placeOrder', account: A, order: request });
    const o = outcome(events);
    expect(o.ok).toBe(false);
    if (!o.ok) {
      expect(o.code).toBe(code);
      if (text) expect(o.message).toMatch(text);
      expect(o.nonceConsumed).toBe(false);
    }
    expect(v.state).toBe(before);
    expect(reports(events)).toHaveLength(0);
  };

  it('refuses an unknown order type with 4030', () => bad({ orderType: 4 }, 4030, /order type 4/));
  it('refuses an unknown time in force with 4031', () => bad({ timeInForce: 5 }, 4031));
  it('refuses a zero price with 4032', () => bad({ price: 0n }, 4032, /positive/));
  it('refuses an off-tick price with 4032 naming the tick', () =>
    bad({ price: px('65000.25') }, 4032, /tick size 0.5/));
  it('refuses a trigger price on a Limit order with 4032', () =>
    bad({ triggerPrice: px('64000') }, 4032));
  it('refuses a StopLimit without trigger price with 4032', () =>
    bad({ orderType: 1 }, 4032, /trigger/));
  it('refuses a zero quantity with 4034', () => bad({ quantity: 0n }, 4034));
  it('refuses an off-lot quantity with 4034 naming the lot', () =>
    bad({ quantity: 10_005n }, 4034, /quantity 1.0005 is not a multiple of the lot size 0.001/));
  // One raw unit off the grid: the smallest remainder, which an off-by-one grid check (found
  // by mutation: `% tick > 1n`) would let through; the cases above are off by half a step.
  it('refuses a price one raw unit above a tick with 4032', () =>
    bad({ price: px('65000') + 1n }, 4032, /tick size 0.5/));
  it('refuses a quantity one raw unit above a lot with 4034', () =>
    bad({ quantity: 10_001n }, 4034, /quantity 1.0001 is not a multiple of the lot size 0.001/));
  it('refuses a GTD expiry in the past with 4031', () =>
    bad({ timeInForce: 1, expiry: BigInt(Math.floor(v.time / 1000) - 1) }, 4031, /future/));
  it('refuses an expiry on a GTC order with 4031', () => bad({ expiry: 5n }, 4031));
  it('refuses unknown flag bits with 4000', () => bad({ flags: 16 }, 4000, /flag/));
  it('refuses an unknown market with 4000', () => bad({ market: 9 }, 4000, /unknown market/));
  it('refuses a malformed cloid with 4000', () => bad({ cloid: '0x12' }, 4000, /cloid/));

  it('refuses an order from a wallet without an account with 4040', () => {
    const before = v.state;
    const o = outcome(v.place(wallet(0xdead), BTC, { side: 'Buy', qty: '1', price: '65000' }));
    expect(o.ok ? 0 : o.code).toBe(4040);
    expect(v.state).toBe(before);
  });
});

describe('matching', () => {
  it('fills at the resting price, best price first, then time priority', () => {
    const a1 = orderIdOf(v.place(A, BTC, { side: 'Sell', qty: '1', price: '65010' }));
    const a2 = orderIdOf(v.place(B, BTC, { side: 'Sell', qty: '1', price: '65005' }));
    const a3 = orderIdOf(v.place(A, BTC, { side: 'Sell', qty: '1', price: '65005' }));
    const events = v.place(C, BTC, { side: 'Buy', qty: '2.5', price: '65010' });
    const fills = orderReports(events).filter((r) => r.fill?.liquidity === 'Maker');
    expect(
      fills.map((r) => [r.order.orderId, formatPrice(r.fill!.price), r.fill!.quantity]),
    ).toEqual([
      [a2, '65005', 10_000n],
      [a3, '65005', 10_000n],
      [a1, '65010', 5_000n],
    ]);
    const taker = orderReports(events)
      .filter((r) => r.account === C && r.fill !== undefined)
      .at(-1)!;
    expect(taker.kind).toBe('OrderFilled');
    expect(taker.order.cumQty).toBe(25_000n);
    // avgPx = (65005 + 65005 + 0.5 x 65010) / 2.5 = 65006
    expect(taker.order.filledNotional / taker.order.cumQty).toBe(px('65006'));
  });

  it('reports FIX quantities through partial and full fills', () => {
    const sell = orderIdOf(v.place(A, BTC, { side: 'Sell', qty: '2', price: '65000' }));
    const e1 = v.place(B, BTC, { side: 'Buy', qty: '0.5', price: '65000' });
    const maker1 = orderReports(e1).find((r) => r.order.orderId === sell)!;
    expect(maker1.kind).toBe('OrderPartiallyFilled');
    expect(maker1.order.ordStatus).toBe('PartiallyFilled');
    expect(maker1.order.cumQty).toBe(5_000n);
    expect(maker1.order.quantity - maker1.order.cumQty).toBe(15_000n);
    expect(maker1.fill?.positionBefore).toBe(0n);
    expect(maker1.fill?.positionAfter).toBe(-5_000n);
    const e2 = v.place(B, BTC, { side: 'Buy', qty: '1.5', price: '65000' });
    const maker2 = orderReports(e2).find((r) => r.order.orderId === sell)!;
    expect(maker2.kind).toBe('OrderFilled');
    expect(maker2.order.ordStatus).toBe('Filled');
    expect(maker2.order.cumQty).toBe(20_000n);
    expect(v.state.orders.has(sell)).toBe(false);
  });

  it('emits one bookChanged per command with a rising seq, and a trade print per fill', () => {
    const seq0 = v.state.markets.get(1)!.bookSeq;
    const e1 = v.place(A, BTC, { side: 'Sell', qty: '1', price: '65000' });
    const e2 = v.place(B, BTC, { side: 'Buy', qty: '1', price: '65000' });
    const seqs = [...e1, ...e2]
      .filter((e) => e.type === 'bookChanged')
      .map((e) => (e as { bookSeq: number }).bookSeq);
    expect(seqs).toEqual([seq0 + 1, seq0 + 2]);
    expect(e2.filter((e) => e.type === 'trade')).toHaveLength(1);
  });
});

describe('time in force', () => {
  it('IOC: the remainder is cancelled with reason IOC', () => {
    v.place(A, BTC, { side: 'Sell', qty: '1', price: '65000' });
    const events = v.place(B, BTC, { side: 'Buy', qty: '3', price: '65000', tif: 'IOC' });
    expect(kinds(events, B)).toEqual(['OrderAccepted', 'OrderPartiallyFilled', 'OrderCancelled']);
    const last = reports(events, B).at(-1) as OrderReport;
    expect(last.order.reason).toBe('IOC');
    expect(last.order.cumQty).toBe(10_000n);
    expect(v.state.markets.get(1)!.bids).toHaveLength(0);
  });

  it('IOC with nothing to match is accepted then cancelled', () => {
    const events = v.place(B, BTC, { side: 'Buy', qty: '1', price: '64000', tif: 'IOC' });
    expect(kinds(events, B)).toEqual(['OrderAccepted', 'OrderCancelled']);
  });

  it('FOK that cannot fill completely cancels with no fill and leaves the book as it was', () => {
    v.place(A, BTC, { side: 'Sell', qty: '1', price: '65000' });
    const asks = v.state.markets.get(1)!.asks;
    const events = v.place(B, BTC, { side: 'Buy', qty: '2', price: '65000', tif: 'FOK' });
    expect(kinds(events, B)).toEqual(['OrderAccepted', 'OrderCancelled']);
    expect((reports(events, B)[1] as OrderReport).order.reason).toBe('FOK');
    expect(reports(events, A)).toHaveLength(0);
    expect(v.state.markets.get(1)!.asks).toEqual(asks);
  });

  it('FOK does not count its own resting orders as liquidity', () => {
    v.place(A, BTC, { side: 'Sell', qty: '1', price: '65000' });
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' });
    const events = v.place(B, BTC, { side: 'Buy', qty: '2', price: '65000', tif: 'FOK' });
    expect(kinds(events, B)).toEqual(['OrderAccepted', 'OrderCancelled']);
  });

  it('FOK that can fill completely fills', () => {
    v.place(A, BTC, { side: 'Sell', qty: '1', price: '65000' });
    v.place(C, BTC, { side: 'Sell', qty: '1', price: '65000.5' });
    const events = v.place(B, BTC, { side: 'Buy', qty: '2', price: '65000.5', tif: 'FOK' });
    expect(kinds(events, B)).toEqual(['OrderAccepted', 'OrderPartiallyFilled', 'OrderFilled']);
  });

  it('GTD expires with OrderExpired before the first command at or after its expiry', () => {
    const expirySec = Math.floor(v.time / 1000) + 10;
    const id = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', tif: 'GTD', expiry: expirySec }),
    );
    expect(v.state.orders.get(id)?.expireTime).toBe(expirySec * 1000);
    expect(kinds(v.run({ type: 'tick', time: expirySec * 1000 - 1 }))).toEqual([]);
    // A sell that would have crossed the bid arrives exactly at expiry: the bid is gone first.
    const events = v.place(
      B,
      BTC,
      { side: 'Sell', qty: '1', price: '64000' },
      { time: expirySec * 1000 },
    );
    expect(kinds(events)).toEqual(['OrderExpired', 'OrderAccepted']);
    expect((reports(events)[0] as OrderReport).order.reason).toBe('GTD');
    expect(v.state.orders.has(id)).toBe(false);
  });

  it('DAY expires at the next 00:00:00 UTC', () => {
    const id = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', tif: 'DAY' }));
    const midnight = (Math.floor(v.time / 86_400_000) + 1) * 86_400_000;
    expect(v.state.orders.get(id)?.expireTime).toBe(midnight);
    v.run({ type: 'tick', time: midnight - 1 });
    expect(v.state.orders.has(id)).toBe(true);
    const events = v.run({ type: 'tick', time: midnight });
    expect(kinds(events)).toEqual(['OrderExpired']);
    expect((reports(events)[0] as OrderReport).order.reason).toBe('DAY');
  });
});

describe('post-only and self-trade prevention', () => {
  it('refuses a post-only order that would take liquidity with 4000 and OrderRejected PostOnly', () => {
    v.place(A, BTC, { side: 'Sell', qty: '1', price: '65000' });
    const events = v.place(B, BTC, { side: 'Buy', qty: '1', price: '65000', postOnly: true });
    const o = outcome(events);
    expect(o.ok ? 0 : o.code).toBe(4000);
    expect(kinds(events, B)).toEqual(['OrderRejected']);
    expect((reports(events, B)[0] as OrderReport).order.reason).toBe('PostOnly');
  });

  it('rests a post-only order that does not cross', () => {
    const events = v.place(B, BTC, { side: 'Buy', qty: '1', price: '64999.5', postOnly: true });
    expect(outcome(events).ok).toBe(true);
    expect(v.state.markets.get(1)!.bids).toHaveLength(1);
  });

  it('cancels the resting order of the same account (SelfTrade), no fill, no fee, then goes on', () => {
    const own = orderIdOf(v.place(A, BTC, { side: 'Sell', qty: '1', price: '65000' }));
    const other = orderIdOf(v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' }));
    const fees = v.state.feePool;
    const events = v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000' });
    const cancelled = reports(events, A).find((r) => r.kind === 'OrderCancelled') as OrderReport;
    expect(cancelled.order.orderId).toBe(own);
    expect(cancelled.order.reason).toBe('SelfTrade');
    const makerFill = reports(events, B)[0] as OrderReport;
    expect(makerFill.order.orderId).toBe(other);
    expect(makerFill.fill?.quantity).toBe(10_000n);
    // Only the one real fill paid fees.
    expect(v.state.feePool - fees).toBe(9_750_000n + 29_250_000n);
  });
});

describe('cancel', () => {
  it('cancels by order id and by cloid', () => {
    const id1 = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000' }));
    const id2 = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(7) }),
    );
    const e1 = v.cancel(A, BTC, { orderId: id1 });
    expect(outcome(e1).ok).toBe(true);
    expect((reports(e1)[0] as OrderReport).order.reason).toBe('User');
    const e2 = v.cancel(A, BTC, { cloid: cloid(7) });
    const o2 = outcome(e2);
    expect(o2.ok && 'order' in o2 ? o2.order.orderId : 0).toBe(id2);
    expect(v.state.markets.get(1)!.bids).toHaveLength(0);
  });

  it('answers 4041 for an unknown, filled, foreign or wrong-market order and consumes the nonce', () => {
    const mine = orderIdOf(v.place(A, BTC, { side: 'Sell', qty: '1', price: '65000' }));
    v.place(B, BTC, { side: 'Buy', qty: '1', price: '65000' });
    const live = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000' }));
    for (const [who, id] of [
      [A, 999_999],
      [A, mine],
      [B, live],
    ] as const) {
      const o = outcome(v.cancel(who, BTC, { orderId: id }));
      expect(o.ok ? 0 : o.code).toBe(4041);
      expect(o.ok ? false : o.nonceConsumed).toBe(true);
    }
    const wrongMarket = v.run({
      type: 'cancelOrder',
      account: A,
      market: 2,
      orderId: BigInt(live),
      cloid: null,
    });
    expect(outcome(wrongMarket).ok).toBe(false);
    expect(v.state.orders.has(live)).toBe(true);
  });

  it('refuses a cancel or replace naming an unlisted market as bad input: 4000, nonce kept', () => {
    const live = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000' }));
    const auth = { nonce: BigInt(v.time), deadline: BigInt(Math.floor(v.time / 1000) + 60) };
    const cancel = {
      type: 'cancelOrder' as const,
      account: A,
      market: 77,
      orderId: BigInt(live),
      cloid: null,
      auth,
    };
    const replace = {
      type: 'replaceOrder' as const,
      account: A,
      market: 77,
      orderId: BigInt(live),
      origCloid: null,
      cloid: null,
      price: px('63000'),
      triggerPrice: 0n,
      quantity: 100n,
      auth,
    };
    for (const command of [cancel, replace]) {
      const before = v.state;
      const o = outcome(v.run(command));
      expect(o.ok ? 0 : o.code).toBe(4000);
      expect(o.ok ? '' : o.message).toMatch(/unknown market 77/);
      expect(o.ok ? true : o.nonceConsumed).toBeFalsy();
      expect(v.state).toBe(before);
    }
    // The nonce was not spent: the same nonce on the listed market cancels the order.
    expect(outcome(v.run({ ...cancel, market: 1 })).ok).toBe(true);
  });

  it('refuses a cancel naming both or neither target with 4000', () => {
    const both = v.run({
      type: 'cancelOrder',
      account: A,
      market: 1,
      orderId: 5n,
      cloid: cloid(1),
    });
    const o = outcome(both);
    expect(o.ok ? 0 : o.code).toBe(4000);
  });

  it('cancelAll cancels every working order of the account in one market or in all', () => {
    v.list({
      ...BTC_SETTINGS,
      id: 2,
      symbol: 'ETH-PERP',
      tickSize: '0.01',
      lotSize: '0.001',
      quantityDecimals: 3,
    });
    v.oracle({ 'ETH-PERP': '3000' });
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000' });
    v.place(A, BTC, { side: 'Sell', qty: '1', price: '66000' });
    v.place(A, 'ETH-PERP', { side: 'Buy', qty: '1', price: '2900' });
    v.place(B, BTC, { side: 'Buy', qty: '1', price: '64000' });
    const e1 = v.run({ type: 'cancelAll', account: A, market: 1 });
    const o1 = outcome(e1);
    expect(o1.ok && o1.kind === 'cancelAll' ? o1.cancelled : -1).toBe(2);
    expect(v.state.accounts.get(A)!.orders.size).toBe(1);
    const o2 = outcome(v.run({ type: 'cancelAll', account: A, market: 0 }));
    expect(o2.ok && o2.kind === 'cancelAll' ? o2.cancelled : -1).toBe(1);
    expect(v.state.accounts.get(A)!.orders.size).toBe(0);
    expect(v.state.accounts.get(B)!.orders.size).toBe(1);
  });
});

describe('replace', () => {
  const replace = (
    id: number,
    price: string,
    qty: string,
    newCloid: string | null = null,
    who = A,
  ) =>
    v.run({
      type: 'replaceOrder',
      account: who,
      market: 1,
      orderId: BigInt(id),
      origCloid: null,
      price: px(price),
      triggerPrice: 0n,
      quantity: BigInt(Math.round(Number(qty) * 10_000)),
      cloid: newCloid,
    });
  const queue = (): number[] => {
    const bids = v.state.markets.get(1)!.bids;
    const best = bids[bids.length - 1]!;
    return levelOrderIds(best);
  };

  it('a pure decrease keeps time priority; an increase or a price change loses it', () => {
    const first = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '2', price: '64000' }));
    const second = orderIdOf(v.place(B, BTC, { side: 'Buy', qty: '1', price: '64000' }));
    const e = replace(first, '64000', '1.5');
    expect(kinds(e)).toEqual(['OrderReplaced']);
    expect(queue()).toEqual([first, second]);
    replace(first, '64000', '3');
    expect(queue()).toEqual([second, first]);
    replace(second, '64000.5', '1', null, B);
    expect(queue()).toEqual([second]);
  });

  // Found by mutation: neither refusal had a test.
  it('refuses a trigger price on a working Limit order and a new quantity for a managed TP/SL', () => {
    const amend = (id: number, price: bigint, triggerPrice: bigint, quantity: bigint) =>
      outcome(
        v.run({
          type: 'replaceOrder',
          account: A,
          market: 1,
          orderId: BigInt(id),
          origCloid: null,
          price,
          triggerPrice,
          quantity,
          cloid: null,
        }),
      );
    const bid = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '2', price: '64000' }));
    expect(amend(bid, px('64000'), px('63000'), 20_000n)).toMatchObject({
      ok: false,
      code: 4032,
      message:
        'INVALID_ORDER_PRICE: the trigger price of a working (triggered or Limit) order cannot change',
    });
    // A long of 1 and a take-profit that follows it.
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' }));
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000', tif: 'IOC' }));
    const tp = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        trigger: '70000',
        type: 'TakeProfit',
        managed: true,
        reduceOnly: true,
      }),
    );
    expect(amend(tp, 0n, px('70000'), 5_000n)).toMatchObject({
      ok: false,
      code: 4000,
      message:
        'INVALID_REQUEST: a managed TP/SL follows its position; its quantity cannot be amended',
    });
    // Its trigger may move, at the quantity it has.
    expect(amend(tp, 0n, px('71000'), 10_000n).ok).toBe(true);
    expect(v.state.orders.get(bid)).toMatchObject({ triggerPrice: 0n, quantity: 20_000n });
    expect(v.state.orders.get(tp)).toMatchObject({ triggerPrice: px('71000'), quantity: 10_000n });
  });

  it('reports the previous values and a new cloid with origCloid', () => {
    const id = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '2', price: '64000', cloid: cloid(1) }),
    );
    const e = replace(id, '63999.5', '2', cloid(2));
    const r = reports(e)[0] as ExecutionReport & { origCloid: string; previous: { price: bigint } };
    expect(r.kind).toBe('OrderReplaced');
    expect(r.origCloid).toBe(cloid(1));
    expect(r.previous.price).toBe(px('64000'));
    const o = outcome(e);
    expect(o.ok && 'order' in o ? o.order.cloid : null).toBe(cloid(2));
    expect(outcome(v.cancel(A, BTC, { cloid: cloid(2) })).ok).toBe(true);
  });

  it('a superseded cloid targets nothing (4041) but stays reserved against new orders', () => {
    const id = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '2', price: '64000', cloid: cloid(1) }),
    );
    expect(outcome(replace(id, '64000', '2', cloid(2))).ok).toBe(true);
    const byOld = outcome(v.cancel(A, BTC, { cloid: cloid(1) }));
    expect(byOld.ok ? 0 : byOld.code).toBe(4041);
    const replaceByOld = outcome(
      v.run({
        type: 'replaceOrder',
        account: A,
        market: 1,
        orderId: 0n,
        origCloid: cloid(1),
        price: px('63000'),
        triggerPrice: 0n,
        quantity: 10_000n,
        cloid: null,
      }),
    );
    expect(replaceByOld.ok ? 0 : replaceByOld.code).toBe(4041);
    // Untouched by either.
    expect(v.state.orders.get(id)).toMatchObject({ price: px('64000'), quantity: 20_000n });
    expect(v.state.orders.get(id)?.cloid).toBe(cloid(2));
    // The old cloid is still reserved for 24 h: a new order may not take it.
    const dup = outcome(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(1) }),
    );
    expect(dup.ok ? '' : dup.message).toContain(`already used by order ${id}`);
    // A managed TP/SL attaches to the entry order by its current cloid only.
    const child = (parent: string) =>
      outcome(
        v.place(A, BTC, {
          side: 'Sell',
          qty: '2',
          trigger: '60000',
          type: 'StopLoss',
          managed: true,
          parentCloid: parent,
        }),
      );
    const orphan = child(cloid(1));
    expect(orphan.ok ? '' : orphan.message).toContain(`no working entry order ${cloid(1)}`);
    expect(child(cloid(2)).ok).toBe(true);
    // The current cloid works.
    expect(outcome(v.cancel(A, BTC, { cloid: cloid(2) })).ok).toBe(true);
  });

  it('refuses a new total that does not exceed the filled quantity with 4034', () => {
    const id = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '2', price: '65000' }));
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' });
    const before = v.state;
    const o = outcome(replace(id, '65000', '1'));
    expect(o.ok ? 0 : o.code).toBe(4034);
    // A refusal for the order's state comes after admission (a signed one spends its nonce,
    // see access.test.ts); the order and the book are as they were.
    expect(o.ok ? null : o.nonceConsumed).toBe(true);
    expect(v.state.orders.get(id)).toBe(before.orders.get(id));
    expect(v.state.markets.get(1)!.bids).toEqual(before.markets.get(1)!.bids);
  });

  it('an amended price that crosses trades like a new arrival', () => {
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' });
    const id = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '2', price: '64000' }));
    const e = replace(id, '65000', '2');
    expect(kinds(e, A)).toEqual(['OrderReplaced', 'OrderPartiallyFilled']);
    expect(v.state.orders.get(id)?.cumQty).toBe(10_000n);
  });

  it('refuses a cloid held by another working order with 4000', () => {
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(1) });
    const id = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000' }));
    const o = outcome(replace(id, '64000', '1', cloid(1)));
    expect(o.ok ? '' : o.message).toMatch(/already used/);
  });
});

describe('cloid reservation', () => {
  it('refuses a live or recent cloid with 4000 naming the order, frees it after 24 h', () => {
    const id = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(9) }),
    );
    const dup = v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(9) });
    const o = outcome(dup);
    expect(o.ok ? '' : o.message).toContain(`order ${id}`);
    expect(kinds(dup)).toEqual(['OrderRejected']);
    v.cancel(A, BTC, { orderId: id });
    expect(
      outcome(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(9) })).ok,
    ).toBe(false);
    // Another wallet may use the same cloid.
    expect(
      outcome(v.place(B, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(9) })).ok,
    ).toBe(true);
    v.advance(86_400_000);
    expect(
      outcome(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(9) })).ok,
    ).toBe(true);
  });
});

describe('trigger orders (mark price)', () => {
  it('a buy StopLimit waits Untriggered, fires when mark >= trigger, then works as a Limit', () => {
    const e = v.place(A, BTC, {
      side: 'Buy',
      qty: '1',
      price: '66000',
      trigger: '65500',
      type: 'StopLimit',
    });
    const id = orderIdOf(e);
    expect((reports(e)[0] as OrderReport).order.ordStatus).toBe('Untriggered');
    // With an empty book the mark is the index.
    expect(kinds(v.oracle({ [BTC]: '65499.5' }))).toEqual([]);
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('65499.5'));
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '66000' });
    // Mark = median(index, best ask) = mean(65100, 66000) = 65550 >= 65500.
    const fired = v.oracle({ [BTC]: '65100' });
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('65550'));
    expect(kinds(fired, A)).toEqual(['OrderTriggered', 'OrderFilled']);
    const trig = reports(fired, A)[0] as OrderReport;
    expect(trig.order.orderId).toBe(id);
    expect(trig.markPrice).toBe(px('65550'));
  });

  it('a sell StopLimit fires when mark <= trigger', () => {
    v.place(A, BTC, {
      side: 'Sell',
      qty: '1',
      price: '64000',
      trigger: '64500',
      type: 'StopLimit',
    });
    expect(kinds(v.oracle({ [BTC]: '64500.5' }))).toEqual([]);
    expect(kinds(v.oracle({ [BTC]: '64500' }), A)).toEqual(['OrderTriggered']);
    expect(v.state.markets.get(1)!.asks).toHaveLength(1);
  });

  it('refuses a trigger already reached by the mark with 4032 (OrderRejected PriceBand)', () => {
    const e = v.place(A, BTC, {
      side: 'Buy',
      qty: '1',
      price: '66000',
      trigger: '64000',
      type: 'StopLimit',
    });
    const o = outcome(e);
    expect(o.ok ? 0 : o.code).toBe(4032);
    expect((reports(e)[0] as OrderReport).order.reason).toBe('PriceBand');
  });

  it('a market-style StopLoss closes the position within the 10% slippage cap', () => {
    // A opens long 1 against B.
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' });
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000' });
    v.place(A, BTC, { side: 'Sell', qty: '1', trigger: '60000', type: 'StopLoss' });
    // Bids: one inside the cap (above 0.9 x 59000 = 53100), one below it.
    v.place(C, BTC, { side: 'Buy', qty: '0.4', price: '55000' });
    v.place(C, BTC, { side: 'Buy', qty: '1', price: '50000' });
    const fired = v.oracle({ [BTC]: '59000' });
    const mark = v.state.markets.get(1)!.prices.mark!;
    expect(mark).toBeLessThanOrEqual(px('60000'));
    expect(kinds(fired, A)).toEqual(['OrderTriggered', 'OrderPartiallyFilled', 'OrderCancelled']);
    const fill = reports(fired, A)[1] as OrderReport;
    expect(fill.fill?.price).toBe(px('55000'));
    expect(fill.fill?.quantity).toBe(4_000n);
    // A GTC stop is not an IOC: the remainder its cap found nothing for is NoLiquidity.
    expect((reports(fired, A)[2] as OrderReport).order.reason).toBe('NoLiquidity');
  });

  it('a TakeProfit sell fires when mark >= trigger', () => {
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' });
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000' });
    v.place(A, BTC, {
      side: 'Sell',
      qty: '1',
      price: '66000',
      trigger: '66000',
      type: 'TakeProfit',
    });
    // Empty book, last trade 65000: mark = mean(index, 65000).
    expect(kinds(v.oracle({ [BTC]: '66999' }), A)).toEqual([]);
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('65999.5'));
    expect(kinds(v.oracle({ [BTC]: '67000' }), A)).toEqual(['OrderTriggered']);
  });
});

describe('purity and no-change refusals', () => {
  it('returns the very same state object for a refused command', () => {
    const before = v.state;
    v.place(A, BTC, { side: 'Buy', qty: '0', price: '65000' });
    expect(v.state).toBe(before);
  });
});
