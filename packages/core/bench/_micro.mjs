import { buildInstrument, createEngineState, reduceAll } from '@perp/core';

const TICK = 10n ** 16n;
const spec = buildInstrument({
  id: 1,
  symbol: 'B',
  tickSize: '0.01',
  lotSize: '0.01',
  quantityDecimals: 2,
  maxLeverage: 50,
  openInterestCap: '100000000',
  makerFeeRate: '0',
  takerFeeRate: '0',
}).instrument;
const addr = (n) => `0x${n.toString(16).padStart(40, '0')}`;
let time = 1;
let state = createEngineState({ marginChecks: false }, 0);
const setup = [{ type: 'setInstrument', time, instrument: spec }];
for (let i = 1; i <= 100; i++) setup.push({ type: 'openAccount', time, account: addr(i) });
setup.push({ type: 'oracle', time, prices: [{ market: 1, price: 100_000n * TICK }] });
state = reduceAll(state, setup).state;
function bench(name, n, mk) {
  const all = [];
  for (let i = 0; i < n; i++) all.push(mk(i));
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i += 1000) state = reduceAll(state, all.slice(i, i + 1000)).state;
  const dt = Number(process.hrtime.bigint() - t0) / 1e9;
  console.log(
    name,
    Math.round(n / dt).toLocaleString(),
    'ops/s',
    ((dt / n) * 1e9).toFixed(0),
    'ns/op',
  );
}
const N = 200000;
bench('tick', N, () => ({ type: 'tick', time: ++time }));
bench('tick', N, () => ({ type: 'tick', time: ++time }));
let firstId = state.counters.order + 1;
const place = (i) => ({
  type: 'placeOrder',
  time: ++time,
  account: addr(1 + (i % 100)),
  order: {
    market: 1,
    isBuy: i % 2 === 0,
    orderType: 0,
    timeInForce: 0,
    price: BigInt(i % 2 === 0 ? 99_000 - (i % 50) : 101_000 + (i % 50)) * TICK,
    triggerPrice: 0n,
    quantity: 1n + BigInt(i % 10),
    flags: 0,
    expiry: 0n,
    cloid: null,
    parentCloid: null,
  },
});
bench('place', N, place);
bench('cancel', N, (i) => ({
  type: 'cancelOrder',
  time: ++time,
  account: addr(1 + (i % 100)),
  market: 1,
  orderId: BigInt(firstId + i),
  cloid: null,
}));
firstId = state.counters.order + 1;
bench('place', N, place);
bench('cancel', N, (i) => ({
  type: 'cancelOrder',
  time: ++time,
  account: addr(1 + (i % 100)),
  market: 1,
  orderId: BigInt(firstId + i),
  cloid: null,
}));
