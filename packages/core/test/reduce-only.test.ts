/**
 * The reduce-only re-clamp (engine-rules section 5: "Reduce-only orders are re-clamped when the
 * position shrinks"): whatever shrinks a position (a fill of any order, a liquidation, an ADL,
 * a bust), the scope's unmanaged reduce-only orders are cut, nearest to the market first, so that
 * no sweep promises to close more than is held; a cut lowers the order's quantity and its level's
 * quantity and is reported `OrderReplaced` (reason ReduceOnly), an order cut to nothing is
 * cancelled (reason ReduceOnly). See `clampReduceOnly` in src/orders/managed.ts.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import {
  depthOf,
  type EngineEvent,
  type ExecutionReport,
  type OrderReplacedReport,
  type OrderReport,
  type Outcome,
} from '../src/index.js';
import { px, TestVenue, wallet } from '../src/testing/index.js';
import { checkReduceOnlyInvariant } from './reduce-only-invariant.js';

const SOL = 'SOL-PERP';
const A = wallet(0xa1);
const B = wallet(0xb1);
const C = wallet(0xc1);
const D = wallet(0xd1);

const outcome = (events: readonly EngineEvent[]): Outcome =>
  events.find((e): e is Outcome => e.type === 'outcome')!;
const reports = (events: readonly EngineEvent[], account: string): ExecutionReport[] =>
  events.filter((e): e is ExecutionReport => e.type === 'executionReport' && e.account === account);
const kinds = (events: readonly EngineEvent[], account: string): string[] =>
  reports(events, account).map((r) => r.kind);
const idOf = (events: readonly EngineEvent[]): number => {
  const o = outcome(events);
  if (!o.ok || !('order' in o)) throw new Error(`refused: ${JSON.stringify(o, replacer)}`);
  return o.order.orderId;
};
const message = (events: readonly EngineEvent[]): string => {
  const o = outcome(events);
  return o.ok ? '' : `${o.code} ${o.message}`;
};
function replacer(_k: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

let v: TestVenue;
/** Runs a command on the venue and checks the reduce-only invariant after it. */
function checked(events: EngineEvent[]): EngineEvent[] {
  checkReduceOnlyInvariant(v.state);
  return events;
}
const place = (w: string, o: Parameters<TestVenue['place']>[2]) => checked(v.place(w, SOL, o));
const order = (id: number) => v.state.orders.get(id);
const asks = () => depthOf(v.state.markets.get(1)!.asks, 10).map((l) => [l.price, l.quantity]);
const bids = () => depthOf(v.state.markets.get(1)!.bids, 10).map((l) => [l.price, l.quantity]);
const size = (w: string) => v.state.accounts.get(w)!.positions.find((p) => p.market === 1)?.size;

beforeEach(() => {
  // Every command checks all invariants (book level sums, totals) and that reduce never
  // mutated its input.
  v = new TestVenue({ checkPurity: true });
  // Whole units, no fees: every figure below is exact and round.
  v.list({
    id: 1,
    symbol: SOL,
    tickSize: '0.01',
    lotSize: '1',
    quantityDecimals: 0,
    maxLeverage: 20,
    openInterestCap: '1000000',
    makerFeeRate: '0',
    takerFeeRate: '0',
  });
  for (const w of [A, B, C, D]) {
    v.open(w);
    v.fund(w, '100000');
  }
  v.oracle({ [SOL]: '190' });
});

/** A opens `qty` long against B at 190. */
function openLong(qty: string): void {
  v.expectOk(place(B, { side: 'Sell', qty, price: '190' }));
  v.expectOk(place(A, { side: 'Buy', qty, price: '190' }));
  expect(size(A)).toBe(BigInt(qty));
}

/** A opens `qty` short against B at 190. */
function openShort(qty: string): void {
  v.expectOk(place(B, { side: 'Buy', qty, price: '190' }));
  v.expectOk(place(A, { side: 'Sell', qty, price: '190' }));
  expect(size(A)).toBe(-BigInt(qty));
}

/** A closes `qty` with a plain (not reduce-only) order against C's bid (ask for a short). */
function plainClose(qty: string, side: 'Sell' | 'Buy' = 'Sell'): EngineEvent[] {
  v.expectOk(place(C, { side: side === 'Sell' ? 'Buy' : 'Sell', qty, price: '190' }));
  const events = place(A, { side, qty, price: '190' });
  v.expectOk(events);
  return events;
}

describe('the auditor reproduction', () => {
  it('long 10, reduce-only sell 10 @ 200; a plain sell of 6 fills: the order and its level go to 4', () => {
    openLong('10');
    const ro = idOf(place(A, { side: 'Sell', qty: '10', price: '200', reduceOnly: true }));
    expect(asks()).toEqual([[px('200'), 10n]]);

    const events = plainClose('6');
    expect(size(A)).toBe(4n);
    // The fill, then the re-clamp of the resting reduce-only order in the same command.
    expect(kinds(events, A)).toEqual(['OrderAccepted', 'OrderFilled', 'OrderReplaced']);
    const cut = reports(events, A)[2] as OrderReplacedReport;
    expect(cut.order).toMatchObject({
      orderId: ro,
      quantity: 4n,
      cumQty: 0n,
      ordStatus: 'New',
      reason: 'ReduceOnly',
      price: px('200'),
    });
    expect(cut.previous).toEqual({ price: px('200'), triggerPrice: 0n, quantity: 10n });
    expect(cut.origCloid).toBeNull();
    // The working order and the public book agree: 4 @ 200, one order, same slot.
    expect(order(ro)).toMatchObject({ quantity: 4n, cumQty: 0n, ordStatus: 'New', reason: null });
    expect(depthOf(v.state.markets.get(1)!.asks, 1)).toEqual([
      { price: px('200'), quantity: 4n, orders: 1 },
    ]);
    // The book changed in that command.
    expect(events.some((e) => e.type === 'bookChanged' && e.market === 1)).toBe(true);

    // The sweep is now exactly full: another reduce-only sell of 1 is refused with the true
    // figures (before the fix: "would close 11 of a 4 position").
    const extra = place(A, { side: 'Sell', qty: '1', price: '205', reduceOnly: true });
    expect(message(extra)).toBe(
      '4000 INVALID_REQUEST: reduce-only orders in one sweep would close 5 of a 4 position',
    );
    // A stop-loss is in the other sweep and fits.
    v.expectOk(place(A, { side: 'Sell', qty: '1', trigger: '150', type: 'StopLoss' }));
    // Once the resting order leaves room, the new reduce-only sell of 1 is accepted.
    v.expectOk(
      checked(
        v.run({
          type: 'replaceOrder',
          account: A,
          market: 1,
          orderId: BigInt(ro),
          origCloid: null,
          price: px('200'),
          triggerPrice: 0n,
          quantity: 3n,
          cloid: null,
        }),
      ),
    );
    const accepted = place(A, { side: 'Sell', qty: '1', price: '205', reduceOnly: true });
    expect(kinds(accepted, A)).toEqual(['OrderAccepted']);
    expect(asks()).toEqual([
      [px('200'), 3n],
      [px('205'), 1n],
    ]);
  });

  it('an order that still fits is left alone, and a new one that fits is accepted', () => {
    openLong('10');
    const ro = idOf(place(A, { side: 'Sell', qty: '3', price: '200', reduceOnly: true }));
    const events = plainClose('6');
    expect(kinds(events, A)).toEqual(['OrderAccepted', 'OrderFilled']);
    expect(order(ro)!.quantity).toBe(3n);
    v.expectOk(place(A, { side: 'Sell', qty: '1', price: '205', reduceOnly: true }));
  });
});

describe('the re-clamp rule', () => {
  it('cuts per sweep, nearest to the market first: one order shrunk, one cancelled, a stop shrunk', () => {
    openLong('10');
    // Up-sweep: the older order is the farther one. Down-sweep: a stop-loss for the whole 10.
    const far = idOf(place(A, { side: 'Sell', qty: '4', price: '210', reduceOnly: true }));
    const near = idOf(place(A, { side: 'Sell', qty: '6', price: '200', reduceOnly: true }));
    const stop = idOf(place(A, { side: 'Sell', qty: '10', trigger: '150', type: 'StopLoss' }));

    const events = plainClose('7');
    expect(size(A)).toBe(3n);
    expect(kinds(events, A)).toEqual([
      'OrderAccepted',
      'OrderFilled',
      'OrderReplaced', // near: 6 -> 3
      'OrderCancelled', // far: nothing left
      'OrderReplaced', // the stop: 10 -> 3
    ]);
    const [, , shrunk, gone, stopCut] = reports(events, A) as [
      unknown,
      unknown,
      OrderReplacedReport,
      OrderReport,
      OrderReplacedReport,
    ];
    expect([shrunk.order.orderId, shrunk.previous.quantity, shrunk.order.quantity]).toEqual([
      near,
      6n,
      3n,
    ]);
    expect(gone.order).toMatchObject({
      orderId: far,
      ordStatus: 'Cancelled',
      reason: 'ReduceOnly',
    });
    expect(stopCut.order).toMatchObject({
      orderId: stop,
      ordStatus: 'Untriggered',
      quantity: 3n,
      reason: 'ReduceOnly',
    });
    expect(stopCut.previous).toEqual({ price: 0n, triggerPrice: px('150'), quantity: 10n });
    // The 210 level is gone; the stop still waits in the trigger list.
    expect(asks()).toEqual([[px('200'), 3n]]);
    expect(order(far)).toBeUndefined();
    expect(order(stop)).toMatchObject({ quantity: 3n, ordStatus: 'Untriggered', armed: true });
    expect(v.state.markets.get(1)!.triggersBelow.map((t) => t.orderId)).toEqual([stop]);
  });

  it('at one price the queue decides: the earlier order keeps its size and both keep their slots', () => {
    openLong('10');
    const first = idOf(place(A, { side: 'Sell', qty: '5', price: '200', reduceOnly: true }));
    const second = idOf(place(A, { side: 'Sell', qty: '5', price: '200', reduceOnly: true }));
    const slots = [order(first)!.slot, order(second)!.slot];
    const events = plainClose('4');
    expect(kinds(events, A)).toEqual(['OrderAccepted', 'OrderFilled', 'OrderReplaced']);
    expect(order(first)!.quantity).toBe(5n);
    expect(order(second)!.quantity).toBe(1n);
    expect([order(first)!.slot, order(second)!.slot]).toEqual(slots);
    expect(depthOf(v.state.markets.get(1)!.asks, 1)).toEqual([
      { price: px('200'), quantity: 6n, orders: 2 },
    ]);
    // Time priority kept: a buyer of 5 takes the first order whole; the second (1) still fits.
    const buy = place(D, { side: 'Buy', qty: '5', price: '200', tif: 'IOC' });
    expect(reports(buy, A).map((r) => [r.kind, (r as OrderReport).order.orderId])).toEqual([
      ['OrderFilled', first],
    ]);
    expect(order(second)!.quantity).toBe(1n);
  });

  it('a partly filled order loses quantity, never cumQty', () => {
    openLong('10');
    const ro = idOf(place(A, { side: 'Sell', qty: '5', price: '200', reduceOnly: true }));
    v.expectOk(place(D, { side: 'Buy', qty: '2', price: '200' }));
    expect(order(ro)).toMatchObject({ quantity: 5n, cumQty: 2n, ordStatus: 'PartiallyFilled' });
    expect(size(A)).toBe(8n);
    const events = plainClose('6');
    expect(size(A)).toBe(2n);
    const cut = reports(events, A)[2] as OrderReplacedReport;
    expect(cut.kind).toBe('OrderReplaced');
    expect(cut.order).toMatchObject({ quantity: 4n, cumQty: 2n, ordStatus: 'PartiallyFilled' });
    expect(cut.previous.quantity).toBe(5n);
    expect(asks()).toEqual([[px('200'), 2n]]);
  });

  it('mirrored for a short: reduce-only buys are cut from the highest bid down', () => {
    openShort('10');
    const near = idOf(place(A, { side: 'Buy', qty: '5', price: '180', reduceOnly: true }));
    const far = idOf(place(A, { side: 'Buy', qty: '5', price: '170', reduceOnly: true }));
    const events = plainClose('7', 'Buy');
    expect(size(A)).toBe(-3n);
    expect(kinds(events, A)).toEqual([
      'OrderAccepted',
      'OrderFilled',
      'OrderReplaced',
      'OrderCancelled',
    ]);
    expect(order(near)!.quantity).toBe(3n);
    expect(order(far)).toBeUndefined();
    expect(bids()).toEqual([[px('180'), 3n]]);
  });

  it('a position that flips cancels the reduce-only orders now on its side (ReduceOnly)', () => {
    openLong('10');
    const ro = idOf(place(A, { side: 'Sell', qty: '10', price: '200', reduceOnly: true }));
    const events = plainClose('15');
    expect(size(A)).toBe(-5n);
    const gone = reports(events, A).find((r) => r.kind === 'OrderCancelled') as OrderReport;
    expect(gone.order).toMatchObject({ orderId: ro, reason: 'ReduceOnly' });
    expect(asks()).toEqual([]);
  });

  it('a position that closes cancels them (PositionClosed)', () => {
    openLong('10');
    const ro = idOf(place(A, { side: 'Sell', qty: '4', price: '200', reduceOnly: true }));
    const stop = idOf(place(A, { side: 'Sell', qty: '10', trigger: '150', type: 'StopLoss' }));
    const events = plainClose('10');
    expect(size(A)).toBeUndefined();
    const gone = reports(events, A).filter((r) => r.kind === 'OrderCancelled') as OrderReport[];
    expect(gone.map((r) => [r.order.orderId, r.order.reason])).toEqual([
      [ro, 'PositionClosed'],
      [stop, 'PositionClosed'],
    ]);
    expect(kinds(events, A)).not.toContain('OrderReplaced');
  });

  it('managed TP/SL are not clamped: they follow the position', () => {
    openLong('10');
    const tp = idOf(
      place(A, { side: 'Sell', qty: '10', trigger: '250', type: 'TakeProfit', managed: true }),
    );
    const ro = idOf(place(A, { side: 'Sell', qty: '10', price: '200', reduceOnly: true }));
    const events = plainClose('6');
    expect(order(tp)!.quantity).toBe(4n);
    expect(order(ro)!.quantity).toBe(4n);
    // Both are reported: the re-clamp of the reduce-only order and the TP/SL's new size.
    expect(kinds(events, A)).toEqual([
      'OrderAccepted',
      'OrderFilled',
      'OrderReplaced',
      'OrderReplaced',
    ]);
    const amends = reports(events, A).slice(2) as OrderReplacedReport[];
    expect(
      amends.map((r) => [r.order.orderId, r.order.reason, r.previous.quantity, r.order.quantity]),
    ).toEqual([
      [tp, 'PositionChanged', 10n, 4n],
      [ro, 'ReduceOnly', 10n, 4n],
    ]);
  });

  it('a triggered stop that rests joins the resting sweep: the farther order gives way', () => {
    openLong('10');
    const tp = idOf(place(A, { side: 'Sell', qty: '10', price: '200', reduceOnly: true }));
    const stop = idOf(
      place(A, {
        side: 'Sell',
        qty: '10',
        trigger: '180',
        price: '179',
        type: 'StopLimit',
        reduceOnly: true,
      }),
    );
    const events = checked(v.oracle({ [SOL]: '150' }));
    expect(v.state.markets.get(1)!.prices.mark!).toBeLessThanOrEqual(px('180'));
    expect(kinds(events, A)).toEqual(['OrderTriggered', 'OrderCancelled']);
    const gone = reports(events, A)[1] as OrderReport;
    expect(gone.order).toMatchObject({ orderId: tp, reason: 'ReduceOnly' });
    expect(order(stop)).toMatchObject({ quantity: 10n, ordStatus: 'New' });
    expect(asks()).toEqual([[px('179'), 10n]]);
  });
});

describe('every path that shrinks a position', () => {
  it('a trade bust that takes back part of the position cuts the order in the bust command', () => {
    v.expectOk(place(B, { side: 'Sell', qty: '6', price: '190' }));
    v.expectOk(place(A, { side: 'Buy', qty: '6', price: '190' }));
    v.expectOk(place(B, { side: 'Sell', qty: '4', price: '190' }));
    const second = place(A, { side: 'Buy', qty: '4', price: '190' });
    const trade = second.find((e) => e.type === 'trade') as { tradeId: number };
    expect(size(A)).toBe(10n);
    const ro = idOf(place(A, { side: 'Sell', qty: '10', price: '200', reduceOnly: true }));

    const events = checked(v.run({ type: 'bustTrade', tradeId: trade.tradeId, reason: 'test' }));
    v.expectOk(events);
    expect(size(A)).toBe(6n);
    expect(kinds(events, A)).toEqual(['TradeBust', 'OrderReplaced']);
    const cut = reports(events, A)[1] as OrderReplacedReport;
    expect([cut.order.orderId, cut.previous.quantity, cut.order.quantity]).toEqual([ro, 10n, 6n]);
    expect(asks()).toEqual([[px('200'), 6n]]);
  });

  it("a liquidation's market step that fills a plain bid cuts the same account's reduce-only buy", () => {
    // A short 10; its plain bid of 6 @ 189 is the best bid, its reduce-only buy of 10 waits at 150.
    openShort('10');
    v.expectOk(place(A, { side: 'Buy', qty: '6', price: '189' }));
    const ro = idOf(place(A, { side: 'Buy', qty: '10', price: '150', reduceOnly: true }));
    // D isolated long 20 @ 190 with 400 of margin, then force-liquidated into the book.
    v.fund(D, '400', SOL);
    v.expectOk(place(C, { side: 'Sell', qty: '20', price: '190' }));
    v.expectOk(place(D, { side: 'Buy', qty: '20', price: '190', isolated: true }));
    v.expectOk(place(C, { side: 'Buy', qty: '20', price: '188' }));
    const events = checked(
      v.run({ type: 'liquidate', account: D, mode: 'Isolated', market: 1, force: true }),
    );
    v.expectOk(events);
    expect(size(A)).toBe(-4n);
    expect(kinds(events, A)).toEqual(['OrderFilled', 'OrderReplaced']);
    const cut = reports(events, A)[1] as OrderReplacedReport;
    expect([cut.order.orderId, cut.previous.quantity, cut.order.quantity]).toEqual([ro, 10n, 4n]);
    expect(bids().find(([p]) => p === px('150'))).toEqual([px('150'), 4n]);
  });

  /** D isolated long 20 @ 190 with 400 of margin (bankruptcy 170) against A's short of 30. */
  function shortAgainstWeakLong(): number {
    v.fund(D, '400', SOL);
    v.expectOk(place(A, { side: 'Sell', qty: '30', price: '190' }));
    v.expectOk(place(D, { side: 'Buy', qty: '20', price: '190', isolated: true }));
    v.expectOk(place(B, { side: 'Buy', qty: '10', price: '190' }));
    expect(size(A)).toBe(-30n);
    // Nothing bids at or above 170 but this reduce-only buy at 100.
    return idOf(place(A, { side: 'Buy', qty: '30', price: '100', reduceOnly: true }));
  }

  it('an ADL that takes part of a profitable short cuts its reduce-only buy', () => {
    const ro = shortAgainstWeakLong();
    // Mark 165, below D's bankruptcy price: D's 20 are deleveraged against A, the only short.
    const events = checked(v.oracle({ [SOL]: '185' }));
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('165'));
    expect(size(A)).toBe(-10n);
    expect(kinds(events, A)).toEqual(['ADL', 'OrderReplaced']);
    const cut = reports(events, A)[1] as OrderReplacedReport;
    expect([cut.order.orderId, cut.previous.quantity, cut.order.quantity]).toEqual([ro, 30n, 10n]);
    expect(bids()).toEqual([[px('100'), 10n]]);
  });

  it('an auction claim that reduces the claimant cuts its reduce-only buy when the claim settles', () => {
    const ro = shortAgainstWeakLong();
    const started = checked(
      v.run({ type: 'liquidate', account: D, mode: 'Isolated', market: 1, force: true }),
    );
    v.expectOk(started);
    const auction = started.find((e) => e.type === 'auction') as {
      auction: { auctionId: number; remaining: bigint };
    };
    expect(auction.auction.remaining).toBe(20n);
    // A claims all of it: the auction is fully claimed and settles at once.
    const claim = checked(
      v.run({
        type: 'claimLiquidation',
        account: A,
        auctionId: auction.auction.auctionId,
        quantity: 20n,
        maxPrice: px('190'),
      }),
    );
    v.expectOk(claim);
    expect(size(A)).toBe(-10n);
    const cuts = reports(claim, A).filter(
      (r) => r.kind === 'OrderReplaced',
    ) as OrderReplacedReport[];
    expect(cuts.map((r) => [r.order.orderId, r.previous.quantity, r.order.quantity])).toEqual([
      [ro, 30n, 10n],
    ]);
    expect(bids()).toEqual([[px('100'), 10n]]);
  });
});

describe('orders that never rest join no sweep', () => {
  it('a reduce-only IOC closes a long that has a full-size take-profit resting; the take-profit ends with it', () => {
    openLong('10');
    const tp = idOf(place(A, { side: 'Sell', qty: '10', price: '200', reduceOnly: true }));
    // A plain GTC reduce-only sell of the same size is in the take-profit's sweep: refused.
    expect(message(place(A, { side: 'Sell', qty: '10', price: '189', reduceOnly: true }))).toBe(
      '4000 INVALID_REQUEST: reduce-only orders in one sweep would close 20 of a 10 position',
    );
    v.expectOk(place(C, { side: 'Buy', qty: '10', price: '189' }));
    // The same order as IOC trades now or never: no later move reaches it.
    const close = place(A, { side: 'Sell', qty: '10', price: '189', reduceOnly: true, tif: 'IOC' });
    v.expectOk(close);
    expect(size(A) ?? 0n).toBe(0n);
    expect(order(tp)).toBeUndefined();
    const ended = reports(close, A).find((r) => 'order' in r && r.order.orderId === tp) as
      | OrderReport
      | undefined;
    expect(ended?.kind).toBe('OrderCancelled');
    expect(ended?.order.reason).toBe('PositionClosed');
    expect(asks()).toEqual([]);
  });

  it('a reduce-only FOK of part of a short passes with a full-size take-profit resting, and re-clamps it', () => {
    openShort('10');
    const tp = idOf(place(A, { side: 'Buy', qty: '10', price: '180', reduceOnly: true }));
    v.expectOk(place(C, { side: 'Sell', qty: '4', price: '191' }));
    const partial = place(A, { side: 'Buy', qty: '4', price: '191', reduceOnly: true, tif: 'FOK' });
    v.expectOk(partial);
    expect(size(A)).toBe(-6n);
    // The take-profit keeps its place and shrinks to what is left.
    expect(order(tp)).toMatchObject({ quantity: 6n, ordStatus: 'New' });
    expect(bids()).toEqual([[px('180'), 6n]]);
  });

  it('an IOC still may not close more than the position on its own', () => {
    openLong('10');
    v.expectOk(place(C, { side: 'Buy', qty: '11', price: '189' }));
    expect(
      message(place(A, { side: 'Sell', qty: '11', price: '189', reduceOnly: true, tif: 'IOC' })),
    ).toBe('4000 INVALID_REQUEST: reduce-only order exceeds position size: 11 > 10');
  });
});
