/**
 * Leverage caps beyond placement (engine-rules 1, 2 and 9; research 1.2 "position would exceed
 * the tier limit at the current leverage"): the margin tier is checked with the side's other
 * resting orders filled, again when a trigger order fires and when a maker fill opens, and when
 * leverage is raised with orders resting; lowering is never refused for a tier. And the fee pool
 * pays no maker rebate on a liquidation's fills (docs/risk-engine.md "Venue pools").
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { EngineEvent, ExecutionReport, OrderReport } from '../src/index.js';
import { liveAuctions } from '../src/index.js';
import { leverageOf, sizeOf, tierOf } from '../src/margin/scope.js';
import { BTC_SETTINGS, px, T0, TestVenue, usd, wallet } from '../src/testing/index.js';

const BTC = 'BTC-PERP';
const A = wallet(0xa1);
const B = wallet(0xb1);

const reportsOf = (events: readonly EngineEvent[], account: string): OrderReport[] =>
  events.filter(
    (e): e is OrderReport => e.type === 'executionReport' && e.account === account && 'order' in e,
  );

const kinds = (events: readonly EngineEvent[], account: string): string[] =>
  events
    .filter((e): e is ExecutionReport => e.type === 'executionReport' && e.account === account)
    .map((r) => r.kind);

describe('margin tiers: 40x up to 100,000 of notional, 5x from there; A at the default 10x', () => {
  let v: TestVenue;
  beforeEach(() => {
    v = new TestVenue({ checkPurity: true });
    v.list({
      ...BTC_SETTINGS,
      makerFeeRate: '0',
      takerFeeRate: '0',
      marginTiers: [{ notionalFloor: '100000', maxLeverage: 5 }],
    });
    for (const w of [A, B]) v.open(w);
    v.fund(A, '100000');
    v.fund(B, '1000000');
    v.expectOk(
      v.run({ type: 'updateLeverage', account: B, market: 1, mode: 'Cross', leverage: 100 }),
    );
    v.oracle({ [BTC]: '50000' });
  });

  /** A's leverage against the tier its position sits in at the mark. */
  function tierCapOfA(): { leverage: number; tierMax: number } {
    const a = v.state.accounts.get(A)!;
    const spec = v.spec(BTC);
    const tier = tierOf(spec, sizeOf(a, 1, 'Cross'), v.state.markets.get(1)!.prices.mark!);
    return { leverage: leverageOf(a, spec, 'Cross'), tierMax: tier.maxLeverage };
  }

  it("counts the side's other resting orders: two buys of 75,000 make a 150,000 position", () => {
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1.5', price: '50000' }));
    const second = v.place(A, BTC, { side: 'Buy', qty: '1.5', price: '50000' });
    expect(v.outcome(second)).toMatchObject({ ok: false, code: 4102 });
    expect(v.outcome(second)).toMatchObject({
      message: expect.stringContaining("this and the side's other resting orders: 150000"),
    });
    // The other side's orders reduce first: a sell of the same size is fine.
    v.expectOk(v.place(A, BTC, { side: 'Sell', qty: '1.5', price: '60000' }));
  });

  it('re-checks a trigger order when it fires and cancels it with reason MaxLeverage', () => {
    // Placed from flat: 1 x 50,000, the 40x tier.
    v.expectOk(
      v.place(A, BTC, {
        side: 'Buy',
        qty: '1',
        price: '51000',
        trigger: '50500',
        type: 'StopLimit',
      }),
    );
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1', price: '50000' }));
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', price: '50000' }));
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1', price: '51000' }));
    // The same stop placed now is refused: 2 x 50,000 reaches the 5x tier.
    const now = v.place(A, BTC, {
      side: 'Buy',
      qty: '1',
      price: '51000',
      trigger: '50600',
      type: 'StopLimit',
    });
    expect(v.outcome(now)).toMatchObject({ ok: false, code: 4102 });
    const fired = v.oracle({ [BTC]: '50500' });
    expect(kinds(fired, A)).toEqual(['OrderTriggered', 'OrderCancelled']);
    expect(reportsOf(fired, A)[1]!.order.reason).toBe('MaxLeverage');
    expect(sizeOf(v.state.accounts.get(A)!, 1, 'Cross')).toBe(10_000n);
  });

  it('cancels a resting maker whose fill would open into a tier the mark moved it to', () => {
    // 1.9 x 50,000 = 95,000: accepted in the 40x tier.
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1.9', price: '50000' }));
    // The mark rises to about 56,000: 1.9 long would be 106,400, the 5x tier.
    v.expectOk(v.place(B, BTC, { side: 'Buy', qty: '0.001', price: '55999.5' }));
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '0.001', price: '56000' }));
    v.oracle({ [BTC]: '56000' });
    expect(v.state.markets.get(1)!.prices.mark! > 52_700n * 10n ** 18n).toBe(true);
    const hit = v.place(B, BTC, { side: 'Sell', qty: '1.9', price: '50000' });
    expect(kinds(hit, A)).toEqual(['OrderCancelled']);
    expect(reportsOf(hit, A)[0]!.order.reason).toBe('MaxLeverage');
    expect(tierCapOfA()).toEqual({ leverage: 1000, tierMax: 4000 });
    expect(sizeOf(v.state.accounts.get(A)!, 1, 'Cross')).toBe(0n);
  });

  // A position over its tier's maximum must still be reducible by a resting reduce-only order
  // (the tier cap measures only fills that leave the position on the maker's side and larger).
  it('lets a resting reduce-only maker reduce a position that the mark moved over its tier', () => {
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1.9', price: '50000' }));
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1.9', price: '50000' }));
    v.expectOk(v.place(B, BTC, { side: 'Buy', qty: '0.001', price: '55999.5' }));
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '0.001', price: '56000' }));
    v.oracle({ [BTC]: '56000' });
    // 1.9 long at about 56,000 sits in the 5x tier; A is at 10x.
    expect(tierCapOfA()).toEqual({ leverage: 1000, tierMax: 500 });
    const ro = v.place(A, BTC, { side: 'Sell', qty: '0.1', price: '57000', reduceOnly: true });
    v.expectOk(ro);
    const C = wallet(0xc1);
    v.open(C);
    v.fund(C, '1000000');
    const hit = v.place(C, BTC, { side: 'Buy', qty: '0.101', price: '57000' });
    expect(kinds(hit, A)).toEqual(['OrderFilled']);
    expect(sizeOf(v.state.accounts.get(A)!, 1, 'Cross')).toBe(18_000n);
  });

  it('lets an amend that opens no more than before through, once the mark moved the side into a lower tier', () => {
    // 1 + 0.9 at 50,000 = 95,000: the 40x tier.
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1', price: '50000' }));
    const second = v.outcome(v.place(A, BTC, { side: 'Buy', qty: '0.9', price: '50000' }));
    const id = (second as { order: { orderId: number } }).order.orderId;
    // The mark rises to about 56,000: 1.9 would be about 106,400, the 5x tier.
    v.expectOk(v.place(B, BTC, { side: 'Buy', qty: '0.001', price: '55999.5' }));
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '0.001', price: '56000' }));
    v.oracle({ [BTC]: '56000' });
    const amend = (quantity: bigint) =>
      v.run({
        type: 'replaceOrder',
        account: A,
        market: 1,
        orderId: BigInt(id),
        origCloid: null,
        price: px('50000'),
        triggerPrice: 0n,
        quantity,
        cloid: null,
      });
    // Down to 0.8: the side's worst case only falls.
    expect(v.outcome(amend(8_000n))).toMatchObject({ ok: true });
    // The same size again opens no more either (found by mutation: `>` -> `>=` survived).
    expect(v.outcome(amend(8_000n))).toMatchObject({ ok: true });
    // Back up to 0.9 opens more: capped.
    expect(v.outcome(amend(9_000n))).toMatchObject({ ok: false, code: 4102 });
  });

  it('refuses raising leverage when a resting order would fill into a lower tier', () => {
    v.expectOk(
      v.run({ type: 'updateLeverage', account: A, market: 1, mode: 'Cross', leverage: 500 }),
    );
    // 3 x 50,000 = 150,000 at 5x: allowed; flat, but the order counts.
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '3', price: '50000' }));
    const raise = v.run({
      type: 'updateLeverage',
      account: A,
      market: 1,
      mode: 'Cross',
      leverage: 1000,
    });
    expect(v.outcome(raise)).toMatchObject({ ok: false, code: 4102 });
    // A resting sell of the same size (a short of 150,000 once filled) is checked too.
    v.expectOk(v.run({ type: 'cancelAll', account: A, market: 1 }));
    v.expectOk(v.place(A, BTC, { side: 'Sell', qty: '3', price: '60000' }));
    const again = v.run({
      type: 'updateLeverage',
      account: A,
      market: 1,
      mode: 'Cross',
      leverage: 1000,
    });
    expect(v.outcome(again)).toMatchObject({ ok: false, code: 4102 });
  });

  it('allows lowering leverage inside a higher tier: only margin governs lowering', () => {
    // 1.9 x 50,000 = 95,000 opened at 10x in the 40x tier.
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1.9', price: '50000' }));
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '1.9', price: '50000' }));
    // The mark carries it into the 5x tier.
    v.expectOk(v.place(B, BTC, { side: 'Buy', qty: '0.001', price: '59999.5' }));
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '0.001', price: '60000' }));
    v.oracle({ [BTC]: '60000' });
    expect(tierCapOfA().tierMax).toBe(500);
    const lower = v.run({
      type: 'updateLeverage',
      account: A,
      market: 1,
      mode: 'Cross',
      leverage: 800,
    });
    expect(v.outcome(lower)).toMatchObject({ ok: true });
    // Raising back is a raise: refused by the tier.
    const raise = v.run({
      type: 'updateLeverage',
      account: A,
      market: 1,
      mode: 'Cross',
      leverage: 900,
    });
    expect(v.outcome(raise)).toMatchObject({ ok: false, code: 4102 });
  });
});

describe("the instrument's maximum leverage when a trigger fires", () => {
  const setUp = (cash: string) => {
    const v = new TestVenue({ checkPurity: true });
    v.list({ ...BTC_SETTINGS, makerFeeRate: '0', takerFeeRate: '0' });
    for (const w of [A, B]) v.open(w);
    v.fund(A, cash);
    v.fund(B, '1000000');
    v.oracle({ [BTC]: '50000' });
    v.expectOk(
      v.run({ type: 'updateLeverage', account: A, market: 1, mode: 'Cross', leverage: 4000 }),
    );
    v.expectOk(
      v.place(A, BTC, {
        side: 'Buy',
        qty: '1',
        price: '51000',
        trigger: '50500',
        type: 'StopLimit',
      }),
    );
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '1', price: '51000' }));
    v.list({ ...BTC_SETTINGS, makerFeeRate: '0', takerFeeRate: '0', maxLeverage: 20 });
    return v;
  };

  it('a stop placed at 40x after the maximum was lowered to 20x is checked at 20x: it fills when that margin fits', () => {
    const v = setUp('10000');
    expect(leverageOf(v.state.accounts.get(A)!, v.spec(BTC), 'Cross')).toBe(2000);
    const fired = v.oracle({ [BTC]: '50500' });
    expect(kinds(fired, A)).toEqual(['OrderTriggered', 'OrderFilled']);
    expect(sizeOf(v.state.accounts.get(A)!, 1, 'Cross')).toBe(10_000n);
  });

  it('and is cancelled (InsufficientMargin) when it does not: 2,550 at 20x against 2,000', () => {
    const v = setUp('2000');
    const fired = v.oracle({ [BTC]: '50500' });
    expect(kinds(fired, A)).toEqual(['OrderTriggered', 'OrderCancelled']);
    expect(reportsOf(fired, A)[1]!.order.reason).toBe('InsufficientMargin');
    expect(sizeOf(v.state.accounts.get(A)!, 1, 'Cross')).toBe(0n);
  });
});

describe('no maker rebate on a liquidation fill', () => {
  const TAKER = wallet(0x91);
  const MAKER = wallet(0x92);
  const BIDDER = wallet(0x93);
  const SYM = 'A-PERP';

  it.each([
    ['the default liquidation fee', undefined],
    ['no liquidation fee', '0'],
  ])('with %s the fee pool pays nothing it did not receive', (_name, liquidationFee) => {
    const v = new TestVenue({ checkPurity: true });
    v.list({
      id: 1,
      symbol: SYM,
      tickSize: '0.5',
      lotSize: '1',
      quantityDecimals: 0,
      maxLeverage: 20,
      defaultLeverage: 20,
      openInterestCap: '1000000',
      // A rebate as large as the taker fee: allowed.
      makerFeeRate: '-0.0001',
      takerFeeRate: '0.0001',
      ...(liquidationFee === undefined ? {} : { liquidation: { feeRate: liquidationFee } }),
    });
    v.oracle({ [SYM]: '100' });
    for (const w of [TAKER, MAKER, BIDDER]) v.open(w);
    v.fund(TAKER, '600');
    v.fund(MAKER, '100000');
    v.fund(BIDDER, '100000');
    v.expectOk(v.place(MAKER, SYM, { side: 'Sell', qty: '100', price: '100' }));
    v.expectOk(v.place(TAKER, SYM, { side: 'Buy', qty: '100', price: '100' }));
    // The taker paid 1 and the maker got 1 back: the pool is empty.
    expect(v.state.feePool).toBe(0n);
    const bidderCash = v.state.accounts.get(BIDDER)!.crossCash;
    v.expectOk(v.place(BIDDER, SYM, { side: 'Buy', qty: '100', price: '96' }));
    // Mark 96: equity 600 - 400 = 200 is below MM 2.5% x 9,600 = 240: liquidated on the book.
    const events = v.oracle({ [SYM]: '94' });
    const bidderFills = reportsOf(events, BIDDER).filter((r) => r.fill !== undefined);
    expect(bidderFills.length).toBeGreaterThan(0);
    for (const r of bidderFills) expect(r.fill!.fee).toBe(0n);
    expect(v.state.feePool).toBe(0n);
    // The bidder bought at 96 and was paid no rebate.
    const bought = bidderFills.reduce((n, r) => n + r.fill!.quantity, 0n);
    expect(v.state.accounts.get(BIDDER)!.crossCash).toBe(bidderCash - bought * usd('96'));
  });
});

describe('an auction claim opens under the same caps', () => {
  it("is refused with 4102 when the claimant's position would sit in a tier below its leverage", () => {
    const GOLD = wallet(0x60);
    const MM = wallet(0x62);
    const S1 = wallet(0x70);
    const S2 = wallet(0x71);
    const S3 = wallet(0x72);
    const L1 = wallet(0x73);
    const CL = wallet(0x91);
    const ISO = {
      id: 3,
      symbol: 'ISO-PERP',
      tickSize: '0.5',
      lotSize: '1',
      quantityDecimals: 0,
      maxLeverage: 20,
      openInterestCap: '1000000',
      makerFeeRate: '0',
      takerFeeRate: '0',
      liquidation: { feeRate: '0', partialThreshold: '100000' },
    };
    const v = new TestVenue({ checkPurity: true });
    v.list(ISO);
    for (const w of [GOLD, S1, S2, S3, L1, MM, CL]) v.open(w!);
    v.fund(S1, '450');
    v.fund(S2, '3080');
    v.fund(S3, '10000');
    v.fund(L1, '100000');
    v.fund(MM, '1000000');
    v.fund(CL, '100000');
    v.fund(GOLD, '1000', 'ISO-PERP');
    v.run({ type: 'updateLeverage', account: S1, market: 3, mode: 'Cross', leverage: 2000 });
    v.oracle({ 'ISO-PERP': '100' });
    // The isolated long of GOLD, 100 at 100, against shorts; the mark then falls to about 92.
    v.expectOk(
      v.place(GOLD, 'ISO-PERP', { side: 'Buy', qty: '100', price: '100', isolated: true }),
    );
    v.expectOk(v.place(S1, 'ISO-PERP', { side: 'Sell', qty: '50', price: '100' }));
    v.expectOk(v.place(L1, 'ISO-PERP', { side: 'Sell', qty: '50', price: '100' }));
    v.expectOk(v.place(S2, 'ISO-PERP', { side: 'Sell', qty: '80', price: '95' }));
    v.expectOk(v.place(L1, 'ISO-PERP', { side: 'Buy', qty: '80', price: '95' }));
    v.expectOk(v.place(S3, 'ISO-PERP', { side: 'Sell', qty: '30', price: '85' }));
    v.expectOk(v.place(L1, 'ISO-PERP', { side: 'Buy', qty: '30', price: '85' }));
    v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Buy', qty: '1', price: '89.5' }));
    v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Sell', qty: '1', price: '94.5' }));
    v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Sell', qty: '1', price: '99' }));
    v.run({ type: 'oracle', time: T0 + 10 * 60_000, prices: [{ market: 3, price: px('92') }] });
    const auction = liveAuctions(v.state)[0]!;
    // The operator adds a tier: 5x from 1,000 of notional; CL is at the default 10x.
    v.list({ ...ISO, marginTiers: [{ notionalFloor: '1000', maxLeverage: 5 }] });
    const order = v.place(CL, 'ISO-PERP', { side: 'Buy', qty: '60', price: '80' });
    expect(v.outcome(order)).toMatchObject({ ok: false, code: 4102 });
    const claim = (quantity: bigint) =>
      v.run({
        type: 'claimLiquidation',
        account: CL,
        auctionId: auction.auctionId,
        maxPrice: px('100'),
        quantity,
      });
    // 60 at about 92 is about 5,520 of notional: refused, and it consumed its nonce only.
    expect(v.outcome(claim(60n))).toMatchObject({ ok: false, code: 4102 });
    expect(v.state.accounts.get(CL)!.claimReserve).toBe(0n);
    // 10 (about 920) stays in the 20x base tier: accepted.
    expect(v.outcome(claim(10n))).toMatchObject({ ok: true });
  });
});
