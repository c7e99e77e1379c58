/**
 * Golden cases A, B (without funding), D and E of research/perp-mechanics.md section 6.4, driven
 * through the engine (deposits, trades, oracle marks) and read back through the account
 * summary, exactly.
 */
import { describe, expect, it } from 'vitest';
import {
  type AccountSummary,
  accountSummary,
  availableToOpen,
  type EngineEvent,
  maintenanceMargin,
  measureScope,
  type OrderReport,
} from '../src/index.js';
import { instrument, px, TestVenue, wallet } from '../src/testing/index.js';

const GOLD = wallet(0x60); // the account under test
const MAKER = wallet(0x61); // counterparty
const MM = wallet(0x62); // market maker that frames the mark

function summary(v: TestVenue): AccountSummary {
  return accountSummary(v.state, GOLD, v.time)!;
}

/**
 * Sets the mark of `symbol` to exactly `mark`: a symmetric one-tick quote around it makes the
 * book mid (and the basis EMA sample) equal the index, so the median is the index.
 */
function setMark(v: TestVenue, symbol: string, mark: string, tick: string): void {
  const m = Number(mark);
  const t = Number(tick);
  const digits = (tick.split('.')[1] ?? '').length;
  const qd = v.spec(symbol).quantityDecimals;
  const qty = (Math.ceil((10 / m) * 10 ** qd) / 10 ** qd).toFixed(qd); // ~10 USD: above the minimum
  v.run({ type: 'cancelAll', account: MM, market: 0 });
  v.expectOk(v.place(MM, symbol, { side: 'Buy', qty, price: (m - t).toFixed(digits) }));
  v.expectOk(v.place(MM, symbol, { side: 'Sell', qty, price: (m + t).toFixed(digits) }));
  v.oracle({ [symbol]: mark });
  expect(v.state.markets.get(v.spec(symbol).id)!.prices.mark).toBe(px(mark));
}

function tradeAsTaker(
  v: TestVenue,
  symbol: string,
  side: 'Buy' | 'Sell',
  qty: string,
  price: string,
  isolated = false,
): EngineEvent[] {
  v.place(MAKER, symbol, { side: side === 'Buy' ? 'Sell' : 'Buy', qty, price });
  const events = v.place(GOLD, symbol, { side, qty, price, isolated });
  const outcome = events.find((e) => e.type === 'outcome');
  if (outcome?.type !== 'outcome' || !outcome.ok)
    throw new Error(
      `trade refused: ${JSON.stringify(outcome, (_k, x) => (typeof x === 'bigint' ? String(x) : x))}`,
    );
  return events;
}

describe('golden case A: Hyperliquid isolated example', () => {
  it('reproduces every figure of the published account state', () => {
    const v = new TestVenue();
    // ETH, max 50x (mmr 1%), 0.1 tick, 0.0001 lot; a 0.025% taker fee lets the isolated cash
    // land exactly on HL's rawUsd after opening at 20x.
    v.list({
      id: 7,
      symbol: 'ETH-PERP',
      tickSize: '0.1',
      lotSize: '0.0001',
      quantityDecimals: 4,
      maxLeverage: 50,
      openInterestCap: '1000000',
      makerFeeRate: '0',
      takerFeeRate: '0.00025',
    });
    for (const w of [GOLD, MAKER, MM]) v.open(w);
    v.fund(MAKER, '100000');
    v.fund(MM, '100000');
    v.fund(GOLD, '13104.514502');
    v.fund(GOLD, '5.006237', 'ETH-PERP');
    v.run({ type: 'updateLeverage', account: GOLD, market: 7, mode: 'Isolated', leverage: 2000 });
    v.oracle({ 'ETH-PERP': '2986.3' });
    tradeAsTaker(v, 'ETH-PERP', 'Buy', '0.0335', '2986.3', true);
    setMark(v, 'ETH-PERP', '2985.9', '0.1');
    const s = summary(v);
    const iso = s.assetPositions.find((p) => p.marginMode === 'Isolated')!;
    expect(iso).toEqual({
      instrument: 'ETH-PERP',
      marginMode: 'Isolated',
      entryPx: '2986.3',
      leverage: 20,
      // 95.059824 / (0.0335 x 0.99), half-even at 18 decimals
      liquidationPx: '2866.269380370872908186',
      marginUsed: '4.967826',
      maxLeverage: 50,
      positionValue: '100.02765',
      returnOnEquity: '-0.0026789',
      szi: '0.0335',
      unrealizedPnl: '-0.0134',
      transferable: '0',
    });
    expect(s.crossMarginSummary).toEqual({
      accountValue: '13104.514502',
      totalMarginUsed: '0',
      totalNtlPos: '0',
      totalRawUsd: '13104.514502',
    });
    expect(s.marginSummary).toEqual({
      accountValue: '13109.482328',
      totalMarginUsed: '4.967826',
      totalNtlPos: '100.02765',
      totalRawUsd: '13009.454678',
    });
    expect(s.withdrawable).toBe('13104.514502');
    expect(s.crossMaintenanceMarginUsed).toBe('0');
    // MM = 100.02765 x 1% = 1.0002765, rounded up
    expect(s.maintenanceMarginUsed).toBe('1.000277');
  });
});

describe('golden case B: cross account with two positions (no funding yet)', () => {
  it('reproduces account value, margins, withdrawable, ROE and both liquidation prices', () => {
    const v = new TestVenue();
    v.list({
      id: 1,
      symbol: 'BTC-PERP',
      tickSize: '0.5',
      lotSize: '0.001',
      quantityDecimals: 3,
      maxLeverage: 40,
      defaultLeverage: 10,
      openInterestCap: '1000',
      makerFeeRate: '0',
      takerFeeRate: '0',
    });
    v.list({
      id: 2,
      symbol: 'ETH-PERP',
      tickSize: '0.01',
      lotSize: '0.001',
      quantityDecimals: 3,
      maxLeverage: 25,
      defaultLeverage: 5,
      openInterestCap: '100000',
      makerFeeRate: '0',
      takerFeeRate: '0',
    });
    for (const w of [GOLD, MAKER, MM]) v.open(w);
    v.fund(MAKER, '1000000');
    v.fund(MM, '1000000');
    v.fund(GOLD, '20000');
    v.oracle({ 'BTC-PERP': '60000', 'ETH-PERP': '3000' });
    tradeAsTaker(v, 'BTC-PERP', 'Buy', '1', '60000');
    tradeAsTaker(v, 'ETH-PERP', 'Sell', '10', '3000');
    setMark(v, 'BTC-PERP', '58000', '0.5');
    setMark(v, 'ETH-PERP', '3100', '0.01');
    const s = summary(v);
    expect(s.crossMarginSummary).toEqual({
      accountValue: '17000',
      totalMarginUsed: '12000',
      totalNtlPos: '89000',
      totalRawUsd: '-10000',
    });
    expect(s.crossMaintenanceMarginUsed).toBe('1345');
    expect(s.withdrawable).toBe('5000');
    const btc = s.assetPositions.find((p) => p.instrument === 'BTC-PERP')!;
    const eth = s.assetPositions.find((p) => p.instrument === 'ETH-PERP')!;
    expect(btc.returnOnEquity).toBe('-0.33333333');
    expect(eth.returnOnEquity).toBe('-0.16666667');
    // 3329600/79 and 236375/51
    expect(btc.liquidationPx).toBe('42146.835443037974683544');
    expect(eth.liquidationPx).toBe('4634.80392156862745098');
    expect(btc.marginUsed).toBe('5800');
    expect(eth.marginUsed).toBe('6200');
    expect(btc.szi).toBe('1');
    expect(eth.szi).toBe('-10');
    expect(eth.unrealizedPnl).toBe('-1000');
    // availableToTrade = 17000 - 12000 = 5000 (no resting order); margin_available = 17000 - 1345.
    const m = measureScope(v.state, v.state.accounts.get(GOLD)!, 'Cross', 0);
    expect(availableToOpen(m)).toBe(5_000_000_000n);
    expect(m.equity - m.maintenanceMargin).toBe(15_655_000_000n);
    // Both bind: a bid holding exactly 5000 at 10x is accepted, one lot more is 4100; the
    // withdrawal of 5000 passes, one micro-unit more is refused.
    const bid = (qty: string) =>
      v
        .place(GOLD, 'BTC-PERP', { side: 'Buy', qty, price: '50000' })
        .find((e) => e.type === 'outcome');
    expect(bid('1.001')).toMatchObject({ ok: false, code: 4100 });
    expect(bid('1')).toMatchObject({ ok: true });
    v.run({ type: 'cancelAll', account: GOLD, market: 0 });
    const withdraw = (amount: bigint) =>
      v
        .run({ type: 'withdraw', account: GOLD, amount, target: { mode: 'Cross', market: 0 } })
        .find((e) => e.type === 'outcome');
    expect(withdraw(5_000_000_001n)).toMatchObject({ ok: false, code: 4100 });
    expect(withdraw(5_000_000_000n)).toMatchObject({ ok: true });
  });
});

describe('golden case D: entry price through increase, flip and fees', () => {
  it('averages the entry, realizes PnL on the closed part and resets the entry on the flip', () => {
    const v = new TestVenue();
    v.list({
      id: 1,
      symbol: 'BTC-PERP',
      tickSize: '0.5',
      lotSize: '0.001',
      quantityDecimals: 3,
      maxLeverage: 40,
      defaultLeverage: 10,
      openInterestCap: '1000',
      makerFeeRate: '0',
      takerFeeRate: '0.00045',
    });
    for (const w of [GOLD, MAKER, MM]) v.open(w);
    v.fund(MAKER, '1000000');
    v.fund(MM, '1000000');
    v.fund(GOLD, '50000');
    v.oracle({ 'BTC-PERP': '60000' });
    const fee = (events: EngineEvent[]) =>
      events.find(
        (e): e is OrderReport =>
          e.type === 'executionReport' && e.account === GOLD && 'fill' in e && e.fill !== undefined,
      )!.fill!;
    expect(fee(tradeAsTaker(v, 'BTC-PERP', 'Buy', '2', '60000')).fee).toBe(54_000_000n);
    expect(fee(tradeAsTaker(v, 'BTC-PERP', 'Buy', '1', '63000')).fee).toBe(28_350_000n);
    expect(summary(v).assetPositions[0]!.entryPx).toBe('61000');
    const flip = fee(tradeAsTaker(v, 'BTC-PERP', 'Sell', '4', '62000'));
    expect(flip.fee).toBe(111_600_000n);
    expect(flip.realizedPnl).toBe(3_000_000_000n);
    expect(flip.positionBefore).toBe(3000n);
    expect(flip.positionAfter).toBe(-1000n);
    expect(v.state.accounts.get(GOLD)!.crossCash).toBe(114_806_050_000n);
    setMark(v, 'BTC-PERP', '62000', '0.5');
    const s = summary(v);
    expect(s.assetPositions[0]!.entryPx).toBe('62000');
    expect(s.assetPositions[0]!.szi).toBe('-1');
    expect(s.crossMarginSummary.accountValue).toBe('52806.05');
  });
});

describe('golden case E: tiered maintenance margin', () => {
  it('is continuous across the 150M floor and uses the deduction above it', () => {
    const spec = instrument({
      id: 1,
      symbol: 'BTC-PERP',
      tickSize: '1',
      lotSize: '1',
      quantityDecimals: 0,
      maxLeverage: 40,
      openInterestCap: '100000000',
      marginTiers: [{ notionalFloor: '150000000', maxLeverage: 20 }],
    });
    expect(spec.tiers[1]!.deduction).toBe(1_875_000n * 10n ** 6n * 10n ** 18n);
    const price = px('1');
    const usd = (n: bigint) => n * 1_000_000n;
    expect(maintenanceMargin(spec, 100_000_000n, price)).toBe(usd(1_250_000n));
    expect(maintenanceMargin(spec, 150_000_000n, price)).toBe(usd(1_875_000n));
    expect(maintenanceMargin(spec, 149_999_999n, price)).toBe(1_874_999_987_500n);
    expect(maintenanceMargin(spec, 200_000_000n, price)).toBe(usd(3_125_000n));
  });
});

/**
 * The other real account states of research 1.3, checked there against published Hyperliquid
 * API responses (ccxt issues #27078, #23946 and #23997), read back through the summary.
 */
describe('research 1.3: published Hyperliquid account states', () => {
  it('IMX isolated 3x (ccxt #27078): marginUsed, ROE, liquidation price and transferable', () => {
    const v = new TestVenue();
    // Max 5x: maintenance 1 / (2 x 5) = 10 %.
    v.list({
      id: 3,
      symbol: 'IMX-PERP',
      tickSize: '0.00001',
      lotSize: '1',
      quantityDecimals: 0,
      maxLeverage: 5,
      defaultLeverage: 5,
      openInterestCap: '1000000',
      makerFeeRate: '0',
      takerFeeRate: '0',
    });
    for (const w of [GOLD, MAKER, MM]) v.open(w);
    v.fund(MAKER, '100000');
    v.fund(MM, '100000');
    // rawUsd -7.572704 after buying 15 @ 0.757 (11.355): 3.782296 of isolated margin.
    v.fund(GOLD, '3.782296', 'IMX-PERP');
    v.oracle({ 'IMX-PERP': '0.757' });
    tradeAsTaker(v, 'IMX-PERP', 'Buy', '15', '0.757', true);
    setMark(v, 'IMX-PERP', '0.75898', '0.00001');
    // At 3x (lowered once the mark gives the margin for it: 3.811996 >= 3.7949).
    v.expectOk(
      v.run({ type: 'updateLeverage', account: GOLD, market: 3, mode: 'Isolated', leverage: 300 }),
    );
    const iso = summary(v).assetPositions.find((p) => p.marginMode === 'Isolated')!;
    expect(iso).toEqual({
      instrument: 'IMX-PERP',
      marginMode: 'Isolated',
      entryPx: '0.757',
      leverage: 3,
      // 7.572704 / (15 x 0.9) = 0.560941037037..., half-even at 18 decimals
      liquidationPx: '0.560941037037037037',
      marginUsed: '3.811996',
      maxLeverage: 5,
      positionValue: '11.3847',
      // 0.0297 / (15 x 0.757 / 3) = 0.0078467635...
      returnOnEquity: '0.00784676',
      szi: '15',
      unrealizedPnl: '0.0297',
      // 3.811996 - max(11.3847 / 3, 1.13847)
      transferable: '0.017096',
    });
    // HL's rawUsd: the isolated cash leg (no cross collateral here).
    expect(summary(v).marginSummary).toEqual({
      accountValue: '3.811996',
      totalMarginUsed: '3.811996',
      totalNtlPos: '11.3847',
      totalRawUsd: '-7.572704',
    });
  });

  it('BTC cross 1x (ccxt #23946): marginUsed is the position value at the mark', () => {
    const v = new TestVenue();
    v.list({
      id: 1,
      symbol: 'BTC-PERP',
      tickSize: '1',
      lotSize: '0.0001',
      quantityDecimals: 4,
      maxLeverage: 40,
      defaultLeverage: 1,
      openInterestCap: '1000',
      makerFeeRate: '0',
      takerFeeRate: '0',
    });
    for (const w of [GOLD, MAKER, MM]) v.open(w);
    v.fund(MAKER, '1000000');
    v.fund(MM, '1000000');
    v.fund(GOLD, '20');
    v.oracle({ 'BTC-PERP': '60705' });
    tradeAsTaker(v, 'BTC-PERP', 'Buy', '0.0002', '60705');
    setMark(v, 'BTC-PERP', '60703', '1');
    const btc = summary(v).assetPositions[0]!;
    expect([btc.positionValue, btc.marginUsed, btc.unrealizedPnl]).toEqual([
      '12.1406',
      '12.1406',
      '-0.0004',
    ]);
    // -0.0004 / 12.141 = -0.0000329462...
    expect(btc.returnOnEquity).toBe('-0.00003295');
  });

  it('a resting order holds its notional over leverage (ccxt #23997): withdrawable 35.39387', () => {
    const v = new TestVenue();
    v.list({
      id: 1,
      symbol: 'BTC-PERP',
      tickSize: '1',
      lotSize: '0.0001',
      quantityDecimals: 4,
      maxLeverage: 40,
      defaultLeverage: 2,
      openInterestCap: '1000',
      makerFeeRate: '0',
      takerFeeRate: '0',
    });
    v.open(GOLD);
    v.fund(GOLD, '51.64387');
    v.oracle({ 'BTC-PERP': '66000' });
    v.expectOk(v.place(GOLD, 'BTC-PERP', { side: 'Buy', qty: '0.0005', price: '65000' }));
    // 0.0005 x 65,000 / 2 = 16.25 held.
    expect(summary(v).withdrawable).toBe('35.39387');
    expect(summary(v).crossMarginSummary.accountValue).toBe('51.64387');
  });
});
