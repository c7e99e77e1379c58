/**
 * The operator's moves of the venue's own money (risk/venue-funds.ts): the fee pool seeds the
 * insurance fund and a surplus goes back; the fee pool pays revenue out into an account. No pool
 * goes below zero, refusals change nothing, and conservation holds (TestVenue checks it after
 * every command).
 */
import { describe, expect, it } from 'vitest';
import { accountSummary, outcomeOf, stateHash } from '../src/index.js';
import { TestVenue, usd, wallet } from '../src/testing/index.js';

const TAKER = wallet(0x91);
const MAKER = wallet(0x92);

/** A venue whose fee pool holds 30 USD: one 10,000 USD taker fill at 0.3%. */
function venueWithFees(): TestVenue {
  const v = new TestVenue();
  v.list({
    id: 1,
    symbol: 'A-PERP',
    tickSize: '0.5',
    lotSize: '1',
    quantityDecimals: 0,
    maxLeverage: 20,
    defaultLeverage: 10,
    openInterestCap: '1000000',
    makerFeeRate: '0',
    takerFeeRate: '0.003',
  });
  for (const w of [TAKER, MAKER]) {
    v.open(w);
    v.fund(w, '10000');
  }
  v.oracle({ 'A-PERP': '100' });
  v.expectOk(v.place(MAKER, 'A-PERP', { side: 'Sell', qty: '100', price: '100' }));
  v.expectOk(v.place(TAKER, 'A-PERP', { side: 'Buy', qty: '100', price: '100' }));
  expect(v.state.feePool).toBe(usd('30'));
  expect(v.state.insuranceFund).toBe(0n);
  return v;
}

describe('insurance transfer', () => {
  it('moves collateral from the fee pool into the fund and back, to the micro-unit', () => {
    const v = venueWithFees();
    const deposits = v.state.totalDeposits;
    const seeded = v.run({
      type: 'insuranceTransfer',
      direction: 'ToInsuranceFund',
      amount: usd('20.000001'),
    });
    expect(seeded).toEqual([
      {
        type: 'insurance',
        delta: usd('20.000001'),
        balance: usd('20.000001'),
        reason: 'Transfer',
        time: v.time,
      },
      {
        type: 'outcome',
        ok: true,
        kind: 'insuranceTransfer',
        insuranceFund: usd('20.000001'),
        feePool: usd('9.999999'),
      },
    ]);
    const back = v.run({ type: 'insuranceTransfer', direction: 'ToFeePool', amount: usd('5') });
    expect(back[0]).toMatchObject({ delta: usd('-5'), balance: usd('15.000001') });
    expect(v.state.insuranceFund).toBe(usd('15.000001'));
    expect(v.state.feePool).toBe(usd('14.999999'));
    // Nothing entered or left the venue.
    expect(v.state.totalDeposits).toBe(deposits);
    expect(v.state.totalWithdrawals).toBe(0n);
    // Both pools can be emptied exactly.
    v.expectOk(
      v.run({ type: 'insuranceTransfer', direction: 'ToFeePool', amount: usd('15.000001') }),
    );
    expect(v.state.insuranceFund).toBe(0n);
    expect(v.state.feePool).toBe(usd('30'));
  });

  it.each([
    ['a zero amount', 'ToInsuranceFund', 0n, 'INVALID_REQUEST: amount must be positive, got 0'],
    [
      'a negative amount',
      'ToFeePool',
      -1n,
      'INVALID_REQUEST: amount must be positive, got -0.000001',
    ],
    [
      'more than the fee pool holds',
      'ToInsuranceFund',
      usd('30.000001'),
      'INVALID_REQUEST: the fee pool holds 30, less than 30.000001',
    ],
    [
      'more than the fund holds',
      'ToFeePool',
      1n,
      'INVALID_REQUEST: the insurance fund holds 0, less than 0.000001',
    ],
    [
      'an unknown direction',
      'Sideways',
      usd('1'),
      'INVALID_REQUEST: insuranceTransfer.direction must be one of ToInsuranceFund, ToFeePool',
    ],
  ] as const)('refuses %s with 4000 and changes nothing', (_name, direction, amount, message) => {
    const v = venueWithFees();
    const before = v.state;
    const hash = stateHash(before);
    const events = v.run({
      type: 'insuranceTransfer',
      direction: direction as 'ToInsuranceFund',
      amount,
    });
    expect(events).toEqual([
      { type: 'outcome', ok: false, code: 4000, message, nonceConsumed: false },
    ]);
    expect(outcomeOf(events).ok).toBe(false);
    // The reducer hands back the very input state: nothing to journal, nothing changed.
    expect(v.state).toBe(before);
    expect(stateHash(v.state)).toBe(hash);
  });
});

describe('fee payout', () => {
  const OPERATOR = wallet(0x93);

  it("pays revenue into an account's cross pool, which can then withdraw it", () => {
    const v = venueWithFees();
    v.open(OPERATOR);
    const deposits = v.state.totalDeposits;
    const events = v.run({ type: 'feePayout', account: OPERATOR, amount: usd('29.999999') });
    expect(events).toEqual([
      {
        type: 'outcome',
        ok: true,
        kind: 'feePayout',
        account: OPERATOR,
        amount: usd('29.999999'),
        feePool: 1n,
      },
      // Its balance changed: an account-summary push.
      { type: 'accountChanged', account: OPERATOR, time: v.time },
    ]);
    expect(v.state.feePool).toBe(1n);
    expect(v.state.accounts.get(OPERATOR)!.crossCash).toBe(usd('29.999999'));
    expect(accountSummary(v.state, OPERATOR, v.time)!.withdrawable).toBe('29.999999');
    expect(v.state.totalDeposits).toBe(deposits);
    // Out of the venue like any collateral: all of it, and not a micro-unit more.
    const withdraw = (amount: bigint) =>
      v.run({
        type: 'withdraw',
        account: OPERATOR,
        amount,
        target: { mode: 'Cross', market: 0 },
      });
    expect(outcomeOf(withdraw(usd('30')))).toMatchObject({ ok: false, code: 4100 });
    expect(outcomeOf(withdraw(usd('29.999999')))).toMatchObject({ ok: true, kind: 'command' });
  });

  it('pays out the whole fee pool, down to zero', () => {
    const v = venueWithFees();
    v.open(OPERATOR);
    expect(v.state.feePool).toBe(usd('30'));
    v.expectOk(v.run({ type: 'feePayout', account: OPERATOR, amount: usd('30') }));
    expect(v.state.feePool).toBe(0n);
    expect(v.state.accounts.get(OPERATOR)!.crossCash).toBe(usd('30'));
  });

  it.each([
    [
      'an unknown account',
      wallet(0x94),
      usd('1'),
      4040,
      `ACCOUNT_NOT_FOUND: no trading account for ${wallet(0x94)}`,
    ],
    ['a zero amount', wallet(0x93), 0n, 4000, 'INVALID_REQUEST: amount must be positive, got 0'],
    [
      'more than the fee pool holds',
      wallet(0x93),
      usd('30.000001'),
      4000,
      'INVALID_REQUEST: the fee pool holds 30, less than 30.000001',
    ],
  ] as const)('refuses %s and changes nothing', (_name, account, amount, code, message) => {
    const v = venueWithFees();
    v.open(OPERATOR);
    const before = v.state;
    const events = v.run({ type: 'feePayout', account, amount });
    expect(events).toEqual([{ type: 'outcome', ok: false, code, message, nonceConsumed: false }]);
    expect(v.state).toBe(before);
  });
});
