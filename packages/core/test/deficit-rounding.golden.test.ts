/**
 * Who pays a deficit, to the micro-unit: the ADL counterparty cap and the insurance fund's
 * payment, each where the division does not terminate (both found by mutation).
 *
 * The ADL counterparty cap (engine-rules 7.4) at a price that does not terminate. A counterparty
 * never pays more than the mark value plus its equity (buying back a liquidated long), nor
 * receives less than the mark value less its equity (selling to a liquidated short). When the
 * cap binds over 3 contracts, the capped price is that bound divided by 3, and it must round so
 * that the counterparty's cash leg stays within the bound: down when it buys, up when it sells.
 * The ADL goldens in risk.golden cap at whole prices (80 over 100 contracts), where both
 * directions agree. The insurance fund (engine-rules 7.5) pays a deficit finer than a micro-unit
 * rounded down: a fraction more would leave the scope in credit at the fund's expense.
 *
 * Units: prices 1e18, collateral micro-units (1e6); quantities whole contracts.
 */
import { describe, expect, it } from 'vitest';
import type { AdlReport, EngineEvent } from '../src/index.js';
import { TestVenue, usd, wallet, wholeLotSettings } from '../src/testing/index.js';

const X = wallet(0xc1);
const U = wallet(0xc2);
const MM = wallet(0xc3);

/**
 * X (cross, 20) takes 3 A @ 100 from U (cross, 31) on `xSide`; U takes 3 B @ 100 from MM on the
 * same side as X, so U's gain on A and its loss on B cancel when both marks move together.
 * Both marks then gap to `gap` in one oracle command, with one-tick quotes putting the book
 * median on the index.
 */
function gapped(
  xSide: 'Buy' | 'Sell',
  gap: string,
  quotes: [string, string],
): {
  v: TestVenue;
  events: EngineEvent[];
} {
  const v = new TestVenue();
  v.list(wholeLotSettings('A-PERP', 3));
  v.list(wholeLotSettings('B-PERP', 5));
  for (const w of [X, U, MM]) v.open(w);
  v.fund(X, '20');
  v.fund(U, '31');
  v.fund(MM, '1000000');
  v.oracle({ 'A-PERP': '100', 'B-PERP': '100' });
  const other = xSide === 'Buy' ? 'Sell' : 'Buy';
  v.expectOk(v.place(U, 'A-PERP', { side: other, qty: '3', price: '100' }));
  v.expectOk(v.place(X, 'A-PERP', { side: xSide, qty: '3', price: '100' }));
  v.expectOk(v.place(MM, 'B-PERP', { side: other, qty: '3', price: '100' }));
  v.expectOk(v.place(U, 'B-PERP', { side: xSide, qty: '3', price: '100' }));
  for (const symbol of ['A-PERP', 'B-PERP']) {
    v.expectOk(v.place(MM, symbol, { side: 'Buy', qty: '1', price: quotes[0] }));
    v.expectOk(v.place(MM, symbol, { side: 'Sell', qty: '1', price: quotes[1] }));
  }
  const events = v.oracle({ 'A-PERP': gap, 'B-PERP': gap });
  return { v, events };
}

function adlFills(events: readonly EngineEvent[]): [string, number, bigint, bigint, bigint][] {
  return events
    .filter((e): e is AdlReport => e.type === 'executionReport' && e.kind === 'ADL')
    .map((r) => [r.account, r.market, r.fill.quantity, r.fill.price, r.fill.quote]);
}

describe('the ADL counterparty cap at a non-terminating price', () => {
  it('a counterparty buying back a long pays at most 3 x 70 + 31 = 241: price 80.333... rounded down', () => {
    const { v, events } = gapped('Buy', '70', ['69.5', '70']);
    expect(v.state.markets.get(3)!.prices.mark).toBe(70n * 10n ** 18n);
    // X: 20 - 3 x 30 = -70, bankruptcy 70 + 70/3 = 93.33; U's equity is 31 (its A gain and B
    // loss cancel), so U pays at most 210 + 31 = 241 for the 3: 241/3 = 80.3333... per contract.
    expect(adlFills(events)[0]).toEqual([U, 3, 3n, 80_333_333_333_333_333_333n, usd('241')]);
  });

  it('a counterparty selling to a short receives at least 3 x 130 - 31 = 359: price 119.666... rounded up', () => {
    const { v, events } = gapped('Sell', '130', ['130', '130.5']);
    expect(v.state.markets.get(3)!.prices.mark).toBe(130n * 10n ** 18n);
    // X: 20 - 3 x 30 = -70, bankruptcy 130 - 70/3 = 106.67; U (long A, short B, equity 31)
    // receives at least 390 - 31 = 359 for the 3: 359/3 = 119.6666... per contract.
    expect(adlFills(events)[0]).toEqual([U, 3, 3n, 119_666_666_666_666_666_667n, usd('359')]);
  });
});

describe('the ADL counterparty cap at a mark finer than a micro-unit', () => {
  // At 70.0000001 U's equity counts each position's unrealised PnL rounded against U:
  // +89.999999 on A, -90 on B, so 30.999999 (and the same at 129.9999999).

  it('the mark value 210.0000003 of a counterparty that buys counts rounded down: 240.999999', () => {
    const { v, events } = gapped('Buy', '70.0000001', ['69.5', '70.5']);
    expect(v.state.markets.get(3)!.prices.mark).toBe(70_000_000_100_000_000_000n);
    // 210 + 30.999999: a fraction more would take U below zero. 240.999999 / 3 = 80.333333.
    expect(adlFills(events)[0]).toEqual([U, 3, 3n, 80_333_333n * 10n ** 12n, 240_999_999n]);
  });

  it('the mark value 389.9999997 of a counterparty that sells counts rounded up: 359.000001', () => {
    const { v, events } = gapped('Sell', '129.9999999', ['129.5', '130.5']);
    expect(v.state.markets.get(3)!.prices.mark).toBe(129_999_999_900_000_000_000n);
    // 390 - 30.999999: a fraction less would take U below zero. 359.000001 / 3 = 119.666667.
    expect(adlFills(events)[0]).toEqual([U, 3, 3n, 119_666_667n * 10n ** 12n, 359_000_001n]);
  });
});

describe('the insurance fund pays a deficit finer than a micro-unit rounded down', () => {
  it('X at 20 - 3 x 29.9999999 = -69.9999997: the fund pays 69.999999, ADL takes the 0.0000007', () => {
    const v = new TestVenue();
    v.list(wholeLotSettings('A-PERP', 3));
    v.list({ ...wholeLotSettings('FEE-PERP', 7), takerFeeRate: '0.01' });
    for (const w of [X, U, MM]) v.open(w);
    v.fund(X, '20');
    v.fund(U, '1000');
    v.fund(MM, '1000000');
    v.oracle({ 'A-PERP': '100', 'FEE-PERP': '100' });
    // U's taker fee on 100 @ 100 puts 100 in the fee pool; the operator moves it to the fund.
    v.expectOk(v.place(MM, 'FEE-PERP', { side: 'Sell', qty: '100', price: '100' }));
    v.expectOk(v.place(U, 'FEE-PERP', { side: 'Buy', qty: '100', price: '100' }));
    v.expectOk(
      v.run({ type: 'insuranceTransfer', direction: 'ToInsuranceFund', amount: usd('100') }),
    );
    expect(v.state.insuranceFund).toBe(usd('100'));
    v.expectOk(v.place(MM, 'A-PERP', { side: 'Sell', qty: '3', price: '100' }));
    v.expectOk(v.place(X, 'A-PERP', { side: 'Buy', qty: '3', price: '100' }));
    v.expectOk(v.place(MM, 'A-PERP', { side: 'Buy', qty: '1', price: '69.5' }));
    v.expectOk(v.place(MM, 'A-PERP', { side: 'Sell', qty: '1', price: '70.5' }));
    const events = v.oracle({ 'A-PERP': '70.0000001' });
    expect(v.state.markets.get(3)!.prices.mark).toBe(70_000_000_100_000_000_000n);
    const insurance = events.flatMap((e) =>
      e.type === 'insurance' ? [[e.reason, e.delta, e.balance]] : [],
    );
    // Paying 70 would hand X 0.0000003 the venue does not owe; the rest stays in the bankruptcy
    // price: 70.0000001 + 0.0000007 / 3, rounded up for a long, and the cash leg 3 x that,
    // 210.000001000000000002, rounded up to 210.000002.
    expect(insurance[0]).toEqual(['Deficit', -69_999_999n, 30_000_001n]);
    expect(adlFills(events)).toEqual([[MM, 3, 3n, 70_000_000_333_333_333_334n, 210_000_002n]]);
    // X: -280 + 69.999999 + 210.000002 = 0.000001, not below zero.
    expect(v.state.accounts.get(X)!.positions).toEqual([]);
    expect(v.state.accounts.get(X)!.crossCash).toBe(1n);
  });
});
