// Cost of one account summary for an account with 50 positions (25 markets, cross and isolated).
import { accountSummary, buildInstrument, createEngineState, reduceAll } from '@perp/core';

const addr = (n) => `0x${n.toString(16).padStart(40, '0')}`;

export function summaryBench({ markets = 25, iterations = 2000 } = {}) {
  const time = 1_767_225_600_000;
  const a = addr(1);
  const b = addr(2);
  const setup = [];
  for (let m = 1; m <= markets; m++) {
    const r = buildInstrument({
      id: m,
      symbol: `M${m}-PERP`,
      tickSize: '0.01',
      lotSize: '0.001',
      quantityDecimals: 3,
      maxLeverage: 20,
      openInterestCap: '1000000',
      makerFeeRate: '0',
      takerFeeRate: '0',
    });
    if (!r.ok) throw new Error(r.error);
    setup.push({ type: 'setInstrument', time, instrument: r.instrument });
  }
  for (const w of [a, b]) {
    setup.push({ type: 'openAccount', time, account: w });
    setup.push({
      type: 'deposit',
      time,
      account: w,
      amount: 10n ** 15n,
      target: { mode: 'Cross', market: 0 },
    });
  }
  let state = reduceAll(createEngineState({}, time), setup).state;
  const more = [
    { type: 'settleDeposit', time, commandId: 1, success: true },
    { type: 'settleDeposit', time, commandId: 2, success: true },
  ];
  for (let m = 1; m <= markets; m++) {
    more.push({
      type: 'oracle',
      time,
      prices: [{ market: m, price: BigInt(100 + m) * 10n ** 18n }],
    });
    more.push({
      type: 'transferMargin',
      time,
      account: a,
      market: m,
      amount: 10_000_000_000n,
      direction: 'crossToIsolated',
    });
    for (const flags of [0, 1]) {
      const order = (isBuy, account) => ({
        type: 'placeOrder',
        time,
        account,
        order: {
          market: m,
          isBuy,
          orderType: 0,
          timeInForce: 0,
          price: BigInt(100 + m) * 10n ** 18n,
          triggerPrice: 0n,
          quantity: 1000n,
          flags: isBuy ? flags : 0,
          expiry: 0n,
          cloid: null,
          parentCloid: null,
        },
      });
      more.push(order(false, b), order(true, a));
    }
  }
  state = reduceAll(state, more).state;
  const positions = state.accounts.get(a).positions.length;
  if (positions !== markets * 2)
    throw new Error(`expected ${markets * 2} positions, got ${positions}`);
  for (let i = 0; i < 200; i++) accountSummary(state, a, time);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) accountSummary(state, a, time);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  return { positions, perSecond: iterations / seconds, microseconds: (seconds / iterations) * 1e6 };
}
