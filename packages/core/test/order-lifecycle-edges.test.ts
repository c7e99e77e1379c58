/**
 * Order rules that mutation testing of the order code found unpinned: cancel and cancelAll
 * refusals, the 24 h cloid reservation at its boundary and past it, and trigger edges. Each case
 * fails with the mutation it is named after (see the commit that added it).
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { EngineEvent, OrderReport } from '../src/index.js';
import { sizeOf } from '../src/margin/scope.js';
import {
  BTC_SETTINGS,
  cloid,
  type OrderSpec,
  px,
  type TestVenue,
  wallet,
} from '../src/testing/index.js';
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

describe('field validation of order types and flags (nothing changes, no nonce consumed)', () => {
  const bad = (order: OrderSpec, code: number, message: string, time?: number) => {
    const before = v.state;
    const events = v.place(A, BTC, order, time === undefined ? {} : { time });
    expect(v.outcome(events)).toMatchObject({ ok: false, code, message, nonceConsumed: false });
    expect(v.reports(events)).toHaveLength(0);
    expect(v.state.orders).toBe(before.orders);
  };

  it('refuses an off-tick limit price on a TakeProfit or StopLoss with 4032', () => {
    for (const type of ['TakeProfit', 'StopLoss'] as const) {
      bad(
        { side: 'Sell', qty: '1', price: '66000.25', trigger: '66000', type },
        4032,
        'INVALID_ORDER_PRICE: price 66000.25 is not a multiple of the tick size 0.5',
      );
    }
  });

  it('refuses the managed flag on a Limit or StopLimit with 4000', () => {
    bad(
      { side: 'Buy', qty: '1', price: '64000', managed: true },
      4000,
      'INVALID_REQUEST: only StopLoss and TakeProfit orders can be managed',
    );
    bad(
      { side: 'Buy', qty: '1', price: '66000', trigger: '65500', type: 'StopLimit', managed: true },
      4000,
      'INVALID_REQUEST: only StopLoss and TakeProfit orders can be managed',
    );
  });

  it('refuses a parentCloid on an order that is not a managed TP/SL with 4000', () => {
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(1) }));
    bad(
      { side: 'Sell', qty: '1', trigger: '60000', type: 'StopLoss', parentCloid: cloid(1) },
      4000,
      'INVALID_REQUEST: parentCloid is only valid on a managed TP/SL',
    );
  });

  it('refuses a malformed parentCloid with 4000 naming the field', () => {
    bad(
      {
        side: 'Sell',
        qty: '1',
        trigger: '60000',
        type: 'StopLoss',
        managed: true,
        parentCloid: '0x12',
      },
      4000,
      'INVALID_REQUEST: parentCloid must be 0x followed by 32 lowercase hex digits',
    );
  });

  it('refuses post-only on an IOC, a FOK or a trigger order with 4031', () => {
    const message =
      'INVALID_TIME_IN_FORCE: post-only needs a resting Limit order (GTC, GTD or DAY)';
    for (const tif of ['IOC', 'FOK'] as const) {
      bad({ side: 'Buy', qty: '1', price: '64000', postOnly: true, tif }, 4031, message);
    }
    bad(
      {
        side: 'Buy',
        qty: '1',
        price: '66000',
        trigger: '65500',
        type: 'StopLimit',
        postOnly: true,
      },
      4031,
      message,
    );
  });

  it('refuses a GTD expiry equal to the command time with 4031: it must be in the future', () => {
    const t = (Math.floor(v.time / 1000) + 5) * 1000;
    bad(
      { side: 'Buy', qty: '1', price: '64000', tif: 'GTD', expiry: t / 1000 },
      4031,
      'INVALID_TIME_IN_FORCE: GTD expiry must be in the future',
      t,
    );
    // One second later it is accepted.
    v.expectOk(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', tif: 'GTD', expiry: t / 1000 + 1 }),
    );
  });
});

describe('cancel and cancelAll refusals', () => {
  it('refuses a cancel naming neither orderId nor cloid with 4000, nonce not consumed', () => {
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000' });
    const before = v.state;
    const o = v.outcome(
      v.run({ type: 'cancelOrder', account: A, market: 1, orderId: 0n, cloid: null }),
    );
    expect(o).toMatchObject({
      ok: false,
      code: 4000,
      message: 'INVALID_REQUEST: exactly one of orderId and cloid must be set',
      nonceConsumed: false,
    });
    expect(v.state).toBe(before);
  });

  it('refuses cancel and cancelAll from a wallet without an account with 4040', () => {
    const stranger = wallet(0xdead);
    const before = v.state;
    for (const cmd of [
      { type: 'cancelOrder', account: stranger, market: 1, orderId: 1n, cloid: null },
      { type: 'cancelAll', account: stranger, market: 0 },
    ] as const) {
      const o = v.outcome(v.run(cmd));
      expect(o.ok ? 0 : o.code).toBe(4040);
      expect(o.ok ? true : o.nonceConsumed).toBe(false);
    }
    expect(v.state).toBe(before);
  });

  it('a 4041 names the order it was asked for, by id or by cloid (api-conventions: the error carries orderId and cloid)', () => {
    expect(v.outcome(v.cancel(A, BTC, { orderId: 424_242 }))).toMatchObject({
      ok: false,
      code: 4041,
      orderId: 424_242,
      cloid: null,
    });
    expect(v.outcome(v.cancel(A, BTC, { cloid: cloid(77) }))).toMatchObject({
      ok: false,
      code: 4041,
      cloid: cloid(77),
    });
  });

  it('refuses cancelAll in an unknown market with 4000 and cancels nothing', () => {
    const id = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000' }));
    const before = v.state;
    const o = v.outcome(v.run({ type: 'cancelAll', account: A, market: 9 }));
    expect(o).toMatchObject({
      ok: false,
      code: 4000,
      message: 'INVALID_REQUEST: unknown market 9',
    });
    expect(v.state).toBe(before);
    expect(v.state.orders.has(id)).toBe(true);
  });

  it('cancelAll ends an entry (User) and its managed child (ParentCancelled) once each', () => {
    const entry = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(5) }),
    );
    const child = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        trigger: '60000',
        type: 'StopLoss',
        managed: true,
        parentCloid: cloid(5),
      }),
    );
    const events = v.run({ type: 'cancelAll', account: A, market: 0 });
    expect(v.outcome(events).ok).toBe(true);
    expect(kinds(events, A)).toEqual([
      `OrderCancelled:User#${entry}`,
      `OrderCancelled:ParentCancelled#${child}`,
    ]);
    expect(v.state.accounts.get(A)!.orders.size).toBe(0);
  });
});

describe('cloid reservation at and past 24 h', () => {
  const key = (n: number) => `${A}|${cloid(n)}`;

  it('frees a cloid exactly 24 h after its order was accepted, not 1 ms before', () => {
    const t = v.time + 1;
    const id = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(3) }, { time: t }),
    );
    v.cancel(A, BTC, { orderId: id });
    const early = v.outcome(
      v.place(
        A,
        BTC,
        { side: 'Buy', qty: '1', price: '64000', cloid: cloid(3) },
        { time: t + DAY_MS - 1 },
      ),
    );
    expect(early.ok ? '' : early.message).toContain(`already used by order ${id}`);
    const onTime = v.outcome(
      v.place(
        A,
        BTC,
        { side: 'Buy', qty: '1', price: '64000', cloid: cloid(3) },
        { time: t + DAY_MS },
      ),
    );
    expect(onTime.ok).toBe(true);
  });

  it('a superseded cloid is reserved 24 h, then free though its order still works', () => {
    const id = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '2', price: '64000', cloid: cloid(1) }),
    );
    v.expectOk(
      v.run({
        type: 'replaceOrder',
        account: A,
        market: 1,
        orderId: BigInt(id),
        origCloid: null,
        price: px('64000'),
        triggerPrice: 0n,
        quantity: 20_000n,
        cloid: cloid(2),
      }),
    );
    v.advance(DAY_MS);
    const reuse = v.place(A, BTC, { side: 'Buy', qty: '1', price: '63000', cloid: cloid(1) });
    expect(v.outcome(reuse).ok).toBe(true);
    expect(v.state.orders.get(id)?.cloid).toBe(cloid(2));
  });

  it('a cloid superseded after its 24 h forgets it at once (the index does not keep it forever)', () => {
    const id = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '2', price: '64000', cloid: cloid(5) }),
    );
    v.advance(DAY_MS + 60_000);
    // The order still holds cloid 5 past its retention; a replace gives it cloid 6.
    v.expectOk(
      v.run({
        type: 'replaceOrder',
        account: A,
        market: 1,
        orderId: BigInt(id),
        origCloid: null,
        price: px('64000'),
        triggerPrice: 0n,
        quantity: 20_000n,
        cloid: cloid(6),
      }),
    );
    // Nothing would ever prune cloid 5 later (its log entry went at 24 h, and the order's end
    // releases only its current cloid): the replace lets it go, as an order's end would.
    expect(v.state.cloids.get(key(5))).toBeUndefined();
    expect(v.state.cloids.get(key(6))?.orderId).toBe(id);
    expect(
      v.outcome(v.place(A, BTC, { side: 'Buy', qty: '1', price: '63000', cloid: cloid(5) })).ok,
    ).toBe(true);
  });

  it('an order working past 24 h keeps its cloid; when it ends the index forgets it', () => {
    const id = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(4) }),
    );
    v.advance(DAY_MS + 60_000);
    const dup = v.outcome(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(4) }),
    );
    expect(dup.ok ? '' : dup.message).toContain(`already used by order ${id}`);
    expect(v.state.cloids.get(key(4))?.orderId).toBe(id);
    const cancel = v.outcome(v.cancel(A, BTC, { cloid: cloid(4) }));
    expect(cancel.ok && 'order' in cancel ? cancel.order.orderId : 0).toBe(id);
    // Its retention ran out while it worked: nothing is left to reserve.
    expect(v.state.cloids.get(key(4))).toBeUndefined();
    expect(
      v.outcome(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(4) })).ok,
    ).toBe(true);
  });
});

describe('trigger edges (mark price)', () => {
  it('refuses a trigger the mark sits exactly on: it is already satisfied (4032)', () => {
    // A long of 1 for the take-profit.
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' });
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000', tif: 'IOC' });
    v.oracle({ [BTC]: '65000' });
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('65000'));
    const refused = (events: readonly EngineEvent[]) => {
      const o = v.outcome(events);
      expect(o.ok ? 0 : o.code).toBe(4032);
      expect((v.reports(events, A)[0] as OrderReport).order.reason).toBe('PriceBand');
    };
    // Buy stop (fires at M >= trigger), sell stop (M <= trigger), sell take-profit (M >= trigger).
    refused(
      v.place(A, BTC, {
        side: 'Buy',
        qty: '1',
        price: '66000',
        trigger: '65000',
        type: 'StopLimit',
      }),
    );
    refused(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        price: '64000',
        trigger: '65000',
        type: 'StopLimit',
      }),
    );
    refused(v.place(A, BTC, { side: 'Sell', qty: '1', trigger: '65000', type: 'TakeProfit' }));
    refused(v.place(A, BTC, { side: 'Sell', qty: '1', trigger: '65000', type: 'StopLoss' }));
  });
  it('orders that one mark move fires execute oldest first, whichever trigger is nearer', () => {
    // A's stop is older; B's newer stop has the trigger the falling mark reaches first.
    const older = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        price: '60000',
        trigger: '64000',
        type: 'StopLimit',
      }),
    );
    const newer = orderIdOf(
      v.place(B, BTC, {
        side: 'Sell',
        qty: '1',
        price: '60000',
        trigger: '64500',
        type: 'StopLimit',
      }),
    );
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '63000' }));
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '62000' }));
    // mark = mean(64,000, bid 63,000) = 63,500: both fire.
    const fired = v.oracle({ [BTC]: '64000' });
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('63500'));
    const fills = v
      .reports(fired)
      .filter((r): r is OrderReport => 'fill' in r && r.fill?.liquidity === 'Taker')
      .map((r) => [r.order.orderId, r.fill!.price]);
    expect(fills).toEqual([
      [older, px('63000')],
      [newer, px('62000')],
    ]);
  });
  it('a mark that rises to one of two buy stops fires that one only; the other waits', () => {
    const near = orderIdOf(
      v.place(B, BTC, {
        side: 'Buy',
        qty: '1',
        price: '66500',
        trigger: '65500',
        type: 'StopLimit',
      }),
    );
    const far = orderIdOf(
      v.place(A, BTC, {
        side: 'Buy',
        qty: '1',
        price: '66500',
        trigger: '66000',
        type: 'StopLimit',
      }),
    );
    const first = v.oracle({ [BTC]: '65600' });
    expect(kinds(first, B)).toEqual([`OrderTriggered#${near}`]);
    expect(kinds(first, A)).toEqual([]);
    expect(v.state.orders.get(far)?.ordStatus).toBe('Untriggered');
    // mark = mean(66,000, bid 66,500) = 66,250
    expect(kinds(v.oracle({ [BTC]: '66000' }), A)).toEqual([`OrderTriggered#${far}`]);
  });

  for (const [type, trigger, index] of [
    ['StopLoss', '60000', '56000'],
    ['TakeProfit', '70000', '76000'],
  ] as const) {
    it(`a managed ${type} armed by its entry's fill fires in that command when the mark is exactly at its trigger`, () => {
      v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(6) }));
      const child = orderIdOf(
        v.place(A, BTC, {
          side: 'Sell',
          qty: '1',
          trigger,
          type,
          managed: true,
          parentCloid: cloid(6),
        }),
      );
      // Unarmed, the child ignores the mark reaching its trigger: mean(index, bid 64,000).
      expect(kinds(v.oracle({ [BTC]: index }), A)).toEqual([]);
      expect(v.state.markets.get(1)!.prices.mark).toBe(px(trigger));
      const fill = v.place(C, BTC, { side: 'Sell', qty: '1', price: '64000' });
      expect(v.state.markets.get(1)!.prices.mark).toBe(px(trigger));
      expect(kinds(fill, A)).toContain(`OrderTriggered#${child}`);
    });
  }
});

describe('a trigger order re-checked when it fires', () => {
  /**
   * A rests a buy entry of 2 at 64,000 with a market-style managed StopLoss; C fills 1 of it
   * (the child arms, sized 1), then A sells `close` at B's 64,500 bid while the entry still works.
   */
  const armedChildThenSell = (close: string) => {
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '2', price: '64000', cloid: cloid(9) }));
    const child = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '2',
        trigger: '60000',
        type: 'StopLoss',
        managed: true,
        parentCloid: cloid(9),
      }),
    );
    v.expectOk(v.place(C, BTC, { side: 'Sell', qty: '1', price: '64000' }));
    expect(v.state.orders.get(child)).toMatchObject({ armed: true, quantity: 10_000n });
    v.expectOk(v.place(B, BTC, { side: 'Buy', qty: close, price: '64500' }));
    v.expectOk(v.place(A, BTC, { side: 'Sell', qty: close, price: '64500', tif: 'IOC' }));
    return child;
  };

  it('an armed child whose position closed meanwhile is cancelled PositionClosed, no fill', () => {
    const child = armedChildThenSell('1');
    expect(sizeOf(v.state.accounts.get(A)!, 1, 'Cross')).toBe(0n);
    // mark = mean(55,000, median(bid 64,000, last 64,500)) = 59,625 <= 60,000
    const fired = v.oracle({ [BTC]: '55000' });
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('59625'));
    expect(kinds(fired, A)).toEqual([
      `OrderTriggered#${child}`,
      `OrderCancelled:PositionClosed#${child}`,
    ]);
  });

  it('an armed child whose position flipped to its side is cancelled ReduceOnly, no fill', () => {
    const child = armedChildThenSell('2');
    expect(sizeOf(v.state.accounts.get(A)!, 1, 'Cross')).toBe(-10_000n);
    const fired = v.oracle({ [BTC]: '55000' });
    expect(kinds(fired, A)).toEqual([
      `OrderTriggered#${child}`,
      `OrderCancelled:ReduceOnly#${child}`,
    ]);
  });

  it('a StopLimit whose hold no longer fits when it fires is cancelled InsufficientMargin', () => {
    const D = wallet(0xd);
    v.open(D);
    v.fund(D, '1000');
    // Hold 0.1 x 66,000 / 10 = 660 of 1,000 when placed.
    const stop = orderIdOf(
      v.place(D, BTC, {
        side: 'Buy',
        qty: '0.1',
        price: '66000',
        trigger: '65500',
        type: 'StopLimit',
      }),
    );
    // A resting bid then holds 640: 360 is left, less than the stop's 660 once it works.
    v.expectOk(v.place(D, BTC, { side: 'Buy', qty: '0.1', price: '64000' }));
    // mark = mean(67,000, bid 64,000) = 65,500
    const fired = v.oracle({ [BTC]: '67000' });
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('65500'));
    expect(kinds(fired, D)).toEqual([
      `OrderTriggered#${stop}`,
      `OrderCancelled:InsufficientMargin#${stop}`,
    ]);
    expect(v.state.markets.get(1)!.bids).toHaveLength(1);
  });

  it('a closing StopLimit fires and trades even with open interest above a lowered cap', () => {
    // A long 1 against B: open interest 1. The operator then lowers the cap to 0.5.
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' }));
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000', tif: 'IOC' }));
    const stop = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        price: '64000',
        trigger: '64500',
        type: 'StopLimit',
      }),
    );
    v.list({ ...BTC_SETTINGS, openInterestCap: '0.5' });
    expect(v.state.markets.get(1)!.openInterest).toBe(10_000n);
    // B closes its short with a bid: neither side of the coming trade increases.
    v.expectOk(v.place(B, BTC, { side: 'Buy', qty: '1', price: '64000' }));
    // No increasing part: the cap has nothing to refuse (engine-rules 5).
    const fired = v.oracle({ [BTC]: '64000' });
    expect(kinds(fired, A)).toEqual([`OrderTriggered#${stop}`, `OrderFilled#${stop}`]);
    expect(v.state.markets.get(1)!.openInterest).toBe(0n);
  });
});

describe('managed TP/SL follow-ups when an order ends', () => {
  /**
   * A rests a sell entry of 2 at 66,000 with a managed buy StopLoss; C fills 1 (A short 1, the
   * child arms), then A buys `cover` from B's 65,500 ask while the entry still works, and
   * finally cancels the entry, which ended with fills.
   */
  const cancelEntryAfterCover = (cover: string) => {
    const entry = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '2', price: '66000', cloid: cloid(8) }),
    );
    const child = orderIdOf(
      v.place(A, BTC, {
        side: 'Buy',
        qty: '2',
        trigger: '70000',
        type: 'StopLoss',
        managed: true,
        parentCloid: cloid(8),
      }),
    );
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '66000' }));
    expect(v.state.orders.get(child)?.armed).toBe(true);
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: cover, price: '65500' }));
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: cover, price: '65500', tif: 'IOC' }));
    expect(v.state.orders.has(child)).toBe(true); // the entry still works
    return { entry, child, cancelled: v.cancel(A, BTC, { orderId: entry }) };
  };

  it('a buy child of a sell entry goes (PositionClosed) when the short closed meanwhile', () => {
    const { entry, child, cancelled } = cancelEntryAfterCover('1');
    expect(kinds(cancelled, A)).toEqual([
      `OrderCancelled:User#${entry}`,
      `OrderCancelled:PositionClosed#${child}`,
    ]);
  });

  it('a buy child of a sell entry goes (PositionClosed) when the position turned long', () => {
    const { entry, child, cancelled } = cancelEntryAfterCover('2');
    expect(sizeOf(v.state.accounts.get(A)!, 1, 'Cross')).toBe(10_000n);
    expect(kinds(cancelled, A)).toEqual([
      `OrderCancelled:User#${entry}`,
      `OrderCancelled:PositionClosed#${child}`,
    ]);
  });

  it('an entry that fills as the taker (an amend that crosses) arms its child, sized by the fill', () => {
    const entry = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '2', price: '64000', cloid: cloid(12) }),
    );
    const child = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '2',
        trigger: '60000',
        type: 'StopLoss',
        managed: true,
        parentCloid: cloid(12),
      }),
    );
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' }));
    v.expectOk(
      v.run({
        type: 'replaceOrder',
        account: A,
        market: 1,
        orderId: BigInt(entry),
        origCloid: null,
        price: px('65000'),
        triggerPrice: 0n,
        quantity: 20_000n,
        cloid: null,
      }),
    );
    expect(v.state.orders.get(entry)?.cumQty).toBe(10_000n);
    expect(v.state.orders.get(child)).toMatchObject({ armed: true, quantity: 10_000n });
  });

  /** A long 1 with a managed take-profit at 70,000 and stop-loss at 60,000. */
  const longWithPair = () => {
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' }));
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000', tif: 'IOC' }));
    const tp = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        trigger: '70000',
        type: 'TakeProfit',
        managed: true,
      }),
    );
    const sl = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        trigger: '60000',
        type: 'StopLoss',
        managed: true,
      }),
    );
    return { tp, sl };
  };

  it('cancelling one of a TP/SL pair leaves the other: only a fill cancels the sibling', () => {
    const { tp, sl } = longWithPair();
    const cancelled = v.cancel(A, BTC, { orderId: tp });
    expect(kinds(cancelled, A)).toEqual([`OrderCancelled:User#${tp}`]);
    expect(v.state.orders.get(sl)?.ordStatus).toBe('Untriggered');
  });

  it('a filled take-profit cancels its stop-loss (SiblingFilled); a second take-profit goes with the position', () => {
    const { tp, sl } = longWithPair();
    const tp2 = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        trigger: '72000',
        type: 'TakeProfit',
        managed: true,
      }),
    );
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '69000' }));
    // mark = mean(73,000, median(bid 69,000, last 65,000)) = 70,000: the first TP only.
    const fired = v.oracle({ [BTC]: '73000' });
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('70000'));
    expect(kinds(fired, A)).toEqual([
      `OrderTriggered#${tp}`,
      `OrderFilled#${tp}`,
      `OrderCancelled:SiblingFilled#${sl}`,
      `OrderCancelled:PositionClosed#${tp2}`,
    ]);
  });
});

describe('a reduce-only maker at match time', () => {
  it('is cancelled PositionClosed when an earlier fill of the same taker closed its position', () => {
    // A long 1 rests a plain sell of 1 and, behind it at the same price, a reduce-only sell of 1.
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' }));
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000', tif: 'IOC' }));
    const plain = orderIdOf(v.place(A, BTC, { side: 'Sell', qty: '1', price: '66000' }));
    const ro = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1', price: '66000', reduceOnly: true }),
    );
    const events = v.place(C, BTC, { side: 'Buy', qty: '2', price: '66000', tif: 'IOC' });
    expect(kinds(events, A)).toEqual([
      `OrderFilled#${plain}`,
      `OrderCancelled:PositionClosed#${ro}`,
    ]);
  });
});

describe('a maker fill that closes its position exactly', () => {
  it('is held only to solvency, not to initial margin, though resting orders hold more than the equity left', () => {
    // D, funded 20,000, goes long 2 at 65,000 (10x: 13,000 initial margin) with a resting buy
    // at 50,000 holding 5,000 more; the mark falls to 56,000, leaving about 1,900 of equity,
    // above maintenance.
    const D = wallet(0xd);
    v.open(D);
    v.fund(D, '20000');
    v.place(B, BTC, { side: 'Sell', qty: '2', price: '65000' });
    v.expectOk(v.place(D, BTC, { side: 'Buy', qty: '2', price: '65000' }));
    v.expectOk(v.place(D, BTC, { side: 'Buy', qty: '1', price: '50000' }));
    expect(v.reports(v.oracle({ [BTC]: '56000' }), D)).toEqual([]);
    const close = orderIdOf(
      v.place(D, BTC, { side: 'Sell', qty: '2', price: '56000', reduceOnly: true }),
    );
    // C takes it: the close leaves D flat with less equity than the resting buy holds, so an
    // opening fill would fail initial margin; a close must still go through.
    const events = v.place(C, BTC, { side: 'Buy', qty: '2', price: '56000' });
    expect(kinds(events, D)).toEqual([`OrderFilled#${close}`]);
    expect(sizeOf(v.state.accounts.get(D)!, 1, 'Cross')).toBe(0n);
  });
});
