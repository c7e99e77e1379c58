/**
 * The solvency guard of order fills (docs/risk-engine.md, our rule beyond engine-rules section 5):
 * no order fill may leave the scope of either side with equity below zero at the mark. A taker's
 * fill is clamped to the whole lots that keep its scope solvent and its remainder is cancelled
 * (InsufficientMargin) when not one more lot fits; a resting maker whose fill would break it is
 * cancelled (InsufficientMargin) and matching continues; the FOK trial match applies the same
 * clamp, so FOK stays all-or-nothing. Book-only mode (margin checks off) has no guard.
 *
 * Figures: BTC tick 0.5, lot 0.001, maintenance 1.25%, taker fee 0.05%, maker fee 0.02%. A opens
 * 1 BTC long at the mark (50,000) as taker with 5,000 USD at 10x, so its scope holds
 * 5,000 - 25 (fee) = 4,975 USD of equity. Selling at 40,000 costs 10 USD per lot against the
 * mark plus 0.02 USD of taker fee.
 */
import fc from 'fast-check';
import { beforeEach, describe, expect, it } from 'vitest';
import {
  type EngineEvent,
  type Instrument,
  type MarginMode,
  type OrderReport,
  type Outcome,
  scopeRisk,
} from '../src/index.js';
import { type GuardSide, solventQuantity } from '../src/orders/solvency.js';
import {
  BTC_SETTINGS,
  ETH_SETTINGS,
  instrument,
  px,
  TestVenue,
  usd,
  wallet,
  wholeLotSettings,
} from '../src/testing/index.js';

const BTC = 'BTC-PERP';
const ETH = 'ETH-PERP';
const A = wallet(0xa1); // the account whose fills the guard limits
const B = wallet(0xb1); // counterparty of A's opening trades
const C = wallet(0xc1); // bids below the mark
const D = wallet(0xd1); // a buyer
const E = wallet(0xe1); // another seller

const FEES = { takerFeeRate: '0.0005', makerFeeRate: '0.0002' };

const outcome = (events: readonly EngineEvent[]): Outcome =>
  events.find((e): e is Outcome => e.type === 'outcome')!;
const orderReports = (events: readonly EngineEvent[], account: string): OrderReport[] =>
  events.filter(
    (e): e is OrderReport =>
      e.type === 'executionReport' &&
      e.account === account &&
      'order' in e &&
      e.kind !== 'OrderRejected',
  );
const fills = (events: readonly EngineEvent[], account: string) =>
  orderReports(events, account).flatMap((r) => (r.fill === undefined ? [] : [r.fill]));
const filledQty = (events: readonly EngineEvent[], account: string): bigint =>
  fills(events, account).reduce((t, f) => t + f.quantity, 0n);
const ended = (events: readonly EngineEvent[], account: string): OrderReport | undefined =>
  orderReports(events, account).find((r) => r.kind === 'OrderCancelled');

/** BTC quantity in raw units (4 decimals in BTC_SETTINGS). */
const btc = (q: string): bigint => BigInt(Math.round(Number(q) * 10_000));

function equity(v: TestVenue, who: string, mode: MarginMode = 'Cross', market = 0): bigint {
  return scopeRisk(v.state, v.state.accounts.get(who)!, mode, market).equity;
}

const orders = (v: TestVenue) => v.state.orders.entries().map(([, o]) => o);

function venue(marginChecks = true): TestVenue {
  const v = new TestVenue({ checkPurity: true, settings: { marginChecks } });
  v.list({ ...BTC_SETTINGS, ...FEES });
  v.list({ ...ETH_SETTINGS, ...FEES });
  for (const w of [A, B, C, D, E]) v.open(w);
  for (const w of [B, C, D, E]) v.fund(w, '1000000');
  v.oracle({ [BTC]: '50000', [ETH]: '3000' });
  return v;
}

/** A buys `qty` BTC from B at 50,000 as taker (cross unless `isolated`). */
function openLong(v: TestVenue, qty: string, isolated = false): void {
  v.expectOk(v.place(B, BTC, { side: 'Sell', qty, price: '50000' }));
  v.expectOk(v.place(A, BTC, { side: 'Buy', qty, price: '50000', isolated }));
  expect(filledQty(v.history.at(-1)!, A)).toBe(btc(qty));
}

let v: TestVenue;
beforeEach(() => {
  v = venue();
});

describe('taker clamp', () => {
  it('a reduce-only sell far below the mark fills only the lots that keep equity >= 0, then ends InsufficientMargin', () => {
    v.fund(A, '5000');
    openLong(v, '1');
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('50000'));
    expect(equity(v, A)).toBe(usd('4975'));
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '40000' }));

    const e = v.place(A, BTC, { side: 'Sell', qty: '1', price: '40000', reduceOnly: true });
    expect(outcome(e).ok).toBe(true);
    // 4,975 / 10.02 per lot = 496.5 lots: 0.496 BTC.
    expect(filledQty(e, A)).toBe(btc('0.496'));
    const f = fills(e, A)[0]!;
    expect(f.price).toBe(px('40000'));
    expect(f.fee).toBe(usd('9.92'));
    // Equity after: 4,975 - 0.496 x 10,000 - 9.92 = 5.08 USD (the liquidation that follows
    // starts an auction; nothing else moved the scope).
    expect(equity(v, A)).toBe(usd('5.08'));
    expect(equity(v, A)).toBeGreaterThanOrEqual(0n);
    // One more lot costs 10 USD against the mark and 0.02 USD of fee: 5.08 - 10.02 < 0.
    expect(usd('5.08') - usd('10') - usd('0.02')).toBeLessThan(0n);
    // The GTC remainder still crosses C's bid, so it is cancelled rather than rested.
    const end = ended(e, A)!;
    expect(end.order.reason).toBe('InsufficientMargin');
    expect(end.order.cumQty).toBe(btc('0.496'));
    expect(orders(v).some((o) => o.account === A && o.slot >= 0)).toBe(false);
    // C's bid keeps its remainder.
    const cBid = orders(v).find((o) => o.account === C)!;
    expect(cBid.quantity - cBid.cumQty).toBe(btc('0.504'));
  });

  it('a taker that cannot fill one lot ends InsufficientMargin with no fill (IOC and GTC alike)', () => {
    // 0.01 BTC at 40x: 20 USD in, 19.75 after the fee; one lot at 30,000 costs 20.015 USD.
    v.expectOk(
      v.run({ type: 'updateLeverage', account: A, market: 1, mode: 'Cross', leverage: 4000 }),
    );
    v.fund(A, '20');
    openLong(v, '0.01');
    expect(equity(v, A)).toBe(usd('19.75'));
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '30000' }));
    for (const tif of ['IOC', 'GTC'] as const) {
      const e = v.place(A, BTC, {
        side: 'Sell',
        qty: '0.01',
        price: '30000',
        reduceOnly: true,
        tif,
      });
      expect(filledQty(e, A)).toBe(0n);
      expect(ended(e, A)!.order.reason).toBe('InsufficientMargin');
      expect(equity(v, A)).toBe(usd('19.75'));
    }
  });

  it('clamps across levels: a full fill at the first, the solvent lots at the second', () => {
    v.fund(A, '5000');
    openLong(v, '1');
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '0.5', price: '45000' }));
    v.expectOk(v.place(D, BTC, { side: 'Buy', qty: '0.5', price: '40000' }));
    const e = v.place(A, BTC, {
      side: 'Sell',
      qty: '1',
      price: '40000',
      reduceOnly: true,
      tif: 'IOC',
    });
    // 0.5 at 45,000 costs 2,500 + 11.25 fee: 2,463.75 left; 245 lots at 10.02 each at 40,000.
    expect(fills(e, A).map((f) => [f.price, f.quantity])).toEqual([
      [px('45000'), btc('0.5')],
      [px('40000'), btc('0.245')],
    ]);
    expect(equity(v, A)).toBe(usd('8.85'));
    expect(ended(e, A)!.order.reason).toBe('InsufficientMargin');
  });

  it('fills at or better than the mark are not limited', () => {
    v.fund(A, '5000');
    openLong(v, '1');
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '0.5', price: '51000' }));
    v.expectOk(v.place(D, BTC, { side: 'Buy', qty: '0.5', price: '50000' }));
    const e = v.place(A, BTC, { side: 'Sell', qty: '1', price: '50000', reduceOnly: true });
    expect(filledQty(e, A)).toBe(btc('1'));
    // +500 against the mark, less fees of 12.75 and 12.5.
    expect(equity(v, A)).toBe(usd('4975') + usd('500') - usd('12.75') - usd('12.5'));
  });

  it("another cross position's profit keeps a fill below the mark allowed in full", () => {
    const both = (w: TestVenue): void => {
      w.fund(A, '11100');
      openLong(w, '1'); // 5,000 at 10x, fee 25
      w.expectOk(w.place(B, ETH, { side: 'Sell', qty: '10', price: '3000' }));
      w.expectOk(w.place(A, ETH, { side: 'Buy', qty: '10', price: '3000' })); // 6,000 at 5x, fee 15
      expect(equity(w, A)).toBe(usd('11060'));
    };
    // Without the ETH profit the same sell is clamped: 11,060 / 15.0175 per lot = 736 lots.
    const without = venue();
    both(without);
    without.expectOk(without.place(C, BTC, { side: 'Buy', qty: '1', price: '35000' }));
    const clamped = without.place(A, BTC, {
      side: 'Sell',
      qty: '1',
      price: '35000',
      reduceOnly: true,
    });
    expect(filledQty(clamped, A)).toBe(btc('0.736'));
    both(v);
    // The mark is the median of the index and the book's last trade (3,000): 3,500.
    v.oracle({ [ETH]: '4000' });
    expect(v.state.markets.get(2)!.prices.mark).toBe(px('3500'));
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('50000'));
    expect(equity(v, A)).toBe(usd('16060'));
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '35000' }));
    // 15,000 below the mark plus 17.5 of fee: more than the scope's 11,060 before the ETH
    // profit (it would have been clamped), less than its 16,060 with it.
    const e = v.place(A, BTC, { side: 'Sell', qty: '1', price: '35000', reduceOnly: true });
    expect(filledQty(e, A)).toBe(btc('1'));
    expect(equity(v, A)).toBe(usd('16060') - usd('15017.5'));
  });

  it('an isolated scope is measured on its own pool: cross cash does not carry it', () => {
    v.fund(A, '1000000');
    v.fund(A, '5000', BTC);
    openLong(v, '1', true);
    expect(equity(v, A, 'Isolated', 1)).toBe(usd('4975'));
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '1', price: '40000' }));
    const e = v.place(A, BTC, {
      side: 'Sell',
      qty: '1',
      price: '40000',
      reduceOnly: true,
      isolated: true,
    });
    expect(filledQty(e, A)).toBe(btc('0.496'));
    expect(equity(v, A, 'Isolated', 1)).toBe(usd('5.08'));
    expect(ended(e, A)!.order.reason).toBe('InsufficientMargin');
    expect(v.state.accounts.get(A)!.crossCash).toBe(usd('1000000'));
  });

  it('has no effect with margin checks off (book-only mode)', () => {
    const off = venue(false);
    off.fund(A, '5000');
    openLong(off, '1');
    off.expectOk(off.place(C, BTC, { side: 'Buy', qty: '1', price: '40000' }));
    const e = off.place(A, BTC, { side: 'Sell', qty: '1', price: '40000', reduceOnly: true });
    expect(filledQty(e, A)).toBe(btc('1'));
    expect(equity(off, A)).toBe(usd('4975') - usd('10020'));
  });
});

describe('maker side', () => {
  it('a resting maker whose fill would leave its scope negative is cancelled and matching continues', () => {
    v.fund(A, '5000');
    openLong(v, '1');
    // A's reduce-only ask rests 10,000 below the mark; E asks at 44,000.
    v.expectOk(v.place(A, BTC, { side: 'Sell', qty: '1', price: '40000', reduceOnly: true }));
    v.expectOk(v.place(E, BTC, { side: 'Sell', qty: '1', price: '44000' }));
    const e = v.place(D, BTC, { side: 'Buy', qty: '1', price: '45000', tif: 'IOC' });
    expect(ended(e, A)!.order.reason).toBe('InsufficientMargin');
    expect(fills(e, A)).toEqual([]);
    expect(fills(e, D).map((f) => [f.price, f.quantity])).toEqual([[px('44000'), btc('1')]]);
    expect(v.state.accounts.get(A)!.positions[0]!.size).toBe(btc('1'));
    expect(equity(v, A)).toBe(usd('4975'));
  });

  it('a maker fill that keeps equity >= 0 goes through, with the maker fee counted', () => {
    v.fund(A, '5000');
    openLong(v, '1');
    // 0.4 at 40,000: 4,000 below the mark and 3.2 of maker fee, 971.8 left.
    v.expectOk(v.place(A, BTC, { side: 'Sell', qty: '0.4', price: '40000', reduceOnly: true }));
    const e = v.place(D, BTC, { side: 'Buy', qty: '0.4', price: '40000', tif: 'IOC' });
    expect(filledQty(e, A)).toBe(btc('0.4'));
    expect(equity(v, A)).toBe(usd('971.8'));
  });
});

describe('FOK with the guard', () => {
  function setupTwoBids(): void {
    v.fund(A, '5000');
    openLong(v, '1');
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '0.5', price: '45000' }));
    v.expectOk(v.place(D, BTC, { side: 'Buy', qty: '0.5', price: '40000' }));
  }
  const fok = (qty: string) =>
    v.place(A, BTC, { side: 'Sell', qty, price: '40000', reduceOnly: true, tif: 'FOK' });

  it('more than the solvent quantity: no fill at all', () => {
    setupTwoBids();
    const e = fok('0.746');
    expect(filledQty(e, A)).toBe(0n);
    expect(ended(e, A)!.order.reason).toBe('FOK');
    expect(equity(v, A)).toBe(usd('4975'));
  });

  it('exactly the solvent quantity: fills completely', () => {
    setupTwoBids();
    const e = fok('0.745');
    expect(filledQty(e, A)).toBe(btc('0.745'));
    expect(ended(e, A)).toBeUndefined();
    expect(equity(v, A)).toBe(usd('8.85'));
  });

  it('a maker that would be cancelled is skipped by the FOK trial as by matching', () => {
    v.fund(A, '5000');
    openLong(v, '1');
    v.expectOk(v.place(A, BTC, { side: 'Sell', qty: '1', price: '40000', reduceOnly: true }));
    v.expectOk(v.place(E, BTC, { side: 'Sell', qty: '0.5', price: '44000' }));
    // Only E's 0.5 can fill: a FOK for 0.6 fills nothing, one for 0.5 fills.
    const no = v.place(D, BTC, { side: 'Buy', qty: '0.6', price: '45000', tif: 'FOK' });
    expect(filledQty(no, D)).toBe(0n);
    expect(ended(no, D)!.order.reason).toBe('FOK');
    const yes = v.place(D, BTC, { side: 'Buy', qty: '0.5', price: '45000', tif: 'FOK' });
    expect(filledQty(yes, D)).toBe(btc('0.5'));
    expect(ended(yes, A)!.order.reason).toBe('InsufficientMargin');
  });
});

describe('solventQuantity', () => {
  const spec: Instrument = instrument({ ...BTC_SETTINGS, ...FEES });
  const lot = spec.lotSize;
  const mark = px('50000');

  it('returns whole lots that keep equity >= 0 with the ledger rounding, and one more lot would not', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 400 }), // quantity, lots
        fc.integer({ min: -3000, max: 3000 }), // position, lots
        fc.integer({ min: 1, max: 200_000 }), // price, ticks
        fc.integer({ min: 0, max: 3_000_000_000 }), // equity, micro-units
        fc.constantFrom(0n, 5n * 10n ** 14n, -(10n ** 14n)), // fee rate (RATE_SCALE 1e18)
        fc.boolean(),
        (lots, pos, ticks, eq, rate, buy) => {
          const side: GuardSide = {
            spec,
            mark,
            size: BigInt(pos) * lot,
            buy,
            rate,
            equity: () => BigInt(eq),
          };
          const qty = BigInt(lots) * lot;
          const price = BigInt(ticks) * spec.tickSize;
          const after = (q: bigint): bigint => {
            // The ledger, spelled out: cash leg half-even, fee up (rebate toward zero), and the
            // position valued at the mark rounded down.
            const s = side.size;
            const signed = buy ? q : -q;
            const value = (x: bigint) => floorDiv(x * mark, ns);
            const quote = halfEven(q * price, ns);
            const feeRaw = q * price * rate;
            const fee =
              rate >= 0n ? ceilDiv(feeRaw, ns * 10n ** 18n) : -floorDiv(-feeRaw, ns * 10n ** 18n);
            return BigInt(eq) + value(s + signed) - value(s) + (buy ? -quote : quote) - fee;
          };
          const ok = (q: bigint) => q === 0n || after(q) >= 0n || after(q) >= BigInt(eq);
          const got = solventQuantity(side, qty, price);
          expect(got % lot).toBe(0n);
          expect(got).toBeLessThanOrEqual(qty);
          expect(ok(got)).toBe(true);
          if (got < qty) expect(ok(got + lot)).toBe(false);
          // At least every quantity below the first failing one.
          let prefix = 0n;
          while (prefix < qty && ok(prefix + lot)) prefix += lot;
          expect(got).toBeGreaterThanOrEqual(prefix);
        },
      ),
      { numRuns: 2000 },
    );
  });

  // notionalScale: quantity x price (raw) to micro-units.
  const ns = 10n ** BigInt(spec.quantityDecimals) * 10n ** 12n;
  function floorDiv(a: bigint, b: bigint): bigint {
    const q = a / b;
    return a < 0n && q * b !== a ? q - 1n : q;
  }
  function ceilDiv(a: bigint, b: bigint): bigint {
    const q = a / b;
    return a > 0n && q * b !== a ? q + 1n : q;
  }
  function halfEven(a: bigint, b: bigint): bigint {
    const q = floorDiv(a, b);
    const r2 = 2n * (a - q * b);
    if (r2 > b) return q + 1n;
    if (r2 < b) return q;
    return q % 2n === 0n ? q : q + 1n;
  }
});

// Found by mutation: refusing a fill that leaves equity at exactly zero (`>= 0` -> `> 0`, in the
// rule and in the whole-fill shortcut) survived the suite, whose fills all ended above zero.
describe('the boundary', () => {
  /** A long 10 @ 100 with 100 (cash -900), B bidding `bids`, and the mark moved to 95. */
  function venue(bids: [string, string][]): TestVenue {
    const v = new TestVenue();
    v.list(wholeLotSettings('Z-PERP')); // no fees, 2.5% maintenance
    const MM = wallet(0xe2);
    for (const w of [A, B, MM]) v.open(w);
    v.fund(A, '100');
    v.fund(B, '100000');
    v.fund(MM, '100000');
    v.oracle({ 'Z-PERP': '100' });
    v.expectOk(v.place(B, 'Z-PERP', { side: 'Sell', qty: '10', price: '100' }));
    v.expectOk(v.place(A, 'Z-PERP', { side: 'Buy', qty: '10', price: '100' }));
    for (const [qty, price] of bids) {
      v.expectOk(v.place(B, 'Z-PERP', { side: 'Buy', qty, price }));
    }
    v.expectOk(v.place(MM, 'Z-PERP', { side: 'Sell', qty: '1', price: '95' }));
    v.oracle({ 'Z-PERP': '95' });
    // A's equity at the mark 95: -900 + 950 = 50, above its maintenance 23.75.
    expect(v.state.markets.get(1)!.prices.mark).toBe(px('95'));
    return v;
  }

  it('a whole fill that leaves its scope at exactly zero equity goes through', () => {
    const v = venue([['10', '90']]);
    // Selling 10 @ 90 costs 50 against the mark: 50 - 50 = 0, allowed.
    const sell = v.place(A, 'Z-PERP', { side: 'Sell', qty: '10', price: '90', tif: 'IOC' });
    expect(filledQty(sell, A)).toBe(10n);
    expect(v.state.accounts.get(A)!.positions).toEqual([]);
    expect(v.state.accounts.get(A)!.crossCash).toBe(0n);
  });

  it('a clamped fill takes the lots that leave exactly zero equity', () => {
    const v = venue([
      ['5', '92'],
      ['5', '77.5'],
    ]);
    // 5 @ 92 costs 15 (equity 35); at 77.5 each lot costs 17.5: 2 lots leave exactly 0, all 5
    // would leave -52.5. So 7 fill and the rest of the IOC is cancelled.
    const sell = v.place(A, 'Z-PERP', { side: 'Sell', qty: '10', price: '77.5', tif: 'IOC' });
    expect(fills(sell, A).map((f) => [f.quantity, f.price])).toEqual([
      [5n, px('92')],
      [2n, px('77.5')],
    ]);
  });
});
