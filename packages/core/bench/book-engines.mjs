// Drivers that replay a generated order stream (shared/bench/workload.mjs) through an engine.
// Each returns { ops, seconds, final: { restingOrders, restingLots, bestBid, bestAsk } }.

import { buildInstrument, createEngineState, depthOf, reduce, reduceAll } from '@perp/core';
import { OrderBook } from 'nodejs-order-book';

const OP_LIMIT = 0,
  OP_MARKET = 1,
  _OP_CANCEL = 2,
  BUY = 0;

/** nodejs-order-book, driven exactly as performance-anchors.md section 3 did. */
export function runNob(w) {
  const { type, side, price, size, id } = w.ops;
  const ob = new OrderBook();
  const ids = new Array(w.maxId + 1);
  for (let i = 0; i < ids.length; i++) ids[i] = `o${i}`;
  const step = (i) => {
    const t = type[i];
    if (t === OP_LIMIT)
      ob.limit({
        id: ids[id[i]],
        side: side[i] === BUY ? 'buy' : 'sell',
        size: size[i],
        price: price[i],
      });
    else if (t === OP_MARKET) ob.market({ side: side[i] === BUY ? 'buy' : 'sell', size: size[i] });
    else ob.cancel(ids[id[i]]);
  };
  for (let i = 0; i < w.preload; i++) step(i);
  const total = w.preload + w.n;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = w.preload; i < total; i++) step(i);
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  const [asks, bids] = ob.depth();
  let restingLots = 0;
  for (const [, q] of asks) restingLots += q;
  for (const [, q] of bids) restingLots += q;
  return {
    ops: w.n,
    seconds,
    cpuSeconds,
    final: {
      restingLots,
      bestBid: bids.length ? Math.max(...bids.map((b) => b[0])) : -1,
      bestAsk: asks.length ? Math.min(...asks.map((a) => a[0])) : -1,
    },
  };
}

// Instrument for the engine: 1 tick = 0.01, 1 lot = 0.01, so 100,000 ticks = 1,000.00 and a
// one-lot order is worth ~10 USD (above the 5 USD minimum notional).
const TICK = 10n ** 16n;
const LOT = 1n;
const SPEC = (() => {
  const r = buildInstrument({
    id: 1,
    symbol: 'BENCH-PERP',
    tickSize: '0.01',
    lotSize: '0.01',
    quantityDecimals: 2,
    maxLeverage: 50,
    defaultLeverage: 10,
    openInterestCap: '100000000',
    makerFeeRate: '0',
    takerFeeRate: '0',
  });
  if (!r.ok) throw new Error(r.error);
  return r.instrument;
})();
/** Time of the set-up commands; op i runs at T0 + i + 1 ms. */
export const T0 = 1_767_225_600_000;
const addr = (n) => `0x${n.toString(16).padStart(40, '0')}`;

/**
 * The workload as engine commands: `setup` (the instrument, funded accounts, a first oracle
 * price) and `at(i)`, the command of op `i` (call it for i = 0, 1, ... in order: it numbers
 * orders and advances the clock). `margin`: orders spread over `accounts` funded accounts (90%
 * makers, 10% takers); otherwise one maker and one taker.
 */
export function engineFlow(w, { margin = true, accounts = 1000 } = {}) {
  const { type, side, price, size, id } = w.ops;
  const makers = margin ? Math.floor(accounts * 0.9) : 1;
  const takers = margin ? accounts - makers : 1;
  const makerAddr = Array.from({ length: makers }, (_, i) => addr(i + 1));
  const takerAddr = Array.from({ length: takers }, (_, i) => addr(100_000 + i + 1));
  let time = T0;
  const setup = [{ type: 'setInstrument', time, instrument: SPEC }];
  for (const a of [...makerAddr, ...takerAddr]) {
    setup.push({ type: 'openAccount', time, account: a });
    setup.push({
      type: 'deposit',
      time,
      account: a,
      amount: 10_000_000_000_000n,
      target: { mode: 'Cross', market: 0 },
    });
  }
  for (let c = 1; c <= makerAddr.length + takerAddr.length; c++)
    setup.push({ type: 'settleDeposit', time, commandId: c, success: true });
  setup.push({ type: 'oracle', time, prices: [{ market: 1, price: 100_000n * TICK }] });

  // The set-up places no order: ids start at 1.
  const orderIdOf = new Float64Array(w.maxId + 1);
  let nextOrderId = 0;
  let takerTurn = 0;
  const at = (i) => {
    time++;
    const t = type[i];
    if (t === OP_LIMIT) {
      const wid = id[i];
      orderIdOf[wid] = ++nextOrderId;
      return {
        type: 'placeOrder',
        time,
        account: makerAddr[wid % makers],
        order: {
          market: 1,
          isBuy: side[i] === BUY,
          orderType: 0,
          timeInForce: 0,
          price: BigInt(price[i]) * TICK,
          triggerPrice: 0n,
          quantity: BigInt(size[i]) * LOT,
          flags: 0,
          expiry: 0n,
          cloid: null,
          parentCloid: null,
        },
      };
    }
    if (t === OP_MARKET) {
      ++nextOrderId;
      const buy = side[i] === BUY;
      // A market order is an IOC limit that crosses everything: twice the start price to buy,
      // half of it to sell (the workload stays within a few thousand ticks of its start, and a
      // one-lot order at half price still clears the 5 USD minimum notional).
      const limit = buy ? 200_000n * TICK : 50_000n * TICK;
      return {
        type: 'placeOrder',
        time,
        account: takerAddr[takerTurn++ % takers],
        order: {
          market: 1,
          isBuy: buy,
          orderType: 0,
          timeInForce: 2,
          price: limit,
          triggerPrice: 0n,
          quantity: BigInt(size[i]) * LOT,
          flags: 0,
          expiry: 0n,
          cloid: null,
          parentCloid: null,
        },
      };
    }
    const wid = id[i];
    return {
      type: 'cancelOrder',
      time,
      account: makerAddr[wid % makers],
      market: 1,
      orderId: BigInt(orderIdOf[wid]),
      cloid: null,
    };
  };
  return { setup, at };
}

/**
 * Our engine. `margin`: every pre-trade and match-time check on, orders spread over 1,000 funded
 * accounts (900 makers, 100 takers); otherwise margin checks off (book only). `batch`: commands
 * per reduceAll call (1 = one pure reduce per command).
 */
export function runEngine(w, { margin = false, batch = 1000, accounts = 1000 } = {}) {
  const flow = engineFlow(w, { margin, accounts });
  const cmdAt = flow.at;
  // Without margin checks the flow has one maker, which holds every resting order: the venue's
  // working-order cap would refuse most of W1's (the reference book has them all), so it is
  // lifted. (With them, 900 makers each stay far below it.)
  const settings = { marginChecks: margin, maxWorkingOrdersPerAccount: Number.MAX_SAFE_INTEGER };
  let state = reduceAll(createEngineState(settings, T0), flow.setup).state;
  let failures = 0;
  const countFailures = (events) => {
    for (const e of events) if (e.type === 'outcome' && !e.ok) failures++;
  };
  // Preload, untimed.
  for (let i = 0; i < w.preload; i += 1000) {
    const cmds = [];
    for (let j = i; j < Math.min(i + 1000, w.preload); j++) cmds.push(cmdAt(j));
    const r = reduceAll(state, cmds);
    state = r.state;
    for (const ev of r.events) countFailures(ev);
  }
  const total = w.preload + w.n;
  let events = 0;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  if (batch === 1) {
    for (let i = w.preload; i < total; i++) {
      const r = reduce(state, cmdAt(i));
      state = r.state;
      events += r.events.length;
      countFailures(r.events);
    }
  } else {
    let i = w.preload;
    while (i < total) {
      const cmds = [];
      while (i < total && cmds.length < batch) {
        cmds.push(cmdAt(i));
        i++;
      }
      const r = reduceAll(state, cmds);
      state = r.state;
      for (const ev of r.events) {
        events += ev.length;
        countFailures(ev);
      }
    }
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  const cpuSeconds = (cpu.user + cpu.system) / 1e6;
  const market = state.markets.get(1);
  let restingOrders = 0;
  let restingLots = 0n;
  for (const l of [...market.bids, ...market.asks]) {
    restingOrders += l.count;
    restingLots += l.quantity;
  }
  return {
    ops: w.n,
    seconds,
    cpuSeconds,
    events,
    failures,
    state,
    final: {
      restingOrders,
      restingLots: Number(restingLots / LOT),
      bestBid: market.bids.length ? Number(market.bids[market.bids.length - 1].price / TICK) : -1,
      bestAsk: market.asks.length ? Number(market.asks[market.asks.length - 1].price / TICK) : -1,
    },
  };
}

export { depthOf };
