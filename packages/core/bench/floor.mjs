// The cost floor of the book benchmark for any engine with this one's interface: building each
// operation's command (as `runEngine` does, in the timed region) and allocating the events the
// engine emits for it, with no matching, no margin, no ledger and no state at all.
//
// An untimed pass runs the real engine over the workload and records, per operation, how many
// events of each kind it emitted (order reports with and without a fill, trade prints, book and
// account pushes, the outcome). The timed pass then rebuilds every command and allocates that
// many objects of each event's shape, reusing the command's own bigints rather than computing
// new ones. Whatever an engine does beyond this costs time on top, so an engine emitting these
// events cannot beat this rate; the ratio it prints against nodejs-order-book is the ceiling of
// the current event model (docs/performance.md).

import { createEngineState, reduceAll } from '@perp/core';
import { engineFlow, T0 } from './book-engines.mjs';

const PLAIN = 0; // order reports without a fill
const FILLED = 1; // order reports with a fill
const TRADES = 2;
const BOOKS = 3;
const ACCOUNTS = 4;
const KINDS = 5;

const countsCache = new WeakMap();

/** Per operation, how many events of each kind the engine emits (untimed, once per workload). */
function eventCounts(w, margin) {
  let byMode = countsCache.get(w);
  if (byMode === undefined) {
    byMode = new Map();
    countsCache.set(w, byMode);
  }
  let counts = byMode.get(margin);
  if (counts === undefined) {
    counts = countEvents(w, margin);
    byMode.set(margin, counts);
  }
  return counts;
}

function countEvents(w, margin) {
  const flow = engineFlow(w, { margin });
  const total = w.preload + w.n;
  const counts = new Uint8Array(total * KINDS);
  // Without margin checks the flow has one maker, which holds every resting order: the venue's
  // working-order cap would refuse most of W1's (the reference book has them all), so it is
  // lifted. (With them, 900 makers each stay far below it.)
  const settings = { marginChecks: margin, maxWorkingOrdersPerAccount: Number.MAX_SAFE_INTEGER };
  let state = reduceAll(createEngineState(settings, T0), flow.setup).state;
  for (let i = 0; i < total; ) {
    const start = i;
    const cmds = [];
    while (i < total && cmds.length < 1000) cmds.push(flow.at(i++));
    const r = reduceAll(state, cmds);
    state = r.state;
    r.events.forEach((events, k) => {
      const at = (start + k) * KINDS;
      for (const e of events) {
        if (e.type === 'executionReport') counts[at + (e.fill === undefined ? PLAIN : FILLED)]++;
        else if (e.type === 'trade') counts[at + TRADES]++;
        else if (e.type === 'bookChanged') counts[at + BOOKS]++;
        else if (e.type === 'accountChanged') counts[at + ACCOUNTS]++;
      }
    });
  }
  return counts;
}

// The engine's event shapes (engine/events.ts, engine/context.ts), field for field.
function orderView(cmd, orderId, time) {
  const o = cmd.order;
  return {
    orderId,
    account: cmd.account,
    market: 1,
    side: 'Buy',
    orderType: 'Limit',
    timeInForce: 'GTC',
    marginMode: 'Cross',
    reduceOnly: false,
    postOnly: false,
    managed: false,
    parentCloid: null,
    createdTime: time,
    expireTime: null,
    cloid: null,
    price: o === undefined ? 0n : o.price,
    triggerPrice: 0n,
    quantity: o === undefined ? 0n : o.quantity,
    cumQty: 0n,
    filledNotional: 0n,
    ordStatus: 'New',
    reason: null,
    updatedTime: time,
  };
}

function report(account, seq, time, kind, order, fill) {
  return {
    type: 'executionReport',
    account,
    seq,
    execId: seq,
    time,
    kind,
    order,
    fill,
    markPrice: undefined,
  };
}

function fillOf(order, time) {
  return {
    tradeId: 1,
    market: 1,
    side: order.side,
    marginMode: 'Cross',
    quantity: order.quantity,
    price: order.price,
    quote: order.quantity,
    liquidity: 'Maker',
    fee: 0n,
    realizedPnl: 0n,
    positionBefore: 0n,
    positionAfter: order.quantity,
    time,
  };
}

/**
 * The floor of `runEngine(w, { margin, batch })`: same commands, same batching, same number and
 * shape of event objects, nothing else.
 */
export function runFloor(w, { margin = false, batch = 256 } = {}) {
  const counts = eventCounts(w, margin);
  const flow = engineFlow(w, { margin });
  for (let i = 0; i < w.preload; i++) flow.at(i);
  const total = w.preload + w.n;
  let seq = 0;
  let events = 0;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  let i = w.preload;
  while (i < total) {
    const cmds = [];
    while (i < total && cmds.length < batch) {
      cmds.push(flow.at(i));
      i++;
    }
    const out = [];
    const first = i - cmds.length;
    for (let k = 0; k < cmds.length; k++) {
      const cmd = cmds[k];
      const at = (first + k) * KINDS;
      const time = cmd.time;
      const list = [];
      let view = orderView(cmd, first + k, time);
      for (let n = counts[at + PLAIN]; n > 0; n--) {
        view = orderView(cmd, first + k, time);
        list.push(report(cmd.account, ++seq, time, 'OrderAccepted', view, undefined));
      }
      for (let n = counts[at + FILLED]; n > 0; n--) {
        view = orderView(cmd, first + k, time);
        list.push(report(cmd.account, ++seq, time, 'OrderFilled', view, fillOf(view, time)));
      }
      for (let n = counts[at + TRADES]; n > 0; n--) {
        list.push({
          type: 'trade',
          market: 1,
          tradeId: seq,
          price: view.price,
          quantity: view.quantity,
          takerSide: 'Buy',
          time,
        });
      }
      list.push({ type: 'outcome', ok: true, kind: 'order', order: view, seq });
      for (let n = counts[at + BOOKS]; n > 0; n--)
        list.push({ type: 'bookChanged', market: 1, bookSeq: seq });
      for (let n = counts[at + ACCOUNTS]; n > 0; n--)
        list.push({ type: 'accountChanged', account: cmd.account, time });
      events += list.length;
      out.push(list);
    }
    if (out.length !== cmds.length) throw new Error('lost a command');
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  return { ops: w.n, seconds, cpuSeconds: (cpu.user + cpu.system) / 1e6, events };
}
