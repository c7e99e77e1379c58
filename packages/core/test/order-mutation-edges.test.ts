/**
 * Order rules that a mutation pass over packages/core/src/orders found unpinned: each case fails
 * with the mutation named in the comment above it, and passes on the unmutated source.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { OrderReport, TradePrint } from '../src/index.js';
import { levelOrderIds } from '../src/index.js';
import { marketStyleLimit } from '../src/orders/rules.js';
import { BTC_SETTINGS, cloid, px, TestVenue, wallet } from '../src/testing/index.js';
import { btcOrderVenue, kinds, orderIdOf } from './order-events.js';

const BTC = 'BTC-PERP';
const A = wallet(0xa);
const B = wallet(0xb);
const C = wallet(0xc);
const DAY_MS = 86_400_000;

let v: TestVenue;

beforeEach(() => {
  v = btcOrderVenue();
});

/** Raw quantity of a decimal BTC amount (4 decimals). */
const qty = (q: string): bigint => BigInt(Math.round(Number(q) * 10_000));

function replace(
  who: string,
  id: number,
  price: string,
  quantity: string,
  extra: { triggerPrice?: string; cloid?: string | null } = {},
) {
  return v.run({
    type: 'replaceOrder',
    account: who,
    market: 1,
    orderId: BigInt(id),
    origCloid: null,
    price: px(price),
    triggerPrice: extra.triggerPrice === undefined ? 0n : px(extra.triggerPrice),
    quantity: qty(quantity),
    cloid: extra.cloid ?? null,
  });
}

/** Order ids at the best bid, in time priority. */
function bidQueue(): number[] {
  const bids = v.state.markets.get(1)!.bids;
  const best = bids[bids.length - 1];
  return best === undefined ? [] : levelOrderIds(best);
}

describe('replace: time priority', () => {
  // Mutation: `cmd.quantity > current.quantity` -> `>=` (an unchanged size loses priority).
  it('an amend that changes only the cloid keeps the order first in its level', () => {
    const first = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(1) }),
    );
    const second = orderIdOf(v.place(B, BTC, { side: 'Buy', qty: '1', price: '64000' }));
    v.expectOk(replace(A, first, '64000', '1', { cloid: cloid(2) }));
    expect(bidQueue()).toEqual([first, second]);
    // The first order still trades first.
    const events = v.place(C, BTC, { side: 'Sell', qty: '1', price: '64000' });
    expect(kinds(events, A)).toEqual([`OrderFilled#${first}`]);
    expect(kinds(events, B)).toEqual([]);
  });
});

describe('DAY expiry', () => {
  // Mutation: `(floor(t / day) + 1) * day` -> `ceil(t / day) * day` (an order placed exactly at
  // midnight would expire at once instead of at the next midnight).
  it('a DAY order placed exactly at 00:00:00 UTC works until the next midnight', () => {
    const midnight = (Math.floor(v.time / DAY_MS) + 1) * DAY_MS;
    const id = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', tif: 'DAY' }, { time: midnight }),
    );
    expect(v.state.orders.get(id)?.expireTime).toBe(midnight + DAY_MS);
    expect(kinds(v.run({ type: 'tick', time: midnight + DAY_MS - 1 }), A)).toEqual([]);
    expect(v.state.orders.has(id)).toBe(true);
    const events = v.run({ type: 'tick', time: midnight + DAY_MS });
    expect(kinds(events, A)).toEqual([`OrderExpired:DAY#${id}`]);
    expect((v.reports(events, A)[0] as OrderReport).order.ordStatus).toBe('Expired');
  });
});

describe('replace: state the amend depends on', () => {
  // Mutation: the paused-market check of replaceOrder dropped.
  it('refuses an amend in a paused market (4000) and leaves the order as it was', () => {
    const id = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000' }));
    v.expectOk(v.run({ type: 'setMarketStatus', market: 1, status: 'Paused' }));
    const events = replace(A, id, '63000', '1');
    expect(v.outcome(events)).toMatchObject({ ok: false, code: 4000, nonceConsumed: true });
    expect(v.state.orders.get(id)?.price).toBe(px('64000'));
  });

  // Mutation: the amended untriggered order is not put back into the trigger index.
  it('an untriggered stop fires at its amended trigger price', () => {
    const id = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        price: '60000',
        trigger: '63000',
        type: 'StopLimit',
      }),
    );
    v.expectOk(replace(A, id, '60000', '1', { triggerPrice: '64000' }));
    expect(kinds(v.oracle({ [BTC]: '64500' }), A)).toEqual([]);
    // A mark between the old trigger and the new one fires it.
    const fired = v.oracle({ [BTC]: '63500' });
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('63500'));
    expect(kinds(fired, A)[0]).toBe(`OrderTriggered#${id}`);
  });

  // Mutation: a triggered StopLoss/TakeProfit may take price 0 (only an untriggered one may: it
  // then executes market-style when it fires).
  it('refuses price 0 for a triggered StopLoss that rests at its limit (4032)', () => {
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' });
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000' });
    const id = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        price: '63000',
        trigger: '64000',
        type: 'StopLoss',
      }),
    );
    v.oracle({ [BTC]: '62000' });
    expect(v.state.orders.get(id)).toMatchObject({ ordStatus: 'New', price: px('63000') });
    const events = v.run({
      type: 'replaceOrder',
      account: A,
      market: 1,
      orderId: BigInt(id),
      origCloid: null,
      price: 0n,
      triggerPrice: 0n,
      quantity: qty('1'),
      cloid: null,
    });
    expect(v.outcome(events)).toMatchObject({ ok: false, code: 4032, nonceConsumed: true });
    expect(v.state.orders.get(id)?.price).toBe(px('63000'));
  });

  // Mutation: an untriggered order's trigger price may be amended to 0.
  // (A sell stop shows it: for a buy stop 0 is also "already reached by the mark".)
  it('refuses trigger price 0 for an untriggered sell StopLimit (4032), which keeps its trigger', () => {
    const id = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        price: '64000',
        trigger: '64500',
        type: 'StopLimit',
      }),
    );
    const events = replace(A, id, '64000', '1');
    expect(v.outcome(events)).toMatchObject({
      ok: false,
      code: 4032,
      message: 'INVALID_ORDER_PRICE: trigger price must be positive',
      nonceConsumed: true,
    });
    expect(v.state.orders.get(id)?.triggerPrice).toBe(px('64500'));
  });
});

describe('a reduce-only maker at match time', () => {
  // Mutation: the maker's fill is not clamped to what it can still reduce.
  it('fills only what its position has left after an earlier maker of the same account', () => {
    v.place(C, BTC, { side: 'Sell', qty: '2', price: '65000' });
    v.place(B, BTC, { side: 'Buy', qty: '2', price: '65000' });
    const spec = v.spec(BTC);
    const pos = () => v.state.accounts.get(B)!.positions.find((p) => p.market === spec.id)?.size;
    expect(pos()).toBe(qty('2'));
    const plain = orderIdOf(v.place(B, BTC, { side: 'Sell', qty: '1', price: '64900' }));
    const ro = orderIdOf(
      v.place(B, BTC, { side: 'Sell', qty: '2', price: '65000', reduceOnly: true }),
    );
    const events = v.place(A, BTC, { side: 'Buy', qty: '3', price: '65000' });
    expect(kinds(events, B)).toEqual([
      `OrderFilled#${plain}`,
      `OrderPartiallyFilled#${ro}`,
      `OrderCancelled:PositionClosed#${ro}`,
    ]);
    const roFill = v.reports(events, B)[1] as OrderReport;
    expect(roFill.fill?.quantity).toBe(qty('1'));
    expect(pos() ?? 0n).toBe(0n);
  });
});

describe('the cloid index at exactly 24 h', () => {
  const key = (n: number) => `${A}|${cloid(n)}`;

  // Mutation (pruneCloids): `acceptedTime + retention > now` -> `>=` (kept one command longer).
  it('forgets the cloid of an ended order at the first command exactly 24 h after acceptance', () => {
    const t = v.time + 1;
    const id = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(7) }, { time: t }),
    );
    v.cancel(A, BTC, { orderId: id });
    v.run({ type: 'tick', time: t + DAY_MS - 1 });
    expect(v.state.cloids.get(key(7))?.orderId).toBe(id);
    v.run({ type: 'tick', time: t + DAY_MS });
    expect(v.state.cloids.get(key(7))).toBeUndefined();
  });

  // Mutation (releaseCloidOnEnd): `acceptedTime + retention <= now` -> `<` (an order that ends
  // exactly 24 h after acceptance would keep its entry for ever: its log entry is gone).
  it('forgets the cloid of an order that ends exactly 24 h after it was accepted', () => {
    const t = v.time + 1;
    const id = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(8) }, { time: t }),
    );
    v.expectOk(
      v.run({
        type: 'cancelOrder',
        account: A,
        market: 1,
        orderId: BigInt(id),
        cloid: null,
        time: t + DAY_MS,
      }),
    );
    expect(v.state.cloids.get(key(8))).toBeUndefined();
    v.advance(DAY_MS);
    expect(v.state.cloids.get(key(8))).toBeUndefined();
  });
});

describe('the public trade print', () => {
  // Mutation: the print's takerSide taken from the maker.
  it("names the taker's side, at the maker's price, for a buy and for a sell taker", () => {
    v.place(A, BTC, { side: 'Sell', qty: '1', price: '65000' });
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000' });
    const prints = (events: ReturnType<TestVenue['run']>) =>
      events.filter((e): e is TradePrint => e.type === 'trade');
    expect(prints(v.place(B, BTC, { side: 'Buy', qty: '1', price: '65500' }))).toMatchObject([
      { takerSide: 'Buy', price: px('65000'), quantity: qty('1') },
    ]);
    expect(prints(v.place(C, BTC, { side: 'Sell', qty: '1', price: '63500' }))).toMatchObject([
      { takerSide: 'Sell', price: px('64000'), quantity: qty('1') },
    ]);
  });
});

describe('a trigger order re-checked when it fires', () => {
  // Mutation: the open-interest check at fire time dropped.
  it('an opening StopLimit is cancelled OICap when the cap was lowered below it meanwhile', () => {
    const stop = orderIdOf(
      v.place(A, BTC, {
        side: 'Buy',
        qty: '0.1',
        price: '66000',
        trigger: '65500',
        type: 'StopLimit',
      }),
    );
    v.list({ ...BTC_SETTINGS, openInterestCap: '0.05' });
    const fired = v.oracle({ [BTC]: '67000' });
    expect(kinds(fired, A)).toEqual([`OrderTriggered#${stop}`, `OrderCancelled:OICap#${stop}`]);
    // It does not rest: a bid that would open over the cap is not left on the book.
    expect(v.state.markets.get(1)!.bids).toHaveLength(0);
  });
});

describe('the slippage cap of a market-style trigger order', () => {
  const tick = px('0.5');
  // Mutations: the buy cap's 11/10 -> 12/10; the sell floor rounded down instead of up.
  it('is at most 10% above the mark for a buy (rounded down to the tick)', () => {
    expect(marketStyleLimit({ side: 'Buy' }, px('65000'), tick)).toBe(px('71500'));
    // 65,000.5 x 1.1 = 71,500.55
    expect(marketStyleLimit({ side: 'Buy' }, px('65000.5'), tick)).toBe(px('71500.5'));
  });

  it('is at most 10% below the mark for a sell (rounded up to the tick)', () => {
    expect(marketStyleLimit({ side: 'Sell' }, px('65000'), tick)).toBe(px('58500'));
    // 65,000.5 x 0.9 = 58,500.45
    expect(marketStyleLimit({ side: 'Sell' }, px('65000.5'), tick)).toBe(px('58500.5'));
    // Never below one tick.
    expect(marketStyleLimit({ side: 'Sell' }, px('0.5'), tick)).toBe(tick);
  });
});

describe('managed children of an entry order', () => {
  // Mutation: followParentCloid renames every managed order of the scope, not only the
  // children of the entry whose cloid a replace changed.
  it("a new cloid on an entry renames its own children's parentCloid only", () => {
    const entry1 = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(11) }),
    );
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', price: '63000', cloid: cloid(12) }));
    const child = (parent: number) =>
      orderIdOf(
        v.place(A, BTC, {
          side: 'Sell',
          qty: '1',
          trigger: '60000',
          type: 'StopLoss',
          managed: true,
          parentCloid: cloid(parent),
        }),
      );
    const child1 = child(11);
    const child2 = child(12);
    v.expectOk(replace(A, entry1, '64000', '1', { cloid: cloid(13) }));
    expect(v.state.orders.get(child1)?.parentCloid).toBe(cloid(13));
    expect(v.state.orders.get(child2)?.parentCloid).toBe(cloid(12));
  });

  // Mutation: the check that a child is on the other side of its entry dropped.
  it('refuses a child on the same side as its entry (4000, ReduceOnly)', () => {
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(5) }));
    const events = v.place(A, BTC, {
      side: 'Buy',
      qty: '1',
      trigger: '70000',
      type: 'StopLoss',
      managed: true,
      parentCloid: cloid(5),
    });
    expect(v.outcome(events)).toMatchObject({
      ok: false,
      code: 4000,
      message:
        'INVALID_REQUEST: managed StopLoss order must reduce position (opposite side required): its entry order is a Buy',
    });
    expect(v.reports(events, A).map((r) => `${r.kind}:${(r as OrderReport).order.reason}`)).toEqual(
      ['OrderRejected:ReduceOnly'],
    );
  });
});

describe('placement limits at their boundary', () => {
  // Mutation: `openInterest + increase <= cap` -> `<` (an order reaching the cap exactly refused).
  it('accepts an order that takes open interest exactly to the cap, refuses one lot more (4103)', () => {
    v.list({ ...BTC_SETTINGS, openInterestCap: '1' });
    expect(v.outcome(v.place(A, BTC, { side: 'Buy', qty: '1.001', price: '64000' }))).toMatchObject(
      { ok: false, code: 4103 },
    );
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000' }));
  });

  // Mutation: the managed exemption from the minimum notional dropped (only a reduce-only order
  // closing the whole position would be exempt; a child of an entry closes what the entry fills).
  it('accepts a managed child below the minimum notional: it closes whatever its entry fills', () => {
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '0.002', price: '4000', cloid: cloid(6) }));
    // 0.002 x 2,000 = 4 USD, below the 5 USD minimum.
    const child = v.place(A, BTC, {
      side: 'Sell',
      qty: '0.002',
      price: '2000',
      trigger: '3000',
      type: 'StopLoss',
      managed: true,
      parentCloid: cloid(6),
    });
    v.expectOk(child);
  });

  // Mutation: an amend's open-interest check measured against 0 instead of the order it replaces.
  it('lets an amend that opens no more than before through after the cap was lowered', () => {
    const id = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000' }));
    v.list({ ...BTC_SETTINGS, openInterestCap: '0.5' });
    v.expectOk(replace(A, id, '63500', '1'));
    v.expectOk(replace(A, id, '63500', '0.8'));
    expect(v.outcome(replace(A, id, '63500', '0.9'))).toMatchObject({ ok: false, code: 4103 });
  });

  // Mutation: the "no mark yet" refusal of a market-style trigger order dropped (its minimum
  // notional is measured at the mark).
  it('refuses a market-style stop for part of a position before the market has a mark (4032)', () => {
    const fresh = new TestVenue({ checkPurity: true });
    fresh.list(BTC_SETTINGS);
    for (const w of [A, B]) {
      fresh.open(w);
      fresh.fund(w, '1000000');
    }
    fresh.expectOk(fresh.place(B, BTC, { side: 'Sell', qty: '2', price: '64000' }));
    fresh.expectOk(fresh.place(A, BTC, { side: 'Buy', qty: '2', price: '64000' }));
    expect(fresh.state.markets.get(1)!.prices.mark).toBeNull();
    const events = fresh.place(A, BTC, {
      side: 'Sell',
      qty: '1',
      trigger: '60000',
      type: 'StopLoss',
    });
    expect(fresh.outcome(events)).toMatchObject({
      ok: false,
      code: 4032,
      message:
        'INVALID_ORDER_PRICE: no mark price for BTC-PERP yet; a market-style trigger order needs one',
    });
    expect(fresh.reports(events, A).map((r) => (r as OrderReport).order.reason)).toEqual([
      'PriceBand',
    ]);
  });
});
