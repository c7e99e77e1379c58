/**
 * Order rules that mutation testing of managed.ts, place.ts and book/levels.ts found unpinned:
 * how reduce-only and managed orders follow their position, and placement edges. Each case fails
 * with the mutation named in the commit that added it and passes on the current code.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import {
  depthOf,
  type EngineEvent,
  type OrderReplacedReport,
  type OrderReport,
} from '../src/index.js';
import { sizeOf } from '../src/margin/scope.js';
import { cloid, px, type TestVenue, wallet } from '../src/testing/index.js';
import { btcOrderVenue, kinds, orderIdOf } from './order-events.js';

const BTC = 'BTC-PERP';
const A = wallet(0xa);
const B = wallet(0xb);
const C = wallet(0xc);

let v: TestVenue;

// Every wallet is funded 1,000,000 USD: margin never limits these cases.
beforeEach(() => {
  v = btcOrderVenue();
});

/** A goes long `qty` at 65,000 (B sells). */
function goLong(qty: string): void {
  v.expectOk(v.place(B, BTC, { side: 'Sell', qty, price: '65000' }));
  v.expectOk(v.place(A, BTC, { side: 'Buy', qty, price: '65000', tif: 'IOC' }));
}

/** A sells `qty` at 64,000 into C's bid. */
function sellToC(qty: string): EngineEvent[] {
  v.expectOk(v.place(C, BTC, { side: 'Buy', qty, price: '64000' }));
  const events = v.place(A, BTC, { side: 'Sell', qty, price: '64000', tif: 'IOC' });
  v.expectOk(events);
  return events;
}

describe('orders that follow a position when it changes', () => {
  it('a flip to the side of its orders ends a managed stop-loss PositionClosed and a reduce-only sell ReduceOnly', () => {
    goLong('1');
    const sl = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        trigger: '60000',
        type: 'StopLoss',
        managed: true,
      }),
    );
    const ro = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1', price: '70000', reduceOnly: true }),
    );
    const flip = sellToC('2');
    expect(sizeOf(v.state.accounts.get(A)!, 1, 'Cross')).toBe(-10_000n);
    expect(kinds(flip, A)).toContain(`OrderCancelled:PositionClosed#${sl}`);
    expect(kinds(flip, A)).toContain(`OrderCancelled:ReduceOnly#${ro}`);
  });

  it('the re-clamp keeps a working order before a take-profit triggering at the same price', () => {
    goLong('2');
    const tp = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1', trigger: '70000', type: 'TakeProfit' }),
    );
    const limit = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1', price: '70000', reduceOnly: true }),
    );
    const shrink = sellToC('1');
    expect(kinds(shrink, A)).toContain(`OrderCancelled:ReduceOnly#${tp}`);
    expect(v.state.orders.get(limit)?.quantity).toBe(10_000n);
  });

  it('a stop that fires and rests is re-clamped with the reduce-only orders only: a managed take-profit keeps its size', () => {
    goLong('2');
    const managed = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '2',
        trigger: '70000',
        type: 'TakeProfit',
        managed: true,
      }),
    );
    const stop = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        trigger: '62000',
        price: '61000',
        type: 'StopLoss',
      }),
    );
    // mark = mean(59,000, last 65,000) = 62,000: the plain stop fires, finds no bid and rests
    // at 61,000, where it joins the upward sweep of the managed take-profit (70,000), which is
    // not clamped: it stays sized to the whole position.
    const fired = v.oracle({ [BTC]: '59000' });
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('62000'));
    expect(kinds(fired, A)).toEqual([`OrderTriggered#${stop}`]);
    expect(v.state.orders.get(stop)).toMatchObject({ ordStatus: 'New', quantity: 10_000n });
    expect(v.state.orders.get(managed)).toMatchObject({
      ordStatus: 'Untriggered',
      quantity: 20_000n,
    });
  });

  it('an isolated position that closes ends its own reduce-only orders, not those of the cross position', () => {
    v.fund(A, '100000', BTC);
    goLong('1');
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' }));
    v.expectOk(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000', tif: 'IOC', isolated: true }),
    );
    const cross = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1', price: '70000', reduceOnly: true }),
    );
    const isolated = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1', price: '71000', reduceOnly: true, isolated: true }),
    );
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '64000' }));
    const close = v.place(A, BTC, {
      side: 'Sell',
      qty: '1',
      price: '64000',
      tif: 'IOC',
      isolated: true,
    });
    expect(sizeOf(v.state.accounts.get(A)!, 1, 'Isolated')).toBe(0n);
    expect(kinds(close, A)).toContain(`OrderCancelled:PositionClosed#${isolated}`);
    expect(v.state.orders.get(cross)).toMatchObject({ ordStatus: 'New', quantity: 10_000n });
  });

  it('a market-style stop that partly fills is left out of the re-clamp: the take-profit keeps the whole new position', () => {
    goLong('2');
    const tp = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '2', trigger: '70000', type: 'TakeProfit' }),
    );
    const stop = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1', trigger: '62000', type: 'StopLoss' }),
    );
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '0.5', price: '61500' }));
    // mark = mean(60,750, median(bid 61,500, last 65,000)) = 62,000: the stop fires, sells 0.5
    // to C (its limit is 10% under the mark) and its remainder is cancelled NoLiquidity. Working, it
    // would have joined the take-profit's upward sweep.
    const fired = v.oracle({ [BTC]: '60750' });
    expect(fired).toContainEqual(
      expect.objectContaining({ type: 'markChanged', mark: px('62000') }),
    );
    expect(sizeOf(v.state.accounts.get(A)!, 1, 'Cross')).toBe(15_000n);
    expect(kinds(fired, A)).toContain(`OrderCancelled:NoLiquidity#${stop}`);
    expect(v.state.orders.get(tp)?.quantity).toBe(15_000n);
  });

  it('a market-style stop placed IOC or FOK ends as its time in force says, not NoLiquidity', () => {
    goLong('2');
    const ioc = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1', trigger: '62000', type: 'StopLoss', tif: 'IOC' }),
    );
    const fok = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1', trigger: '62000', type: 'StopLoss', tif: 'FOK' }),
    );
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '0.5', price: '61500' }));
    const fired = v.oracle({ [BTC]: '60750' });
    const ended = kinds(fired, A).filter((k) => k.startsWith('OrderCancelled'));
    // Both fire at mark 62,000; the IOC one sells the 0.5 bid and its remainder ends IOC, the FOK
    // one finds no whole fill and ends FOK with nothing filled.
    expect(ended.sort()).toEqual([`OrderCancelled:FOK#${fok}`, `OrderCancelled:IOC#${ioc}`].sort());
    expect(sizeOf(v.state.accounts.get(A)!, 1, 'Cross')).toBe(15_000n);
  });

  it('a shrink by the re-clamp is an amend at the command time (OrderReplaced, reason ReduceOnly)', () => {
    goLong('2');
    const limit = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '2', price: '70000', reduceOnly: true }),
    );
    const shrink = sellToC('1');
    const replaced = v
      .reports(shrink, A)
      .find((r): r is OrderReport => r.kind === 'OrderReplaced' && r.order.orderId === limit);
    expect(replaced?.order).toMatchObject({
      reason: 'ReduceOnly',
      quantity: 10_000n,
      updatedTime: v.time,
    });
    expect(v.state.orders.get(limit)?.updatedTime).toBe(v.time);
  });

  it('of two take-profits at the same trigger the re-clamp keeps the older', () => {
    goLong('2');
    const older = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1', trigger: '70000', type: 'TakeProfit' }),
    );
    const newer = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1', trigger: '70000', type: 'TakeProfit' }),
    );
    const shrink = sellToC('1');
    expect(kinds(shrink, A)).toContain(`OrderCancelled:ReduceOnly#${newer}`);
    expect(v.state.orders.get(older)?.quantity).toBe(10_000n);
  });

  it('a fired stop about to rest goes behind a resting reduce-only sell at its price in the re-clamp', () => {
    goLong('2');
    const resting = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1.5', price: '61000', reduceOnly: true }),
    );
    const stop = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        trigger: '62000',
        price: '61000',
        type: 'StopLoss',
      }),
    );
    // mark = mean(61,000, median(ask 61,000, last 65,000)) = 62,000: the stop fires, finds no
    // bid and joins the resting sell's level (upward sweep 2.5 of a 2 position).
    const fired = v.oracle({ [BTC]: '61000' });
    expect(fired).toContainEqual(
      expect.objectContaining({ type: 'markChanged', mark: px('62000') }),
    );
    expect(v.state.orders.get(resting)?.quantity).toBe(15_000n);
    expect(v.state.orders.get(stop)).toMatchObject({ ordStatus: 'New', quantity: 5_000n });
  });

  it('a fired stop that the re-clamp leaves no room is cancelled ReduceOnly instead of resting', () => {
    goLong('2');
    const resting = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '2', price: '61000', reduceOnly: true }),
    );
    const stop = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        trigger: '62000',
        price: '61500',
        type: 'StopLoss',
      }),
    );
    // mark = mean(61,000, median(ask 61,000, last 65,000)) = 62,000: the stop fires and, finding
    // no bid, would rest at 61,500, behind the resting sell that already closes the position.
    const fired = v.oracle({ [BTC]: '61000' });
    expect(fired).toContainEqual(
      expect.objectContaining({ type: 'markChanged', mark: px('62000') }),
    );
    expect(kinds(fired, A)).toEqual([
      `OrderTriggered#${stop}`,
      `OrderCancelled:ReduceOnly#${stop}`,
    ]);
    expect(v.state.orders.has(stop)).toBe(false);
    expect(v.state.orders.get(resting)?.quantity).toBe(20_000n);
    expect(v.state.markets.get(1)!.asks.map((l) => [l.price, l.quantity])).toEqual([
      [px('61000'), 20_000n],
    ]);
  });
});

/** The `OrderReplaced` reports of `events` for `orderId`. */
function replacedOf(events: readonly EngineEvent[], orderId: number): OrderReplacedReport[] {
  return v
    .reports(events, A)
    .filter(
      (r): r is OrderReplacedReport => r.kind === 'OrderReplaced' && r.order.orderId === orderId,
    );
}

// A triggered stop that partly fills and rests changes its scope's position and joins a sweep
// in the same step: its scope is re-clamped once, with it in, so each order it cuts is amended
// (or cancelled) by one report whose `previous` is what the client last saw.
describe('a stop that fires, partly fills and rests re-clamps its scope once', () => {
  it('a take-profit the fill and the resting stop both cut is amended once, from its size before', () => {
    goLong('3');
    const tp = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '3', trigger: '70000', type: 'TakeProfit' }),
    );
    const stop = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '2',
        trigger: '62000',
        price: '61000',
        type: 'StopLoss',
      }),
    );
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '61500' }));
    // mark = mean(59,000, median(bid 61,500, last 65,000) 63,250) = 61,125: the stop fires,
    // sells 1 to C (position 2) and rests 1 at 61,000, nearer than the take-profit, which keeps
    // the 1 left of the upward sweep.
    const fired = v.oracle({ [BTC]: '59000' });
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('61125'));
    expect(kinds(fired, A)).toEqual([
      `OrderTriggered#${stop}`,
      `OrderPartiallyFilled#${stop}`,
      `OrderReplaced:ReduceOnly#${tp}`,
    ]);
    const [replaced] = replacedOf(fired, tp);
    expect(replaced!.previous.quantity).toBe(30_000n);
    expect(replaced!.order).toMatchObject({ quantity: 10_000n, cumQty: 0n });
    expect(v.state.orders.get(tp)).toMatchObject({ ordStatus: 'Untriggered', quantity: 10_000n });
    expect(v.state.orders.get(stop)).toMatchObject({ quantity: 20_000n, cumQty: 10_000n });
  });

  it('a take-profit the resting stop leaves no room is cancelled, not first shrunk', () => {
    goLong('3');
    const near = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1', trigger: '70000', type: 'TakeProfit' }),
    );
    const far = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '2', trigger: '71000', type: 'TakeProfit' }),
    );
    const stop = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '2',
        trigger: '62000',
        price: '61000',
        type: 'StopLimit',
        reduceOnly: true,
      }),
    );
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '61500' }));
    // mark 61,125 as above: the stop sells 1 (position 2) and rests 1; the upward sweep keeps
    // the stop's 1 and the nearer take-profit's 1.
    const fired = v.oracle({ [BTC]: '59000' });
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('61125'));
    expect(kinds(fired, A)).toEqual([
      `OrderTriggered#${stop}`,
      `OrderPartiallyFilled#${stop}`,
      `OrderCancelled:ReduceOnly#${far}`,
    ]);
    expect(v.state.orders.get(near)?.quantity).toBe(10_000n);
    expect(v.state.orders.has(far)).toBe(false);
  });

  it('of two stops one mark fires, the first, resting, is amended once when the second fills', () => {
    goLong('3');
    const first = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '2',
        trigger: '62000',
        price: '61800',
        type: 'StopLoss',
      }),
    );
    const second = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        trigger: '62000',
        price: '61000',
        type: 'StopLoss',
      }),
    );
    const resting = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1', price: '61500', reduceOnly: true }),
    );
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '0.5', price: '61000' }));
    // mark = median(59,000, 59,000 + EMA(mid 61,250 - 59,000), median(61,000, 61,500, 65,000))
    // = 61,250: the first stop fires and rests at 61,800 (no bid there); the second sells 0.5
    // to C (position 2.5) and rests 0.5 at 61,000. The upward sweep, nearest first: the second
    // 0.5, the resting sell 1, the first keeps the 1 left.
    const fired = v.oracle({ [BTC]: '59000' });
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('61250'));
    expect(kinds(fired, A)).toEqual([
      `OrderTriggered#${first}`,
      `OrderTriggered#${second}`,
      `OrderPartiallyFilled#${second}`,
      `OrderReplaced:ReduceOnly#${first}`,
    ]);
    const [replaced] = replacedOf(fired, first);
    expect(replaced!.previous.quantity).toBe(20_000n);
    expect(replaced!.order).toMatchObject({ ordStatus: 'New', quantity: 10_000n, cumQty: 0n });
    expect(v.state.orders.get(first)?.quantity).toBe(10_000n);
    expect(v.state.orders.get(resting)?.quantity).toBe(10_000n);
  });

  it('a managed stop-loss that partly fills is not amended; the take-profit it cuts is, once', () => {
    goLong('2');
    const sl = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '2',
        trigger: '62000',
        price: '61000',
        type: 'StopLoss',
        managed: true,
      }),
    );
    const tp = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '2', trigger: '70000', type: 'TakeProfit' }),
    );
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '0.5', price: '61500' }));
    // mark = mean(59,000, median(bid 61,500, last 65,000)) = 61,125: the stop-loss, sized by
    // the position, sells 0.5 and rests 1.5, which is what is left of the position.
    const fired = v.oracle({ [BTC]: '59000' });
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('61125'));
    expect(kinds(fired, A)).toEqual([
      `OrderTriggered#${sl}`,
      `OrderPartiallyFilled#${sl}`,
      `OrderReplaced:ReduceOnly#${tp}`,
    ]);
    expect(replacedOf(fired, tp)[0]!.previous.quantity).toBe(20_000n);
    expect(v.state.orders.get(sl)).toMatchObject({ quantity: 20_000n, cumQty: 5_000n });
    expect(v.state.orders.get(tp)?.quantity).toBe(15_000n);
  });

  it('a stop whose remainder and sweep still fit the position is rested with no amend', () => {
    goLong('3');
    const tp = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1', trigger: '70000', type: 'TakeProfit' }),
    );
    const stop = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '2',
        trigger: '62000',
        price: '61000',
        type: 'StopLoss',
      }),
    );
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '61500' }));
    // mark 61,125: the stop sells 1 (position 2) and rests 1; the upward sweep is 1 + 1 = 2,
    // exactly the position, so nothing is resized and nothing is reported for it.
    const fired = v.oracle({ [BTC]: '59000' });
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('61125'));
    expect(kinds(fired, A)).toEqual([`OrderTriggered#${stop}`, `OrderPartiallyFilled#${stop}`]);
    expect(v.state.orders.get(tp)?.quantity).toBe(10_000n);
  });
});

describe('a managed stop-loss on a position', () => {
  it('is sized to the whole position when placed, whatever quantity it names', () => {
    goLong('2');
    const placed = v.place(A, BTC, {
      side: 'Sell',
      qty: '1',
      trigger: '60000',
      type: 'StopLoss',
      managed: true,
    });
    expect(v.outcome(placed)).toMatchObject({ ok: true, order: { quantity: 20_000n } });
    expect(v.state.orders.get(orderIdOf(placed))?.quantity).toBe(20_000n);
  });

  it('once fired and resting keeps its size when it partly fills: its leaves still close the position', () => {
    goLong('2');
    const sl = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '2',
        trigger: '62000',
        price: '61000',
        type: 'StopLoss',
        managed: true,
      }),
    );
    // mark = mean(59,000, last 65,000) = 62,000: the stop-loss fires and rests at 61,000.
    expect(kinds(v.oracle({ [BTC]: '59000' }), A)).toEqual([`OrderTriggered#${sl}`]);
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '0.5', price: '61000' }));
    expect(sizeOf(v.state.accounts.get(A)!, 1, 'Cross')).toBe(15_000n);
    expect(v.state.orders.get(sl)).toMatchObject({ quantity: 20_000n, cumQty: 5_000n });
  });
});

describe('managed children of an entry order', () => {
  it('a fired child larger than what is left of the position closes it and is cancelled PositionClosed', () => {
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '2', price: '64000', cloid: cloid(4) }));
    const child = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '2',
        trigger: '60000',
        price: '59000',
        type: 'StopLoss',
        managed: true,
        parentCloid: cloid(4),
      }),
    );
    v.expectOk(v.place(C, BTC, { side: 'Sell', qty: '2', price: '64000' }));
    // A sells 1 elsewhere: the child stays sized by its entry's fills (2).
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '63000' }));
    v.expectOk(v.place(A, BTC, { side: 'Sell', qty: '1', price: '63000', tif: 'IOC' }));
    expect(v.state.orders.get(child)).toMatchObject({ armed: true, quantity: 20_000n });
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '2', price: '59500' }));
    // mark = mean(58,750, median(bid 59,500, last 63,000)) = 60,000: the child fires, sells the
    // 1 left, and what it cannot sell without opening a short is cancelled.
    const fired = v.oracle({ [BTC]: '58750' });
    expect(fired).toContainEqual(
      expect.objectContaining({ type: 'markChanged', mark: px('60000') }),
    );
    expect(sizeOf(v.state.accounts.get(A)!, 1, 'Cross')).toBe(0n);
    expect(kinds(fired, A)).toEqual([
      `OrderTriggered#${child}`,
      `OrderPartiallyFilled#${child}`,
      `OrderCancelled:PositionClosed#${child}`,
    ]);
  });

  it('a child placed beside a position is not sized by it: it keeps its quantity until its entry fills', () => {
    goLong('2');
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(3) }));
    const placed = v.place(A, BTC, {
      side: 'Sell',
      qty: '1',
      trigger: '60000',
      type: 'StopLoss',
      managed: true,
      parentCloid: cloid(3),
    });
    expect(v.outcome(placed)).toMatchObject({ ok: true, order: { quantity: 10_000n } });
    expect(v.state.orders.get(orderIdOf(placed))).toMatchObject({
      armed: false,
      quantity: 10_000n,
    });
  });

  it('once the entry has filled and ended, the child follows the position: it goes when the position closes', () => {
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(2) }));
    const child = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        trigger: '60000',
        type: 'StopLoss',
        managed: true,
        parentCloid: cloid(2),
      }),
    );
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '63000' }));
    v.expectOk(v.place(C, BTC, { side: 'Sell', qty: '1', price: '64000' }));
    expect(v.state.orders.get(child)?.armed).toBe(true);
    const close = v.place(A, BTC, { side: 'Sell', qty: '1', price: '63000', tif: 'IOC' });
    expect(sizeOf(v.state.accounts.get(A)!, 1, 'Cross')).toBe(0n);
    expect(kinds(close, A)).toContain(`OrderCancelled:PositionClosed#${child}`);
  });

  it('a child armed by the first fill is armed once: the entry filling again does not make it fire twice', () => {
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '2', price: '64000', cloid: cloid(1) }));
    const child = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '2',
        trigger: '60000',
        price: '59000',
        type: 'StopLoss',
        managed: true,
        parentCloid: cloid(1),
      }),
    );
    v.expectOk(v.place(C, BTC, { side: 'Sell', qty: '1', price: '64000' }));
    v.expectOk(v.place(C, BTC, { side: 'Sell', qty: '1', price: '64000' }));
    expect(v.state.orders.get(child)).toMatchObject({ armed: true, quantity: 20_000n });
    // mark = mean(56,000, last 64,000) = 60,000: the child fires, finds no bid and rests.
    const fired = v.oracle({ [BTC]: '56000' });
    expect(fired).toContainEqual(
      expect.objectContaining({ type: 'markChanged', mark: px('60000') }),
    );
    expect(kinds(fired, A)).toEqual([`OrderTriggered#${child}`]);
    expect(v.state.orders.get(child)?.ordStatus).toBe('New');
  });
});

describe('placement refusals that end the order', () => {
  it('an order in a paused market is rejected with reason MarketClosed, its nonce consumed', () => {
    v.expectOk(v.run({ type: 'setMarketStatus', market: 1, status: 'Paused' }));
    const events = v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000' });
    expect(v.outcome(events)).toMatchObject({
      ok: false,
      code: 4000,
      message: 'INVALID_REQUEST: market BTC-PERP is paused',
      nonceConsumed: true,
    });
    const [rejected] = v.reports(events, A);
    expect(rejected?.kind).toBe('OrderRejected');
    expect((rejected as OrderReport).order).toMatchObject({
      ordStatus: 'Rejected',
      reason: 'MarketClosed',
    });
  });
});

describe('book depth', () => {
  it('lists at most the levels asked for, best first, with their leaves and order counts', () => {
    for (const price of ['63000', '64000', '62000', '64000']) {
      v.expectOk(v.place(B, BTC, { side: 'Buy', qty: '1', price }));
    }
    const bids = v.state.markets.get(1)!.bids;
    expect(depthOf(bids, 2)).toEqual([
      { price: px('64000'), quantity: 20_000n, orders: 2 },
      { price: px('63000'), quantity: 10_000n, orders: 1 },
    ]);
    expect(depthOf(bids, 0)).toEqual([]);
    expect(depthOf(bids, 5)).toHaveLength(3);
  });
});
