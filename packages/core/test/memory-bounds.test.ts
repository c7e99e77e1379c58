/**
 * Bounded engine state under sustained traffic: a venue runs for months, so every collection of
 * the state that grows with traffic must be bounded by a window, a cap or the live orders it
 * indexes. These tests count entries (never bytes, never time) after long streams of ended
 * orders and compare them with what is live.
 */
import { describe, expect, it } from 'vitest';
import type { EngineEvent, EngineState, Level, OrderReport } from '../src/index.js';
import { timeIdSetSize } from '../src/persistent/sorted-set.js';
import {
  BTC_SETTINGS,
  cloid,
  TestVenue,
  type TestVenueOptions,
  wallet,
} from '../src/testing/index.js';

const BTC = 'BTC-PERP';
const MAKER = wallet(0xa);
const QUOTER = wallet(0xb);
const TAKER = wallet(0xc);

/** BTC-PERP listed, the three wallets funded, the oracle at 65,000. */
function btcVenue(options: TestVenueOptions = {}): TestVenue {
  const v = new TestVenue(options);
  v.list(BTC_SETTINGS);
  for (const w of [MAKER, QUOTER, TAKER]) {
    v.open(w);
    v.fund(w, '1000000');
  }
  v.oracle({ 'BTC-PERP': '65000' });
  return v;
}

function orderIdOf(events: readonly EngineEvent[]): number {
  for (const e of events) {
    if (e.type === 'outcome' && e.ok && 'order' in e) return e.order.orderId;
  }
  throw new Error(
    `no order in the outcome: ${JSON.stringify(
      events.find((e) => e.type === 'outcome'),
      (_k, x) => (typeof x === 'bigint' ? String(x) : x),
    )}`,
  );
}

/** The order ids of `account`'s order reports that carry a fill, in report order. */
function filledBy(events: readonly EngineEvent[], account: string): number[] {
  return orderReports(events)
    .filter((r) => r.account === account && r.fill !== undefined)
    .map((r) => r.order.orderId);
}

function orderReports(events: readonly EngineEvent[]): OrderReport[] {
  return events.filter((e): e is OrderReport => e.type === 'executionReport' && 'order' in e);
}

function levels(state: EngineState): Level[] {
  const m = state.markets.get(BTC_SETTINGS.id)!;
  return [...m.bids, ...m.asks];
}

/** Slots a level holds between its first chunk and its tail (live or not). */
function slotsHeld(state: EngineState): number {
  return levels(state).reduce((n, l) => n + (l.tail - l.base), 0);
}

function liveOnBook(state: EngineState): number {
  return levels(state).reduce((n, l) => n + l.count, 0);
}

describe('price levels', () => {
  it('orders placed and cancelled behind a long-lived order leave no slots behind', () => {
    const v = btcVenue();
    // The long-lived order at the front of its level: its slot pins the level's head.
    v.place(MAKER, BTC, { side: 'Buy', qty: '0.01', price: '64000' });
    for (let i = 0; i < 3_000; i++) {
      const id = orderIdOf(v.place(QUOTER, BTC, { side: 'Buy', qty: '0.01', price: '64000' }));
      v.cancel(QUOTER, BTC, { orderId: id });
    }
    const [level] = levels(v.state);
    expect(level!.count).toBe(1);
    // Before the repack the level kept all 3,001 slots (94 chunks) for its one live order.
    expect(level!.tail - level!.base).toBeLessThanOrEqual(256);
    expect(level!.chunks.length).toBeLessThanOrEqual(8);
  });

  it('a repacked level keeps time priority and fills in order', () => {
    const v = btcVenue();
    const first = orderIdOf(v.place(MAKER, BTC, { side: 'Sell', qty: '0.01', price: '66000' }));
    const kept: number[] = [first];
    for (let i = 0; i < 1_000; i++) {
      const id = orderIdOf(v.place(QUOTER, BTC, { side: 'Sell', qty: '0.01', price: '66000' }));
      if (i % 100 === 99) kept.push(id);
      else v.cancel(QUOTER, BTC, { orderId: id });
    }
    const [level] = levels(v.state);
    expect(level!.count).toBe(kept.length);
    expect(level!.tail - level!.base).toBeLessThan(1_000);
    // Every kept order fills, oldest first.
    const events = v.place(TAKER, BTC, {
      side: 'Buy',
      qty: (0.01 * kept.length).toFixed(2),
      price: '66000',
      tif: 'IOC',
    });
    expect([...filledBy(events, MAKER), ...filledBy(events, QUOTER)]).toEqual(kept);
    expect(liveOnBook(v.state)).toBe(0);
  });
  it('a level repacked while a taker walks it (self-trade cancels) goes on in priority', () => {
    const v = btcVenue();
    const first = orderIdOf(v.place(MAKER, BTC, { side: 'Sell', qty: '0.01', price: '66000' }));
    const own: number[] = [];
    for (let i = 0; i < 20; i++) {
      own.push(orderIdOf(v.place(QUOTER, BTC, { side: 'Sell', qty: '0.01', price: '66000' })));
    }
    // Holes behind the quoter's own orders, short of a repack.
    for (let i = 0; i < 140; i++) {
      const id = orderIdOf(v.place(TAKER, BTC, { side: 'Sell', qty: '0.01', price: '66000' }));
      v.cancel(TAKER, BTC, { orderId: id });
    }
    const last = orderIdOf(v.place(MAKER, BTC, { side: 'Sell', qty: '0.01', price: '66000' }));
    const spanBefore = levels(v.state)[0]!.tail - levels(v.state)[0]!.head;
    expect(spanBefore).toBe(162);
    // The quoter's buy fills the first order, cancels its own 20 (a repack falls among them,
    // inside the walk) and fills the last.
    const events = v.place(QUOTER, BTC, { side: 'Buy', qty: '0.02', price: '66000', tif: 'IOC' });
    const selfTrade = orderReports(events)
      .filter((r) => r.kind === 'OrderCancelled' && r.order.reason === 'SelfTrade')
      .map((r) => r.order.orderId);
    expect(filledBy(events, MAKER)).toEqual([first, last]);
    expect(selfTrade).toEqual(own);
    expect(levels(v.state)).toEqual([]);
  });
});

describe('a long stream of ended orders', () => {
  /**
   * Quotes with cloids and nonces: a quarter filled, half cancelled, a quarter expiring (GTD); the clock moves 250 ms a command,
   * so a run of 4,000 commands spans several nonce windows and cloid and trade retentions.
   */
  function churn(v: TestVenue, commands: number, start: number): void {
    for (let i = start; i < start + commands; i++) {
      const nonce = BigInt(v.time + 250);
      const auth = { nonce, deadline: BigInt(Math.floor(v.time / 1000) + 60) };
      // The quarter to be filled is the best bid, so the taker's IOC takes exactly it.
      const price = i % 4 === 0 ? '64100' : String(64_000 + (i % 7) * 10);
      const expiry =
        i % 4 === 3 ? { tif: 'GTD' as const, expiry: Math.floor(v.time / 1000) + 30 } : {};
      const placed = v.place(
        QUOTER,
        BTC,
        { side: 'Buy', qty: '0.01', price, cloid: cloid(i + 1), ...expiry },
        { time: v.time + 250, auth },
      );
      const id = orderIdOf(placed);
      if (i % 4 === 0) {
        v.place(
          TAKER,
          BTC,
          { side: 'Sell', qty: '0.01', price: '64100', tif: 'IOC' },
          { time: v.time + 1 },
        );
      } else if (i % 4 !== 3 && v.state.orders.get(id) !== undefined) {
        v.cancel(QUOTER, BTC, { orderId: id });
      }
    }
  }

  function sizes(state: EngineState): Record<string, number> {
    return {
      orders: state.orders.size,
      cloids: state.cloids.size,
      cloidLog: state.cloidLog.tail - state.cloidLog.head,
      nonces: state.nonces.size,
      nonceLog: state.nonceLog.tail - state.nonceLog.head,
      expiries: timeIdSetSize(state.expiries),
      trades: state.trades.size,
      slots: slotsHeld(state),
      pending: state.pending.size,
      auctions: state.auctions.size,
      accounts: state.accounts.size,
    };
  }

  it('keeps every index of the state bounded by its window or by the live orders', () => {
    const v = btcVenue({
      settings: { cloidRetentionMs: 120_000, tradeRetentionMs: 120_000 },
      checkInvariants: false,
    });
    // A long-lived order at the front of each level the stream rests on.
    for (let k = 0; k < 7; k++) {
      v.place(MAKER, BTC, { side: 'Buy', qty: '0.01', price: String(64_000 + k * 10) });
    }
    churn(v, 4_000, 0);
    const first = sizes(v.state);
    churn(v, 4_000, 4_000);
    const second = sizes(v.state);
    // Twice the traffic, no more entries (within the noise of where the windows fall).
    for (const key of Object.keys(first)) {
      // Slots move within a level's repack slack; they are bounded below instead.
      if (key === 'slots') continue;
      expect
        .soft(second[key], key)
        .toBeLessThanOrEqual(Math.max(first[key]! * 1.2, first[key]! + 16));
    }
    // Each index is bounded by what it indexes.
    expect(second.slots).toBeLessThanOrEqual(7 * 160 + 3 * liveOnBook(v.state));
  });
});
