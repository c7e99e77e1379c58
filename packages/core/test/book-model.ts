/**
 * The commands of the model-based book test (`book.model.test.ts`), shared with the
 * execution-report property: random place, cancel and replace commands run through the engine
 * and through the naive reference book; after every command both must report the same fills and
 * self-trade cancels and hold the same book (orders, priority, remaining quantity).
 */
import fc from 'fast-check';
import { expect } from 'vitest';
import { type EngineEvent, levelOrderIds, type OrderReport, type Outcome } from '../src/index.js';
import {
  BTC_SETTINGS,
  ReferenceBook,
  type RefFill,
  TestVenue,
  type TestVenueOptions,
  wallet,
} from '../src/testing/index.js';

const SYMBOL = 'BTC-PERP';
const TICK = 5n * 10n ** 17n; // 0.5
const LOT = 10n; // 0.001 at 4 decimals
const PRICE0 = 130_000n; // ticks: 65,000.00

export interface Model {
  ref: ReferenceBook;
  ids: number[];
}
export interface Real {
  venue: TestVenue;
}

const accounts = [wallet(1), wallet(2), wallet(3)];

function fillsOf(events: readonly EngineEvent[]): RefFill[] {
  const out: RefFill[] = [];
  const reports = events.filter(
    (e): e is OrderReport => e.type === 'executionReport' && 'fill' in e && e.fill !== undefined,
  );
  for (let i = 0; i < reports.length; i += 2) {
    const maker = reports[i]!;
    const taker = reports[i + 1]!;
    expect(maker.fill!.liquidity).toBe('Maker');
    expect(taker.fill!.liquidity).toBe('Taker');
    expect(maker.fill!.tradeId).toBe(taker.fill!.tradeId);
    out.push({
      maker: maker.order.orderId,
      taker: taker.order.orderId,
      qty: maker.fill!.quantity,
      price: maker.fill!.price,
    });
  }
  return out;
}

function selfTradeCancels(events: readonly EngineEvent[]): number[] {
  return events
    .filter(
      (e): e is OrderReport =>
        e.type === 'executionReport' &&
        e.kind === 'OrderCancelled' &&
        e.order.reason === 'SelfTrade',
    )
    .map((e) => e.order.orderId);
}

function outcome(events: readonly EngineEvent[]): Outcome {
  return events.find((e): e is Outcome => e.type === 'outcome')!;
}

function sameBook(model: Model, real: Real): void {
  const m = real.venue.state.markets.get(1)!;
  for (const buy of [true, false]) {
    const levels = buy ? m.bids : m.asks;
    const engine: [number, bigint][] = [];
    for (let i = levels.length - 1; i >= 0; i--) {
      for (const id of levelOrderIds(levels[i]!)) {
        const o = real.venue.state.orders.get(id)!;
        engine.push([id, o.quantity - o.cumQty]);
      }
    }
    const ref = model.ref.side(buy).map((o) => [o.id, o.qty] as [number, bigint]);
    expect(engine).toEqual(ref);
  }
}

class Place implements fc.Command<Model, Real> {
  readonly account: number;
  readonly buy: boolean;
  readonly ticks: number;
  readonly lots: number;
  readonly tif: 'GTC' | 'IOC' | 'FOK';
  readonly postOnly: boolean;
  constructor(
    account: number,
    buy: boolean,
    ticks: number,
    lots: number,
    tif: 'GTC' | 'IOC' | 'FOK',
    postOnly: boolean,
  ) {
    this.account = account;
    this.buy = buy;
    this.ticks = ticks;
    this.lots = lots;
    this.tif = tif;
    this.postOnly = postOnly;
  }
  check(): boolean {
    return true;
  }
  run(model: Model, real: Real): void {
    const price = (PRICE0 + BigInt(this.ticks)) * TICK;
    const events = real.venue.run({
      type: 'placeOrder',
      account: accounts[this.account]!,
      order: {
        market: 1,
        isBuy: this.buy,
        orderType: 0,
        timeInForce: ['GTC', 'GTD', 'IOC', 'FOK'].indexOf(this.tif),
        price,
        triggerPrice: 0n,
        quantity: BigInt(this.lots) * LOT,
        flags: this.postOnly ? 4 : 0,
        expiry: 0n,
        cloid: null,
        parentCloid: null,
      },
    });
    const out = outcome(events);
    const id = out.ok
      ? (out as { order: { orderId: number } }).order.orderId
      : (out.orderId as number);
    const r = model.ref.place({
      id,
      account: accounts[this.account]!,
      buy: this.buy,
      price,
      qty: BigInt(this.lots) * LOT,
      tif: this.tif,
      postOnly: this.postOnly,
    });
    expect(out.ok).toBe(r.rejected === null);
    expect(fillsOf(events)).toEqual(r.fills);
    expect(selfTradeCancels(events)).toEqual(r.selfTradeCancels);
    model.ids.push(id);
    sameBook(model, real);
  }
  toString(): string {
    return `place(${this.account},${this.buy ? 'B' : 'S'},${this.ticks},${this.lots},${this.tif}${this.postOnly ? ',PO' : ''})`;
  }
}

class Cancel implements fc.Command<Model, Real> {
  readonly pick: number;
  constructor(pick: number) {
    this.pick = pick;
  }
  check(model: Model): boolean {
    return model.ids.length > 0;
  }
  run(model: Model, real: Real): void {
    const id = model.ids[this.pick % model.ids.length]!;
    const resting = model.ref.orders.find((o) => o.id === id);
    const owner = resting?.account ?? accounts[this.pick % 3]!;
    const events = real.venue.cancel(owner, SYMBOL, { orderId: id });
    const out = outcome(events);
    const refOk = model.ref.cancel(id);
    expect(out.ok).toBe(refOk);
    if (!out.ok) expect(out.code).toBe(4041);
    sameBook(model, real);
  }
  toString(): string {
    return `cancel(#${this.pick})`;
  }
}

class Replace implements fc.Command<Model, Real> {
  readonly pick: number;
  readonly ticks: number;
  readonly lots: number;
  constructor(pick: number, ticks: number, lots: number) {
    this.pick = pick;
    this.ticks = ticks;
    this.lots = lots;
  }
  check(model: Model): boolean {
    return model.ids.length > 0;
  }
  run(model: Model, real: Real): void {
    const id = model.ids[this.pick % model.ids.length]!;
    const resting = model.ref.orders.find((o) => o.id === id);
    if (resting === undefined) return;
    const price = (PRICE0 + BigInt(this.ticks)) * TICK;
    const total = resting.filled + BigInt(this.lots) * LOT;
    const events = real.venue.run({
      type: 'replaceOrder',
      account: resting.account,
      market: 1,
      orderId: BigInt(id),
      origCloid: null,
      price,
      triggerPrice: 0n,
      quantity: total,
      cloid: null,
    });
    const out = outcome(events);
    const r = model.ref.replace(id, price, total);
    expect(out.ok).toBe(r !== null && r.rejected === null);
    expect(fillsOf(events)).toEqual(r?.rejected === null ? r.fills : []);
    expect(selfTradeCancels(events)).toEqual(r?.rejected === null ? r.selfTradeCancels : []);
    sameBook(model, real);
  }
  toString(): string {
    return `replace(#${this.pick},${this.ticks},${this.lots})`;
  }
}

/** Place, cancel and replace on one market, checked against the reference book. */
export const commands = [
  fc
    .tuple(
      fc.integer({ min: 0, max: 2 }),
      fc.boolean(),
      fc.integer({ min: -6, max: 6 }),
      fc.integer({ min: 1, max: 6 }),
      fc.constantFrom<'GTC' | 'IOC' | 'FOK'>('GTC', 'GTC', 'GTC', 'IOC', 'FOK'),
      fc.boolean(),
    )
    .map(([a, b, t, l, tif, po]) => new Place(a, b, t, l, tif, po && tif === 'GTC')),
  fc.nat().map((p) => new Cancel(p)),
  fc
    .tuple(fc.nat(), fc.integer({ min: -6, max: 6 }), fc.integer({ min: 1, max: 6 }))
    .map(([p, t, l]) => new Replace(p, t, l)),
];

/** A book-only venue (no margin checks, no fees) with the three accounts open. */
export function bookVenue(
  makeVenue: (options: TestVenueOptions) => TestVenue = (options) => new TestVenue(options),
): TestVenue {
  const venue = makeVenue({ settings: { marginChecks: false } });
  venue.list({
    ...BTC_SETTINGS,
    makerFeeRate: '0',
    takerFeeRate: '0',
    minNotional: '0.000001',
  });
  for (const a of accounts) venue.open(a);
  return venue;
}

/** An empty model. */
export function newModel(): Model {
  return { ref: new ReferenceBook(), ids: [] };
}
