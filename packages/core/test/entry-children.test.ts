/**
 * Managed TP/SL attached to an entry order (research 6.4.3 invariant 4), trigger firing in a
 * paused market, and two amend/cancel details, as a review of the book found them broken: each
 * case failed before its fix.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { EngineEvent, OrderReport, Outcome } from '../src/index.js';
import { BTC_SETTINGS, cloid, px, TestVenue, wallet } from '../src/testing/index.js';

const BTC = 'BTC-PERP';
const A = wallet(0xa);
const B = wallet(0xb);
const C = wallet(0xc);

const outcome = (events: readonly EngineEvent[]): Outcome =>
  events.find((e): e is Outcome => e.type === 'outcome')!;
function orderIdOf(events: readonly EngineEvent[]): number {
  const o = outcome(events);
  if (o.ok && 'order' in o) return o.order.orderId;
  throw new Error(
    `no order: ${JSON.stringify(o, (_k, x) => (typeof x === 'bigint' ? String(x) : x))}`,
  );
}
const reports = (events: readonly EngineEvent[], account: string): OrderReport[] =>
  events.filter(
    (e): e is OrderReport => e.type === 'executionReport' && e.account === account,
  ) as OrderReport[];
/** `kind:reason#orderId` of each report of `account`. */
const kinds = (events: readonly EngineEvent[], account: string): string[] =>
  reports(events, account).map(
    (r) => `${r.kind}${r.order?.reason ? `:${r.order.reason}` : ''}#${r.order?.orderId}`,
  );

let v: TestVenue;
function setup(settings = {}): void {
  v = new TestVenue({ settings, checkPurity: true });
  v.list(BTC_SETTINGS);
  for (const w of [A, B, C]) {
    v.open(w);
    v.fund(w, '1000000');
  }
  v.oracle({ [BTC]: '65000' });
}
/** A managed StopLoss attached to the entry named `parent`. */
const stopOf = (side: 'Buy' | 'Sell', qty: string, trigger: string, parent: string) =>
  v.place(A, BTC, { side, qty, trigger, type: 'StopLoss', managed: true, parentCloid: parent });

describe('a managed child of an entry order', () => {
  beforeEach(() => setup());

  it('is left alone by position changes while its entry has not filled', () => {
    // A is short 1, then rests a buy entry that would flip it long, with a sell SL for the long.
    v.place(B, BTC, { side: 'Buy', qty: '1', price: '65000' });
    v.place(A, BTC, { side: 'Sell', qty: '1', price: '65000' });
    const entry = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '2', price: '64000', cloid: cloid(9) }),
    );
    const child = orderIdOf(stopOf('Sell', '2', '60000', cloid(9)));
    // An unrelated IOC buy covers half the short: the child's side is the position's now.
    v.place(C, BTC, { side: 'Sell', qty: '0.5', price: '65000' });
    const ioc = v.place(A, BTC, { side: 'Buy', qty: '0.5', price: '65000', tif: 'IOC' });
    expect(kinds(ioc, A).some((k) => k.endsWith(`#${child}`))).toBe(false);
    expect(v.state.orders.has(entry)).toBe(true);
    expect(v.state.orders.get(child)?.ordStatus).toBe('Untriggered');
  });

  it('survives its entry closing the old position on the way to the new one', () => {
    // A is long 1; the entry sells 2 to go short 1, with a buy SL for the short.
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' });
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000' });
    const entry = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '2', price: '66000', cloid: cloid(13) }),
    );
    const child = orderIdOf(stopOf('Buy', '2', '70000', cloid(13)));
    v.place(C, BTC, { side: 'Buy', qty: '0.5', price: '66000' }); // A long 0.5: the child arms
    expect(v.state.orders.get(child)?.armed).toBe(true);
    v.place(C, BTC, { side: 'Buy', qty: '1.5', price: '66000' }); // A short 1
    expect(v.state.orders.has(entry)).toBe(false);
    // Sized by the entry's fills (2), clamped at match time to the short it protects.
    expect(v.state.orders.get(child)).toMatchObject({
      ordStatus: 'Untriggered',
      quantity: 20_000n,
    });
  });

  it('is never ended by a later order that reuses its entry cloid', () => {
    setup({ cloidRetentionMs: 1000 });
    const X = cloid(7);
    const p1 = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '2', price: '65000', cloid: X }));
    const child = orderIdOf(stopOf('Sell', '1', '60000', X));
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' }); // P1 fills 1: the child arms
    v.cancel(A, BTC, { orderId: p1 }); // P1 ends with fills: the child stays
    expect(v.state.orders.has(child)).toBe(true);
    v.advance(5000); // X is free again
    const p2 = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '60000', cloid: X }));
    const cancelled = v.cancel(A, BTC, { orderId: p2 }); // P2 ends unfilled
    expect(kinds(cancelled, A)).toEqual([`OrderCancelled:User#${p2}`]);
    expect(v.state.orders.has(child)).toBe(true);
  });

  it("a filled child cancels its own entry's siblings, not a later entry's that reuses the cloid", () => {
    setup({ cloidRetentionMs: 1000 });
    const X = cloid(8);
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000', cloid: X });
    const sl1 = orderIdOf(stopOf('Sell', '1', '60000', X));
    const tp1 = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        trigger: '70000',
        type: 'TakeProfit',
        managed: true,
        parentCloid: X,
      }),
    );
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' }); // the first entry fills
    v.advance(5000); // X is free again
    const e2 = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '50000', cloid: X }));
    const tp2 = orderIdOf(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '1',
        trigger: '72000',
        type: 'TakeProfit',
        managed: true,
        parentCloid: X,
      }),
    );
    v.place(C, BTC, { side: 'Buy', qty: '1', price: '59000' });
    const fired = v.oracle({ [BTC]: '58000' });
    expect(kinds(fired, A)).toEqual([
      `OrderTriggered#${sl1}`,
      `OrderFilled#${sl1}`,
      `OrderCancelled:SiblingFilled#${tp1}`,
    ]);
    // The second entry still works, and so does its take-profit.
    expect(v.state.orders.has(e2)).toBe(true);
    expect(v.state.orders.get(tp2)?.ordStatus).toBe('Untriggered');
  });

  it('follows the position once its entry ends: gone with a position that closed meanwhile', () => {
    const X = cloid(21);
    const entry = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '2', price: '64000', cloid: X }));
    const child = orderIdOf(stopOf('Sell', '2', '60000', X));
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '64000' }); // the entry fills 1: armed
    v.place(C, BTC, { side: 'Buy', qty: '1', price: '65000' });
    v.place(A, BTC, { side: 'Sell', qty: '1', price: '65000', tif: 'IOC' }); // A flat again
    expect(v.state.orders.has(child)).toBe(true); // the entry still works
    const cancelled = v.cancel(A, BTC, { orderId: entry });
    expect(kinds(cancelled, A)).toEqual([
      `OrderCancelled:User#${entry}`,
      `OrderCancelled:PositionClosed#${child}`,
    ]);
    // A later long of A's own is not stopped out by it.
    v.place(B, BTC, { side: 'Sell', qty: '3', price: '65000' });
    v.place(A, BTC, { side: 'Buy', qty: '3', price: '65000' });
    v.place(C, BTC, { side: 'Buy', qty: '5', price: '59000' });
    expect(kinds(v.oracle({ [BTC]: '50000' }), A)).not.toContain(`OrderTriggered#${child}`);
  });

  it("ended with its entry's last fill, it is reported sized by that fill", () => {
    // A is long 1; the entry sells 1 (to flat), its child a buy SL for the short that never comes.
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' });
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000' });
    const X = cloid(23);
    const entry = orderIdOf(v.place(A, BTC, { side: 'Sell', qty: '1', price: '66000', cloid: X }));
    const child = orderIdOf(stopOf('Buy', '1', '70000', X));
    v.place(C, BTC, { side: 'Buy', qty: '0.4', price: '66000' }); // the child is sized 0.4
    expect(v.state.orders.get(child)?.quantity).toBe(4_000n);
    // The entry's last fill leaves A flat: the child is re-sized by the entry's whole fill (1),
    // reported, then ends (research 6.4.3 invariant 4).
    const last = reports(v.place(C, BTC, { side: 'Buy', qty: '0.6', price: '66000' }), A);
    expect(last.map((r) => `${r.kind}#${r.order.orderId}`)).toEqual([
      `OrderFilled#${entry}`,
      `OrderReplaced#${child}`,
      `OrderCancelled#${child}`,
    ]);
    expect(last[0]!.order.cumQty).toBe(10_000n);
    expect(last[1]).toMatchObject({
      order: { reason: 'ParentFilled', quantity: 10_000n, ordStatus: 'Untriggered' },
      previous: { quantity: 4_000n },
    });
    expect(last[2]!.order).toMatchObject({ reason: 'PositionClosed', quantity: 10_000n });
  });

  it('is sized by the fills a bust leaves its entry (as if the busted fill never happened)', () => {
    const X = cloid(24);
    const entry = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000', cloid: X }));
    const child = orderIdOf(stopOf('Sell', '1', '60000', X));
    const first = v.place(B, BTC, { side: 'Sell', qty: '0.4', price: '65000' });
    v.place(C, BTC, { side: 'Sell', qty: '0.2', price: '65000' });
    expect(v.state.orders.get(child)?.quantity).toBe(6_000n);
    const trade = first.find((e) => e.type === 'trade');
    if (trade?.type !== 'trade') throw new Error('no trade');
    const bust = v.run({ type: 'bustTrade', tradeId: trade.tradeId, reason: 'test' });
    v.expectOk(bust);
    // The entry keeps working with 0.2 filled (engine-rules 8): the child protects that 0.2.
    expect(v.state.orders.get(entry)).toMatchObject({ cumQty: 2_000n, quantity: 6_000n });
    expect(v.state.orders.get(child)).toMatchObject({ ordStatus: 'Untriggered', quantity: 2_000n });
    // A's reports say so, the bust first: a client learns the child's size without the rule.
    const seen = bust.filter((e) => e.type === 'executionReport' && e.account === A);
    expect(seen.map((r) => r.type === 'executionReport' && r.kind)).toEqual([
      'TradeBust',
      'OrderReplaced',
    ]);
    expect(seen[1]).toMatchObject({
      order: { orderId: child, reason: 'ParentBust', quantity: 2_000n },
      previous: { quantity: 6_000n },
    });
  });

  it('is disarmed when a bust takes every fill of its still-working entry (as if it never filled)', () => {
    // A already holds a long of 1 that the entry has nothing to do with.
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' });
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000' });
    const X = cloid(26);
    const entry = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000', cloid: X }));
    const child = orderIdOf(stopOf('Sell', '1', '63000', X));
    const first = v.place(B, BTC, { side: 'Sell', qty: '0.4', price: '65000' });
    expect(v.state.orders.get(child)).toMatchObject({ armed: true, quantity: 4_000n });
    const trade = first.find((e) => e.type === 'trade');
    if (trade?.type !== 'trade') throw new Error('no trade');
    v.expectOk(v.run({ type: 'bustTrade', tradeId: trade.tradeId, reason: 'test' }));
    expect(v.state.orders.get(entry)).toMatchObject({ cumQty: 0n, ordStatus: 'New' });
    expect(v.state.orders.get(child)).toMatchObject({ armed: false, ordStatus: 'Untriggered' });
    const below = v.state.markets.get(1)!.triggersBelow;
    expect(below.some((e) => e.orderId === child)).toBe(false);
    // The mark falls through the trigger: a child whose entry never filled does not fire (before
    // the fix it did, and sold 0.4 of the unrelated long).
    v.place(C, BTC, { side: 'Buy', qty: '1', price: '55000' });
    const fell = v.oracle({ [BTC]: '58000' });
    expect(v.state.markets.get(1)!.prices.mark! <= px('63000')).toBe(true);
    expect(kinds(fell, A)).toEqual([]);
    expect(v.state.accounts.get(A)!.positions[0]!.size).toBe(10_000n);
    expect(v.state.orders.get(child)?.ordStatus).toBe('Untriggered');
    // The entry's next fill arms it again, sized by that fill, and it fires at once.
    const refill = v.place(B, BTC, { side: 'Sell', qty: '0.2', price: '65000' });
    expect(kinds(refill, A)).toContain(`OrderTriggered#${child}`);
  });

  it('of an entry that has ended, is re-sized by a bust of its fills, or cancelled with none left', () => {
    // A already holds a long of 1 that the entry has nothing to do with.
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' });
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000' });
    const X = cloid(27);
    const entry = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000', cloid: X }));
    const child = orderIdOf(stopOf('Sell', '1', '63000', X));
    const tradeOf = (events: EngineEvent[]) => {
      const t = events.find((e) => e.type === 'trade');
      if (t?.type !== 'trade') throw new Error('no trade');
      return t.tradeId;
    };
    const first = tradeOf(v.place(B, BTC, { side: 'Sell', qty: '0.4', price: '65000' }));
    const second = tradeOf(v.place(C, BTC, { side: 'Sell', qty: '0.6', price: '65000' }));
    expect(v.state.orders.has(entry)).toBe(false); // Filled
    expect(v.state.orders.get(child)).toMatchObject({ armed: true, quantity: 10_000n });
    // The entry's filled quantity is 0.6 now (its history row says so): the child protects 0.6,
    // reported after the bust, as for a working entry.
    const bust = v.run({ type: 'bustTrade', tradeId: first, reason: 'test' });
    v.expectOk(bust);
    expect(kinds(bust, A)).toEqual(['TradeBust#undefined', `OrderReplaced:ParentBust#${child}`]);
    expect(v.state.orders.get(child)).toMatchObject({ armed: true, quantity: 6_000n });
    expect(v.state.accounts.get(A)!.positions[0]!.size).toBe(16_000n);
    // Without any fill left the entry ended as one that never filled: its child is cancelled
    // (before the fix it stayed armed at 1 and would have sold the unrelated long).
    const none = v.run({ type: 'bustTrade', tradeId: second, reason: 'test' });
    v.expectOk(none);
    expect(kinds(none, A)).toEqual([
      'TradeBust#undefined',
      `OrderCancelled:ParentCancelled#${child}`,
    ]);
    expect(v.state.orders.has(child)).toBe(false);
    expect(v.state.accounts.get(A)!.positions[0]!.size).toBe(10_000n);
  });

  it('of an ended entry, fires with the size a bust left it', () => {
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' });
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000' });
    const X = cloid(28);
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000', cloid: X });
    const child = orderIdOf(stopOf('Sell', '1', '63000', X));
    const first = v.place(B, BTC, { side: 'Sell', qty: '0.4', price: '65000' });
    v.place(C, BTC, { side: 'Sell', qty: '0.6', price: '65000' });
    const trade = first.find((e) => e.type === 'trade');
    if (trade?.type !== 'trade') throw new Error('no trade');
    v.expectOk(v.run({ type: 'bustTrade', tradeId: trade.tradeId, reason: 'test' }));
    v.place(C, BTC, { side: 'Buy', qty: '2', price: '55000' });
    const fired = v.oracle({ [BTC]: '58000' });
    expect(kinds(fired, A)).toContain(`OrderTriggered#${child}`);
    // It sells the 0.6 its entry bought, not the unrelated long of 1.
    expect(v.state.accounts.get(A)!.positions[0]!.size).toBe(10_000n);
  });

  it('placed after its entry has filled in part, is sized by those fills, armed and fires', () => {
    const X = cloid(25);
    const entry = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000', cloid: X }));
    v.place(B, BTC, { side: 'Sell', qty: '0.3', price: '65000' }); // the entry fills 0.3
    const placed = stopOf('Sell', '1', '63000', X);
    const child = orderIdOf(placed);
    const accepted = reports(placed, A).find((r) => r.kind === 'OrderAccepted');
    expect(accepted?.order?.quantity).toBe(3_000n);
    expect(v.state.orders.get(child)).toMatchObject({ armed: true, quantity: 3_000n });
    // The entry fills 0.2 more: the child follows it (0.5).
    v.place(C, BTC, { side: 'Sell', qty: '0.2', price: '65000' });
    expect(v.state.orders.get(entry)?.cumQty).toBe(5_000n);
    expect(v.state.orders.get(child)?.quantity).toBe(5_000n);
    // Armed, it fires at the first mark at its trigger, without another fill of its entry.
    v.place(C, BTC, { side: 'Buy', qty: '1', price: '55000' });
    const fired = v.oracle({ [BTC]: '58000' });
    expect(v.state.markets.get(1)!.prices.mark! <= px('63000')).toBe(true);
    expect(kinds(fired, A)).toContain(`OrderTriggered#${child}`);
  });

  it('fires in the command that arms it when the mark is already past its trigger', () => {
    const X = cloid(11);
    const entry = orderIdOf(v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: X }));
    const child = orderIdOf(stopOf('Sell', '1', '63000', X));
    v.place(C, BTC, { side: 'Buy', qty: '1', price: '55000' });
    v.oracle({ [BTC]: '58000' });
    expect(v.state.markets.get(1)!.prices.mark! <= px('63000')).toBe(true);
    // The entry fills now, with the mark already below the SL's trigger: the SL fires at once.
    const filled = v.place(B, BTC, { side: 'Sell', qty: '1', price: '64000' });
    expect(v.state.orders.has(entry)).toBe(false);
    expect(kinds(filled, A)).toContain(`OrderTriggered#${child}`);
    expect(v.state.orders.get(child)?.ordStatus ?? 'ended').not.toBe('Untriggered');
  });
});

describe('a paused market', () => {
  beforeEach(() => setup());

  it('fires no stop (it accepts cancels only); the stop fires at the first mark after it resumes', () => {
    v.place(B, BTC, { side: 'Sell', qty: '1', price: '65000' });
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '65000' });
    const stop = orderIdOf(
      v.place(A, BTC, { side: 'Sell', qty: '1', trigger: '60000', type: 'StopLoss' }),
    );
    v.place(C, BTC, { side: 'Buy', qty: '1', price: '59500' });
    v.expectOk(v.run({ type: 'setMarketStatus', market: 1, status: 'Paused' }));
    const paused = v.oracle({ [BTC]: '55000' });
    expect(reports(paused, A)).toEqual([]);
    expect(v.state.orders.get(stop)?.ordStatus).toBe('Untriggered');
    v.expectOk(v.run({ type: 'setMarketStatus', market: 1, status: 'Active' }));
    const resumed = v.oracle({ [BTC]: '55000' });
    expect(kinds(resumed, A)[0]).toBe(`OrderTriggered#${stop}`);
  });
});

describe('amend and cancel details', () => {
  beforeEach(() => setup());

  it('an amend may give an order back its own earlier cloid (X -> Y -> X)', () => {
    const id = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(1) }),
    );
    const amend = (c: string) =>
      v.run({
        type: 'replaceOrder',
        account: A,
        market: 1,
        orderId: BigInt(id),
        origCloid: null,
        price: px('64000'),
        triggerPrice: 0n,
        quantity: 10_000n,
        cloid: c,
      });
    expect(outcome(amend(cloid(2))).ok).toBe(true);
    expect(outcome(amend(cloid(1))).ok).toBe(true);
    expect(v.state.orders.get(id)?.cloid).toBe(cloid(1));
    // Another order of the account still cannot take it.
    const other = v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(1) });
    expect(outcome(other)).toMatchObject({ ok: false, code: 4000 });
  });

  it("a cancel's seq is the seq of the last report it produced (its entry's children included)", () => {
    const entry = orderIdOf(
      v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(12) }),
    );
    stopOf('Sell', '1', '60000', cloid(12));
    const cancelled = v.cancel(A, BTC, { orderId: entry });
    const rs = reports(cancelled, A);
    expect(rs.map((r) => r.kind)).toEqual(['OrderCancelled', 'OrderCancelled']);
    expect((outcome(cancelled) as { seq?: number }).seq).toBe(rs.at(-1)!.seq);
  });

  it("cancelAll counts every order it ended, an entry's children included", () => {
    // An entry with two children, and a plain order: four orders, four reports, cancelled 4.
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '64000', cloid: cloid(13) });
    stopOf('Sell', '1', '60000', cloid(13));
    v.place(A, BTC, {
      side: 'Sell',
      qty: '1',
      trigger: '70000',
      type: 'TakeProfit',
      managed: true,
      parentCloid: cloid(13),
    });
    v.place(A, BTC, { side: 'Buy', qty: '1', price: '63000' });
    const all = v.run({ type: 'cancelAll', account: A, market: 0 });
    const rs = reports(all, A);
    expect(rs.map((r) => [r.kind, r.order.reason])).toEqual([
      ['OrderCancelled', 'User'],
      ['OrderCancelled', 'ParentCancelled'],
      ['OrderCancelled', 'ParentCancelled'],
      ['OrderCancelled', 'User'],
    ]);
    expect(outcome(all)).toMatchObject({ ok: true, kind: 'cancelAll', cancelled: 4 });
    expect(v.state.orders.size).toBe(0);
  });
});

describe('a managed child armed by a liquidation', () => {
  it('fires in the same command when the mark move that liquidated is past its trigger', () => {
    const D = wallet(0xd);
    const MM = wallet(0x62);
    const S = 'ISO-PERP';
    const venue = new TestVenue({ checkPurity: true });
    venue.list({
      id: 3,
      symbol: S,
      tickSize: '0.5',
      lotSize: '1',
      quantityDecimals: 0,
      maxLeverage: 20,
      openInterestCap: '1000000',
      makerFeeRate: '0',
      takerFeeRate: '0',
      liquidation: { feeRate: '0' },
    });
    for (const w of [A, D, MM]) venue.open(w);
    venue.fund(A, '100000');
    venue.fund(MM, '1000000');
    venue.fund(D, '600');
    venue.run({ type: 'updateLeverage', account: D, market: 3, mode: 'Cross', leverage: 2000 });
    venue.oracle({ [S]: '100' });
    venue.expectOk(venue.place(MM, S, { side: 'Sell', qty: '100', price: '100' }));
    venue.expectOk(venue.place(D, S, { side: 'Buy', qty: '100', price: '100' }));
    // A's entry bid at 97 with a sell stop at 98 for the long it would open.
    venue.expectOk(venue.place(A, S, { side: 'Buy', qty: '10', price: '97', cloid: cloid(5) }));
    const placed = venue.place(A, S, {
      side: 'Sell',
      qty: '10',
      trigger: '98',
      type: 'StopLoss',
      managed: true,
      parentCloid: cloid(5),
    });
    const child = orderIdOf(placed);
    // The drop liquidates D into A's bid, which arms the stop, already past its trigger.
    const drop = venue.oracle({ [S]: '90' });
    expect(drop.some((e) => e.type === 'liquidationStarted')).toBe(true);
    expect(venue.state.markets.get(3)!.prices.mark! <= px('98')).toBe(true);
    expect(kinds(drop, A)).toContain(`OrderTriggered#${child}`);
  });
});
