/**
 * Liquidation behaviour at its edges (engine-rules 7, docs/risk-engine.md), from a review that
 * found each of these broken: the market step stopping at a cancelled maker, ADL taking margin
 * added during an auction or a position a bust flipped, claims settling into a scope that is
 * itself being liquidated, and an isolated deficit reaching the account's own cross position.
 * Golden case C's market (risk.golden.test.ts) is the setting.
 */
import { describe, expect, it } from 'vitest';
import {
  type EngineEvent,
  type ExecutionReport,
  instrumentSettingsOf,
  liveAuctions,
  type OrderReport,
  solvencyReport,
} from '../src/index.js';
import {
  instrument,
  px,
  T0,
  TestVenue,
  usd,
  wallet,
  wholeLotSettings,
} from '../src/testing/index.js';

const GOLD = wallet(0x60);
const MM = wallet(0x62);
const S1 = wallet(0x70);
const S2 = wallet(0x71);
const S3 = wallet(0x72);
const L1 = wallet(0x73);
const BAD = wallet(0x90);
const CL = wallet(0x91);

function rep<K extends ExecutionReport['kind']>(
  ev: readonly EngineEvent[],
  kind: K,
  account?: string,
) {
  return ev.filter(
    (e): e is Extract<ExecutionReport, { kind: K }> =>
      e.type === 'executionReport' &&
      e.kind === kind &&
      (account === undefined || e.account === account),
  );
}

function venueC(threshold = '100000'): TestVenue {
  const v = new TestVenue();
  v.list({
    id: 3,
    symbol: 'ISO-PERP',
    tickSize: '0.5',
    lotSize: '1',
    quantityDecimals: 0,
    maxLeverage: 20,
    openInterestCap: '1000000',
    makerFeeRate: '0',
    takerFeeRate: '0',
    liquidation: { feeRate: '0', partialThreshold: threshold },
  });
  for (const w of [GOLD, S1, S2, S3, L1, MM]) v.open(w);
  v.fund(S1, '450');
  v.fund(S2, '3080');
  v.fund(S3, '10000');
  v.fund(L1, '100000');
  v.fund(MM, '1000000');
  v.fund(GOLD, '1000', 'ISO-PERP');
  v.run({ type: 'updateLeverage', account: S1, market: 3, mode: 'Cross', leverage: 2000 });
  v.oracle({ 'ISO-PERP': '100' });
  v.expectOk(v.place(GOLD, 'ISO-PERP', { side: 'Buy', qty: '100', price: '100', isolated: true }));
  v.expectOk(v.place(S1, 'ISO-PERP', { side: 'Sell', qty: '50', price: '100' }));
  v.expectOk(v.place(L1, 'ISO-PERP', { side: 'Sell', qty: '50', price: '100' }));
  v.expectOk(v.place(S2, 'ISO-PERP', { side: 'Sell', qty: '80', price: '95' }));
  v.expectOk(v.place(L1, 'ISO-PERP', { side: 'Buy', qty: '80', price: '95' }));
  v.expectOk(v.place(S3, 'ISO-PERP', { side: 'Sell', qty: '30', price: '85' }));
  v.expectOk(v.place(L1, 'ISO-PERP', { side: 'Buy', qty: '30', price: '85' }));
  return v;
}

function auctionVenue(): TestVenue {
  const v = venueC();
  v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Buy', qty: '1', price: '89.5' }));
  v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Sell', qty: '1', price: '94.5' }));
  v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Sell', qty: '1', price: '99' }));
  const ev = v.run({
    type: 'oracle',
    time: T0 + 10 * 60_000,
    prices: [{ market: 3, price: px('92') }],
  });
  expect(v.state.markets.get(3)!.prices.mark).toBe(px('92'));
  expect(ev.filter((e) => e.type === 'auction').length).toBe(1);
  return v;
}

/** Lists X-PERP (market 4, whole lots, no fees): a second market beside the auction's. */
function listX(v: TestVenue): void {
  v.list({
    id: 4,
    symbol: 'X-PERP',
    tickSize: '0.5',
    lotSize: '1',
    quantityDecimals: 0,
    maxLeverage: 20,
    openInterestCap: '1000000',
    makerFeeRate: '0',
    takerFeeRate: '0',
  });
}

function markTo(v: TestVenue, symbol: string, mark: string, tick: string): EngineEvent[] {
  const id = v.spec(symbol).id;
  const target = px(mark);
  const t = px(tick);
  const last = v.state.markets.get(id)!.lastTrade;
  const fmt = (x: bigint) => (Number(x) / 1e18).toString();
  const [bid, ask] = last !== null && last > target ? [target - t, target] : [target, target + t];
  v.run({ type: 'cancelAll', account: MM, market: id });
  v.expectOk(v.place(MM, symbol, { side: 'Buy', qty: '1', price: fmt(bid) }));
  v.expectOk(v.place(MM, symbol, { side: 'Sell', qty: '1', price: fmt(ask) }));
  const events = v.oracle({ [symbol]: mark });
  expect(v.state.markets.get(id)!.prices.mark).toBe(target);
  return events;
}

const isoCash = (v: TestVenue, w: string) =>
  v.state.accounts.get(w)!.isolated.find((p) => p.market === 3)?.cash;

const adlOf = (ev: readonly EngineEvent[], w: string) =>
  rep(ev, 'Liquidation', w).map((r) => [r.method, r.fill.quantity, r.fill.price]);

describe('a new maintenance margin rate', () => {
  it("liquidates the scopes it puts below maintenance at once, not at the market's next oracle", () => {
    const v = venueC();
    // At mark 100 GOLD's isolated equity is 1,000 and S1's cross equity 450. A maximum of 4x
    // takes maintenance to 1 / (2 x 4) = 12.5 %: 1,250 for GOLD's 100 and 625 for S1's 50.
    const events = v.run({
      type: 'setInstrument',
      instrument: instrument({
        ...instrumentSettingsOf(v.spec('ISO-PERP')),
        maxLeverage: 4,
        defaultLeverage: 4,
      }),
    });
    expect(v.outcome(events).ok).toBe(true);
    const started = events.filter((e) => e.type === 'liquidationStarted');
    expect(started.map((e) => [e.account, e.marginMode, e.equity, e.maintenanceMargin])).toEqual([
      [GOLD, 'Isolated', usd('1000'), usd('1250')],
      [S1, 'Cross', usd('450'), usd('625')],
    ]);
    // Nothing bid near the bankruptcy prices: both go to auction, and no scope is left below
    // maintenance outside its auction.
    expect(liveAuctions(v.state).map((a) => a.remaining)).toEqual([100n, 50n]);
    // A change that leaves maintenance as it was (a new fee) checks nobody.
    const fee = v.run({
      type: 'setInstrument',
      instrument: instrument({
        ...instrumentSettingsOf(v.spec('ISO-PERP')),
        takerFeeRate: '0.0001',
      }),
    });
    expect(fee.filter((e) => e.type === 'liquidationStarted')).toEqual([]);
  });
});

describe('a market without an index', () => {
  // Its positions are valued at the last trade (docs/risk-engine.md, "Mark price"), so a print
  // between two other accounts moves every holder's equity, as a mark move does.
  const A = wallet(0xa0);
  const B = wallet(0xa1);
  const C = wallet(0xa2);
  const D = wallet(0xa3);

  /** X-PERP (20x, 2.5 % maintenance) with no oracle ever; A isolated long 10 @ `price`. */
  function noIndex(price: string, margin: string): TestVenue {
    const v = new TestVenue();
    v.list(wholeLotSettings('X-PERP'));
    for (const w of [A, B, C, D]) {
      v.open(w);
      v.fund(w, '100000');
    }
    v.fund(A, margin, 'X-PERP');
    v.expectOk(v.place(B, 'X-PERP', { side: 'Sell', qty: '10', price }));
    v.expectOk(v.place(A, 'X-PERP', { side: 'Buy', qty: '10', price, isolated: true }));
    expect(v.state.markets.get(1)!.prices.mark).toBe(null);
    return v;
  }

  function trade(v: TestVenue, price: string): EngineEvent[] {
    v.expectOk(v.place(C, 'X-PERP', { side: 'Sell', qty: '1', price }));
    return v.place(D, 'X-PERP', { side: 'Buy', qty: '1', price });
  }

  it("liquidates a holder that another pair's print puts below maintenance, in that command", () => {
    const v = noIndex('100', '60');
    // Valued at 95: equity 60 - 50 = 10 < maintenance 950 x 2.5 % = 23.75.
    const events = trade(v, '95');
    expect(v.state.markets.get(1)!.lastTrade).toBe(px('95'));
    const started = events.filter((e) => e.type === 'liquidationStarted');
    expect(started.map((e) => [e.account, e.equity, e.maintenanceMargin])).toEqual([
      [A, usd('10'), 23_750_000n],
    ]);
  });

  it('liquidates a holder that a bust of the last print puts below maintenance', () => {
    const v = noIndex('90', '45');
    const print = trade(v, '100').find((e) => e.type === 'trade')!;
    // Valued at 100, A's equity is 45 + 100 = 145 and may go down to 10 % of the notional 1,000.
    const withdraw = (amount: bigint) =>
      v.run({ type: 'withdraw', account: A, amount, target: { mode: 'Isolated', market: 1 } });
    v.expectOk(withdraw(usd('45')));
    // The bust puts the last trade back at 90: equity 100 - 100 = 0 < 900 x 2.5 % = 22.5.
    const events = v.run({
      type: 'bustTrade',
      tradeId: print.type === 'trade' ? print.tradeId : -1,
      reason: 'erroneous',
    });
    v.expectOk(events);
    expect(v.state.markets.get(1)!.lastTrade).toBe(px('90'));
    const started = events.filter((e) => e.type === 'liquidationStarted');
    expect(started.map((e) => [e.account, e.equity, e.maintenanceMargin])).toEqual([
      [A, 0n, usd('22.5')],
    ]);
  });
});

describe('the market step', () => {
  it('goes on past a maker cancelled for margin to the bids behind it', () => {
    const v = venueC();
    // BAD: long 10 @ 85, then a bid of 100 @ 91.5 that fits at mark 100 but not after the drop.
    v.open(BAD);
    v.fund(BAD, '865');
    v.expectOk(v.place(S3, 'ISO-PERP', { side: 'Sell', qty: '10', price: '85' }));
    v.expectOk(v.place(BAD, 'ISO-PERP', { side: 'Buy', qty: '10', price: '85' }));
    v.expectOk(v.place(BAD, 'ISO-PERP', { side: 'Buy', qty: '100', price: '91.5' }));
    // Golden C1's bid, behind BAD's in the queue.
    v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Buy', qty: '100', price: '91.5' }));
    v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Sell', qty: '1', price: '92.5' }));
    const ev = v.oracle({ 'ISO-PERP': '92' });
    expect(v.state.markets.get(3)!.prices.mark).toBe(px('92'));
    const cancelled = ev.filter(
      (e): e is OrderReport =>
        e.type === 'executionReport' && e.account === BAD && e.kind === 'OrderCancelled',
    );
    expect(cancelled.map((r) => r.order.reason)).toEqual(['InsufficientMargin']);
    // Golden C1: the book takes all 100 @ 91.5 and the scope keeps 150; no auction.
    expect(adlOf(ev, GOLD)).toEqual([['Market', 100n, px('91.5')]]);
    expect(liveAuctions(v.state)).toEqual([]);
    expect(isoCash(v, GOLD)).toBe(usd('150'));
  });
});

describe('the end of an auction', () => {
  it('leaves a scope margined back to health with its position and its money', () => {
    const v = auctionVenue();
    const end = liveAuctions(v.state)[0]!.endTime;
    // 5,000 more in the isolated pool during the auction: equity 5,200 against 230.
    v.fund(GOLD, '5000', 'ISO-PERP');
    const ev = v.run({ type: 'tick', time: end });
    expect(adlOf(ev, GOLD)).toEqual([]);
    expect(isoCash(v, GOLD)).toBe(usd('-4000'));
    expect(v.state.accounts.get(GOLD)!.positions.map((p) => p.size)).toEqual([100n]);
    expect(ev.some((e) => e.type === 'auction' && e.auction.status === 'Ended')).toBe(true);
  });

  it('leaves a scope the mark brought back to health alone', () => {
    const v = auctionVenue();
    const end = liveAuctions(v.state)[0]!.endTime;
    markTo(v, 'ISO-PERP', '100', '0.5'); // equity 1,000 against 250
    const ev = v.run({ type: 'tick', time: end });
    expect(adlOf(ev, GOLD)).toEqual([]);
    expect(v.state.accounts.get(GOLD)!.positions.map((p) => p.size)).toEqual([100n]);
  });

  it('deleverages only the position it offered, not one a bust flipped to the other side', () => {
    const v = venueC();
    v.open(BAD);
    v.fund(BAD, '3000', 'ISO-PERP');
    // BAD isolated: short 20 @ 100, then buys 120 @ 100 (trade B): long 100.
    v.expectOk(v.place(BAD, 'ISO-PERP', { side: 'Sell', qty: '20', price: '100', isolated: true }));
    v.expectOk(v.place(L1, 'ISO-PERP', { side: 'Buy', qty: '20', price: '100' }));
    v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Sell', qty: '120', price: '100' }));
    const bought = v.place(BAD, 'ISO-PERP', {
      side: 'Buy',
      qty: '120',
      price: '100',
      isolated: true,
    });
    v.expectOk(bought);
    const tradeB = (bought.find((e) => e.type === 'trade') as { tradeId: number }).tradeId;
    // The mark falls onto a thin book: BAD's long goes to auction.
    v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Buy', qty: '1', price: '60' }));
    v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Sell', qty: '1', price: '80' }));
    v.run({ type: 'oracle', time: v.time + 600_000, prices: [{ market: 3, price: px('71') }] });
    const mine = liveAuctions(v.state).find(
      (a) => v.state.auctions.get(a.auctionId)!.account === BAD,
    );
    expect(mine).toBeDefined();
    // The operator busts trade B: BAD is a healthy short 20 again.
    v.expectOk(v.run({ type: 'bustTrade', tradeId: tradeB, reason: 'erroneous' }));
    const before = isoCash(v, BAD);
    const end = v.run({ type: 'tick', time: mine!.endTime });
    expect(adlOf(end, BAD)).toEqual([]);
    expect(v.state.accounts.get(BAD)!.positions.find((p) => p.mode === 'Isolated')?.size).toBe(
      -20n,
    );
    expect(isoCash(v, BAD)).toBe(before);
  });
});

describe("claims and the claimant's own liquidation", () => {
  it('gives back the claims of a claimant whose cross scope is liquidated, and refuses new ones', () => {
    const v = auctionVenue();
    listX(v);
    v.open(CL);
    v.fund(CL, '1600');
    v.oracle({ 'X-PERP': '100' });
    v.expectOk(v.place(MM, 'X-PERP', { side: 'Sell', qty: '100', price: '100' }));
    v.expectOk(v.place(CL, 'X-PERP', { side: 'Buy', qty: '100', price: '100' })); // IM 1,000
    const a = liveAuctions(v.state)[0]!;
    const claim = {
      type: 'claimLiquidation',
      account: CL,
      auctionId: a.auctionId,
      maxPrice: px('92'),
    } as const;
    v.expectOk(v.run({ ...claim, quantity: 60n }));
    expect(liveAuctions(v.state)[0]!.remaining).toBe(40n);
    // X crashes: CL's cross scope is liquidated, and its claim goes back to the auction.
    const crash = markTo(v, 'X-PERP', '85', '0.5');
    const released = rep(crash, 'LiquidationClaim', CL);
    expect(released.map((r) => [r.status, r.quantity])).toEqual([['Released', 60n]]);
    expect(v.state.accounts.get(CL)!.claimReserve).toBe(0n);
    expect(v.state.auctions.get(a.auctionId)!.remaining).toBe(100n);
    // While its own liquidation runs (an auction of its X position), it cannot claim.
    const ownAuction = liveAuctions(v.state).some(
      (x) => v.state.auctions.get(x.auctionId)!.account === CL,
    );
    expect(ownAuction).toBe(true);
    const again = v.run({ ...claim, quantity: 10n });
    expect(v.outcome(again)).toMatchObject({ ok: false, code: 4100 });
    expect(v.outcome(again).ok ? '' : (v.outcome(again) as { message: string }).message).toMatch(
      /being liquidated/,
    );
  });
});

describe('ADL against an isolated position', () => {
  it("reaches the account's own cross position only after every other holder", () => {
    const v = venueC();
    v.fund(GOLD, '500');
    v.expectOk(v.place(L1, 'ISO-PERP', { side: 'Buy', qty: '50', price: '100' }));
    v.expectOk(v.place(GOLD, 'ISO-PERP', { side: 'Sell', qty: '50', price: '100' }));
    const ev = markTo(v, 'ISO-PERP', '89', '0.5');
    const adl = rep(ev, 'ADL').map((r) => [r.account, r.marginMode]);
    expect(adl.length).toBeGreaterThan(0);
    expect(adl.some(([a, m]) => a === GOLD && m === 'Cross')).toBe(false);
  });

  it("closes the account's own cross position at the mark when it is the only other side: the deficit never reaches the cross pool", () => {
    const G = wallet(0x64);
    const X = wallet(0x65);
    const v = new TestVenue();
    v.list({ ...wholeLotSettings('ISO-PERP', 3), defaultLeverage: 10, maxLeverage: 40 });
    for (const w of [G, X, MM]) v.open(w);
    v.fund(G, '5000');
    v.fund(G, '1000', 'ISO-PERP');
    v.fund(X, '100000');
    v.fund(MM, '100000');
    v.oracle({ 'ISO-PERP': '100' });
    // G long 100 isolated and short 100 cross, both against X, who ends flat: G's own cross
    // short is the only short there is.
    v.expectOk(v.place(X, 'ISO-PERP', { side: 'Sell', qty: '100', price: '100' }));
    v.expectOk(v.place(G, 'ISO-PERP', { side: 'Buy', qty: '100', price: '100', isolated: true }));
    v.expectOk(v.place(X, 'ISO-PERP', { side: 'Buy', qty: '100', price: '100' }));
    v.expectOk(v.place(G, 'ISO-PERP', { side: 'Sell', qty: '100', price: '100' }));
    expect(isoCash(v, G)).toBe(usd('-9000'));
    expect(v.state.accounts.get(G)!.crossCash).toBe(usd('15000'));
    // The mark falls to 89: the isolated scope is 100 below zero (bankruptcy price 90), and no
    // bid reaches 90.
    const ev = markTo(v, 'ISO-PERP', '89', '0.5');
    // Its own cross short closes at the mark, not at 90: the cross scope keeps its value at the
    // mark, 15,000 - 8,900, and the isolated deficit stays with the isolated pool for the
    // insurance fund and the backstop (both empty here: the account's debt).
    expect(rep(ev, 'ADL', G).map((r) => [r.marginMode, r.fill.quantity, r.fill.price])).toEqual([
      ['Cross', 100n, px('89')],
    ]);
    const g = v.state.accounts.get(G)!;
    expect(g.positions.filter((p) => p.size !== 0n)).toEqual([]);
    expect(g.crossCash).toBe(usd('6100'));
    expect(isoCash(v, G)).toBe(usd('-100'));
    expect(ev.filter((e) => e.type === 'backstop')).toMatchObject([{ debt: usd('100') }]);
    expect(solvencyReport(v.state).totalDebt).toBe(usd('100'));
  });
});

describe('an auction blocks new orders in its own scope only', () => {
  it("GOLD's isolated ISO-PERP auction leaves its cross scope and its X-PERP isolated scope open", () => {
    const v = auctionVenue();
    listX(v);
    v.oracle({ 'X-PERP': '100' });
    v.fund(GOLD, '1000');
    v.fund(GOLD, '1000', 'X-PERP');
    const blocked = v.place(GOLD, 'ISO-PERP', {
      side: 'Buy',
      qty: '1',
      price: '80',
      isolated: true,
    });
    expect(v.outcome(blocked)).toMatchObject({
      ok: false,
      message: 'INVALID_REQUEST: the margin scope is being liquidated',
    });
    v.expectOk(v.place(GOLD, 'ISO-PERP', { side: 'Buy', qty: '1', price: '80' }));
    v.expectOk(v.place(GOLD, 'X-PERP', { side: 'Buy', qty: '1', price: '90', isolated: true }));
  });
});

describe('an order from a scope being liquidated', () => {
  it('is rejected with reason Liquidation, its nonce consumed', () => {
    const v = auctionVenue();
    const auction = liveAuctions(v.state)[0]!;
    const { account, mode } = v.state.auctions.get(auction.auctionId)!;
    expect([account, mode]).toEqual([GOLD, 'Isolated']);
    const events = v.place(GOLD, 'ISO-PERP', {
      side: 'Buy',
      qty: '1',
      price: '90',
      isolated: true,
    });
    expect(v.outcome(events)).toMatchObject({
      ok: false,
      code: 4000,
      message: 'INVALID_REQUEST: the margin scope is being liquidated',
      nonceConsumed: true,
    });
    const rejected = v.reports(events, GOLD);
    expect(rejected.map((r) => [r.kind, (r as OrderReport).order.reason])).toEqual([
      ['OrderRejected', 'Liquidation'],
    ]);
  });
});

describe('the solvency report', () => {
  const LO = wallet(0x10);

  /**
   * Golden case C with LO (an address below GOLD's) long 20 cross in ISO-PERP, long 10 isolated
   * in ISO-PERP and long 20 isolated in X-PERP, each at 100 with 10 of margin per lot (20x, no
   * fees). At mark 92 on a book bidding 89.5, under every bankruptcy price (90), all four scopes
   * go to auction; the mark then falls to 85 while they run. LO's X-PERP pool is funded first,
   * so its pools are not in market order.
   */
  function fourAuctions(): TestVenue {
    const v = venueC();
    listX(v);
    v.open(LO);
    v.fund(LO, '200', 'X-PERP');
    v.fund(LO, '200');
    v.fund(LO, '100', 'ISO-PERP');
    for (const [market, mode] of [
      [3, 'Cross'],
      [3, 'Isolated'],
      [4, 'Isolated'],
    ] as const) {
      v.expectOk(v.run({ type: 'updateLeverage', account: LO, market, mode, leverage: 2000 }));
    }
    v.expectOk(v.place(MM, 'ISO-PERP', { side: 'Sell', qty: '30', price: '100' }));
    v.expectOk(v.place(LO, 'ISO-PERP', { side: 'Buy', qty: '20', price: '100' }));
    v.expectOk(v.place(LO, 'ISO-PERP', { side: 'Buy', qty: '10', price: '100', isolated: true }));
    v.expectOk(v.place(MM, 'X-PERP', { side: 'Sell', qty: '20', price: '100' }));
    v.expectOk(v.place(LO, 'X-PERP', { side: 'Buy', qty: '20', price: '100', isolated: true }));
    for (const symbol of ['ISO-PERP', 'X-PERP']) {
      v.expectOk(v.place(MM, symbol, { side: 'Buy', qty: '1', price: '89.5' }));
      v.expectOk(v.place(MM, symbol, { side: 'Sell', qty: '1', price: '94.5' }));
      v.expectOk(v.place(MM, symbol, { side: 'Sell', qty: '1', price: '99' }));
    }
    v.run({
      type: 'oracle',
      time: T0 + 10 * 60_000,
      prices: [
        { market: 3, price: px('92') },
        { market: 4, price: px('92') },
      ],
    });
    expect(v.state.markets.get(3)!.prices.mark).toBe(px('92'));
    expect(v.state.markets.get(4)!.prices.mark).toBe(px('92'));
    expect(liveAuctions(v.state)).toHaveLength(4);
    // Equity at 92 is still positive everywhere (GOLD 1,000 - 800): nothing is owed yet.
    expect(solvencyReport(v.state).debts).toEqual([]);
    markTo(v, 'ISO-PERP', '85', '0.5');
    markTo(v, 'X-PERP', '85', '0.5');
    expect(liveAuctions(v.state)).toHaveLength(4);
    return v;
  }

  /** The ledger's own sum: every pool, the fee pool and the insurance fund. */
  function pools(v: TestVenue): bigint {
    let total = v.state.insuranceFund + v.state.feePool;
    v.state.accounts.forEach((a) => {
      total += a.crossCash;
      for (const p of a.isolated) total += p.cash;
    });
    return total;
  }

  it('lists the scopes below zero during their auctions by account, cross first, then isolated by market', () => {
    const v = fourAuctions();
    // No fees and no liquidation fill yet: each pool holds its deposit less what its long cost,
    // and equity is that plus size x 85. LO cross 200 - 2,000 + 1,700 = -100, LO ISO-PERP
    // -50, LO X-PERP -100, GOLD ISO-PERP 1,000 - 10,000 + 8,500 = -500. LO's address sorts
    // before GOLD's whatever the accounts' map order, and the amounts are in no order of their
    // own.
    expect(v.state.accounts.get(LO)!.crossCash).toBe(usd('-1800'));
    expect(isoCash(v, GOLD)).toBe(usd('-9000'));
    const r = solvencyReport(v.state);
    expect(r.debts).toEqual([
      { account: LO, marginMode: 'Cross', market: 0, debt: usd('100'), inAuction: true },
      { account: LO, marginMode: 'Isolated', market: 3, debt: usd('50'), inAuction: true },
      { account: LO, marginMode: 'Isolated', market: 4, debt: usd('100'), inAuction: true },
      { account: GOLD, marginMode: 'Isolated', market: 3, debt: usd('500'), inAuction: true },
    ]);
    expect(r.totalDebt).toBe(usd('750'));
    // The pools it reports are the ledger's, and they hold every deposit (none withdrawn).
    expect(r).toMatchObject({
      insuranceFund: v.state.insuranceFund,
      feePool: v.state.feePool,
      totalDeposits: v.state.totalDeposits,
      totalWithdrawals: 0n,
    });
    expect(r.totalDeposits - r.totalWithdrawals).toBe(pools(v));
  });

  it('drops each scope once its auction has ended and ADL at the bankruptcy price left it at zero', () => {
    const v = fourAuctions();
    const before = solvencyReport(v.state);
    v.run({ type: 'tick', time: liveAuctions(v.state)[0]!.endTime });
    expect(liveAuctions(v.state)).toEqual([]);
    // Each scope is flat at exactly zero (no scope is listed with a debt of zero), the venue's
    // pools paid nothing, and no money entered or left the venue.
    expect(v.state.accounts.get(LO)!.positions).toEqual([]);
    expect(v.state.accounts.get(LO)!.crossCash).toBe(0n);
    expect(isoCash(v, GOLD)).toBe(0n);
    const r = solvencyReport(v.state);
    expect(r).toEqual({ ...before, debts: [], totalDebt: 0n });
    expect(r.totalDeposits - r.totalWithdrawals).toBe(pools(v));
  });
});
