// A design probe, not product code: how fast a deliberately lean engine runs the book benchmark
// on this machine, to tell how far a redesign of the real engine could go (docs/performance.md).
//
// It takes the same commands as the real engine (engineFlow) and keeps what the benchmark
// exercises of the hot path: grid checks, price-time matching with self-trade prevention, a
// margin check at placement and at each maker fill, a zero-sum cash ledger with fees in bigint
// micro-units, a trade log, report sequence numbers, and purity kept by an undo log instead of
// copies. It leaves out everything the workload never reaches (order types other than Limit,
// TIFs other than GTC and IOC, reduce-only, cloids, expiries, triggers, isolated margin, tiers,
// open interest, liquidation checks) and its margin check is a float filter with a simplified
// exact fallback, so it is an upper bound for an engine with the product's rules.
//
// Events come in two forms: `compact: false` allocates the real engine's event objects (an
// order report with its order snapshot, fills, trade prints, pushes, the outcome); `compact:
// true` writes one row of numbers per event into a reused buffer and allocates nothing.
//
//   node packages/core/bench/probe.mjs          W1 and W2 against nodejs-order-book
//   BENCH_OPS / BENCH_ROUNDS as for run.mjs

import { engineFlow, runNob } from './book-engines.mjs';

// The benchmark's instrument (book-engines.mjs): 1 tick = 1e16 raw, 1 lot = 1 raw unit, so one
// lot x one tick is 100 micro-units of collateral.
const TICK = 10n ** 16n;
const TICK_NUMBER = 1e16;
const MICRO_PER_LOT_TICK = 100;
const MICRO_PER_LOT_TICK_BIG = 100n;
const MIN_NOTIONAL_LOT_TICKS = 5_000_000 / MICRO_PER_LOT_TICK;
const TAKER_FEE = 45n; // per 100,000: the default 0.045%
const MAKER_FEE = 15n;
const FEE_SCALE = 100_000n;

// ---- undo log: a record's first write in a session saves its fields ---------------------------
class UndoLog {
  constructor() {
    this.token = {};
    this.records = [];
    this.saved = [];
    this.arrays = [];
    this.indexes = [];
    this.values = [];
  }
  record(record, saved) {
    this.records.push(record);
    this.saved.push(saved);
  }
  slot(array, index) {
    this.arrays.push(array);
    this.indexes.push(index);
    this.values.push(array[index]);
  }
}

/** Orders by id in chunks of 1,024 (ids are handed out in order). */
class OrderTable {
  constructor() {
    this.chunks = [];
  }
  get(id) {
    const c = this.chunks[id >> 10];
    return c === undefined ? null : c[id & 1023];
  }
  set(log, id, order) {
    let c = this.chunks[id >> 10];
    if (c === undefined) {
      c = new Array(1024).fill(null);
      this.chunks[id >> 10] = c;
    }
    log.slot(c, id & 1023);
    c[id & 1023] = order;
  }
  delete(log, id) {
    const c = this.chunks[id >> 10];
    log.slot(c, id & 1023);
    c[id & 1023] = null;
  }
}

class Order {
  constructor(id, account, holder, buy, ioc, time, price, ticks, quantity, lots) {
    this.token = null;
    this.id = id;
    this.account = account;
    this.holder = holder;
    this.buy = buy;
    this.ioc = ioc;
    this.createdTime = time;
    this.price = price;
    this.ticks = ticks;
    this.quantity = quantity;
    this.lots = lots;
    this.filled = 0;
    this.status = 'New';
    this.slot = -1;
    this.level = null;
    this.prev = 0;
    this.next = 0;
  }
  saved() {
    return {
      token: this.token,
      filled: this.filled,
      status: this.status,
      slot: this.slot,
      level: this.level,
      prev: this.prev,
      next: this.next,
    };
  }
}

class Account {
  constructor(address) {
    this.token = null;
    this.address = address;
    this.reportSeq = 0;
    this.cash = 0n;
    this.position = 0;
    this.entry = 0n;
    this.buyNotional = 0;
    this.sellNotional = 0;
    this.first = 0;
    this.last = 0;
    this.leverage = 1000;
  }
  saved() {
    return {
      token: this.token,
      reportSeq: this.reportSeq,
      cash: this.cash,
      position: this.position,
      entry: this.entry,
      buyNotional: this.buyNotional,
      sellNotional: this.sellNotional,
      first: this.first,
      last: this.last,
    };
  }
}

class Level {
  constructor(token, ticks, price) {
    this.token = token;
    this.ticks = ticks;
    this.price = price;
    this.ids = [];
    this.head = 0;
    this.tail = 0;
    this.count = 0;
    this.lots = 0;
  }
  saved() {
    return {
      token: this.token,
      ids: this.ids,
      head: this.head,
      tail: this.tail,
      count: this.count,
      lots: this.lots,
    };
  }
}

/** One side of the book: levels sorted so the best is last. */
class BookSide {
  constructor(bids) {
    this.token = null;
    this.bids = bids;
    this.levels = [];
  }
}

class World {
  constructor(marginChecks) {
    this.marginChecks = marginChecks;
    this.accounts = new Map();
    this.orders = new OrderTable();
    this.bids = new BookSide(true);
    this.asks = new BookSide(false);
    this.orderId = 0;
    this.tradeId = 0;
    this.execId = 0;
    this.bookSeq = 0;
    this.feePool = 0n;
    this.mark = 100_000;
    this.time = 0;
    this.trades = { n: 0, ticks: new Float64Array(1 << 17), lots: new Float64Array(1 << 17) };
  }
}

/** Compact events: one row of numbers per event in a buffer reused by every batch. */
class EventRows {
  constructor() {
    this.capacity = 2048;
    this.n = 0;
    this.numbers = new Float64Array(this.capacity * 8);
    this.refs = new Array(this.capacity).fill(null);
  }
  row(kind, a, b, c, d, e, f, ref) {
    if (this.n === this.capacity) this.grow();
    const at = this.n * 8;
    const x = this.numbers;
    x[at] = kind;
    x[at + 1] = a;
    x[at + 2] = b;
    x[at + 3] = c;
    x[at + 4] = d;
    x[at + 5] = e;
    x[at + 6] = f;
    this.refs[this.n] = ref;
    this.n++;
  }
  grow() {
    const x = new Float64Array(this.capacity * 16);
    x.set(this.numbers);
    this.numbers = x;
    this.refs.length = this.capacity * 2;
    this.capacity *= 2;
  }
}

const ROW_REPORT = 1;
const ROW_TRADE = 2;
const ROW_OUTCOME = 3;
const ROW_BOOK = 4;
const ROW_ACCOUNT = 5;
const ROW_REFUSED = 6;

class Session {
  constructor(world, compact, rows) {
    this.w = world;
    this.log = new UndoLog();
    this.token = this.log.token;
    this.compact = compact;
    this.rows = rows;
    this.events = null;
    this.time = 0;
    this.booked = false;
    this.changed = [];
  }
  account(a) {
    if (a.token !== this.token) {
      this.log.record(a, a.saved());
      a.token = this.token;
    }
    return a;
  }
  order(o) {
    if (o.token !== this.token) {
      this.log.record(o, o.saved());
      o.token = this.token;
    }
    return o;
  }
  level(l) {
    if (l.token !== this.token) {
      this.log.record(l, l.saved());
      l.token = this.token;
    }
    return l;
  }
  side(s) {
    if (s.token !== this.token) {
      this.log.record(s, { token: s.token, levels: s.levels });
      s.token = this.token;
      s.levels = s.levels.slice();
    }
    return s;
  }
  report(holder, o, kind, reason, fill) {
    const a = this.account(holder);
    const seq = ++a.reportSeq;
    const exec = ++this.w.execId;
    if (this.compact)
      this.rows.row(ROW_REPORT, seq, exec, o.id, o.filled, fill === null ? 0 : 1, 0, a);
    else
      this.events.push(
        reportEvent(a.address, seq, exec, this.time, kind, view(o, reason, this.time), fill),
      );
    return seq;
  }
  bookTouched() {
    if (!this.booked) {
      this.booked = true;
      this.w.bookSeq++;
    }
  }
  accountChanged(address) {
    const c = this.changed;
    for (let i = 0; i < c.length; i++) if (c[i] === address) return;
    c.push(address);
  }
}

// The real engine's event shapes (engine/events.ts).
function view(o, reason, time) {
  return {
    orderId: o.id,
    account: o.account,
    market: 1,
    side: o.buy ? 'Buy' : 'Sell',
    orderType: 'Limit',
    timeInForce: o.ioc ? 'IOC' : 'GTC',
    marginMode: 'Cross',
    reduceOnly: false,
    postOnly: false,
    managed: false,
    parentCloid: null,
    createdTime: o.createdTime,
    expireTime: null,
    cloid: null,
    price: o.price,
    triggerPrice: 0n,
    quantity: o.quantity,
    cumQty: BigInt(o.filled),
    filledNotional: 0n,
    ordStatus: o.status,
    reason,
    updatedTime: time,
  };
}

function reportEvent(account, seq, execId, time, kind, order, fill) {
  return {
    type: 'executionReport',
    account,
    seq,
    execId,
    time,
    kind,
    order,
    fill,
    markPrice: undefined,
  };
}

function fillEvent(tradeId, o, lots, price, quote, liquidity, fee, before, after, time) {
  return {
    tradeId,
    market: 1,
    side: o.buy ? 'Buy' : 'Sell',
    marginMode: 'Cross',
    quantity: BigInt(lots),
    price,
    quote,
    liquidity,
    fee,
    realizedPnl: 0n,
    positionBefore: BigInt(before),
    positionAfter: BigInt(after),
    time,
  };
}

function findLevel(levels, ticks, bids) {
  let lo = 0;
  let hi = levels.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const p = levels[mid].ticks;
    if (p === ticks) return mid;
    if (bids ? p < ticks : p > ticks) lo = mid + 1;
    else hi = mid - 1;
  }
  return -lo - 1;
}

/**
 * Available to open after adding `extra` lot-ticks of resting notional: a float estimate with an
 * error bound, the exact bigint figure only when the estimate is too close to zero to decide.
 */
function marginAllows(w, a, extra) {
  const lev = a.leverage;
  const cash = Number(a.cash);
  const value = a.position * w.mark * MICRO_PER_LOT_TICK;
  const im = (Math.abs(a.position) * w.mark * MICRO_PER_LOT_TICK * 100) / lev;
  const hold = ((a.buyNotional + a.sellNotional + extra) * MICRO_PER_LOT_TICK * 100) / lev;
  const available = cash + value - im - hold;
  const bound = 4 + (Math.abs(cash) + Math.abs(value) + im + hold) * 1e-12;
  if (available > bound) return true;
  if (available < -bound) return false;
  const ceil = (x, d) => (x + d - 1n) / d;
  const L = BigInt(lev);
  const pos = BigInt(a.position);
  const m = BigInt(w.mark) * MICRO_PER_LOT_TICK_BIG;
  const exact =
    a.cash +
    pos * m -
    ceil((pos < 0n ? -pos : pos) * m * 100n, L) -
    ceil(BigInt(a.buyNotional + a.sellNotional + extra) * MICRO_PER_LOT_TICK_BIG * 100n, L);
  return exact >= 0n;
}

function link(s, a, o) {
  if (a.last !== 0) s.order(s.w.orders.get(a.last)).next = o.id;
  else a.first = o.id;
  o.prev = a.last;
  a.last = o.id;
}

function unlink(s, a, o) {
  const orders = s.w.orders;
  if (o.prev !== 0) s.order(orders.get(o.prev)).next = o.next;
  else a.first = o.next;
  if (o.next !== 0) s.order(orders.get(o.next)).prev = o.prev;
  else a.last = o.prev;
}

function rest(s, o, a) {
  const side = o.buy ? s.w.bids : s.w.asks;
  let i = findLevel(side.levels, o.ticks, o.buy);
  let l;
  if (i < 0) {
    i = -i - 1;
    l = new Level(s.token, o.ticks, o.price);
    s.side(side).levels.splice(i, 0, l);
  } else l = s.level(side.levels[i]);
  if (l.tail < l.ids.length) s.log.slot(l.ids, l.tail);
  l.ids[l.tail] = o.id;
  o.slot = l.tail++;
  o.level = l;
  const leaves = o.lots - o.filled;
  l.count++;
  l.lots += leaves;
  if (o.buy) a.buyNotional += leaves * o.ticks;
  else a.sellNotional += leaves * o.ticks;
}

function unrest(s, o, a) {
  const l = s.level(o.level);
  s.log.slot(l.ids, o.slot);
  l.ids[o.slot] = 0;
  const leaves = o.lots - o.filled;
  l.count--;
  l.lots -= leaves;
  if (o.buy) a.buyNotional -= leaves * o.ticks;
  else a.sellNotional -= leaves * o.ticks;
  if (l.count === 0) {
    const side = s.side(o.buy ? s.w.bids : s.w.asks);
    side.levels.splice(side.levels.lastIndexOf(l), 1);
  } else while (l.head < l.tail && l.ids[l.head] === 0) l.head++;
  o.slot = -1;
  o.level = null;
}

function retire(s, o) {
  const a = s.account(o.holder);
  s.order(o);
  if (o.slot >= 0) unrest(s, o, a);
  unlink(s, a, o);
  s.w.orders.delete(s.log, o.id);
}

function cancelResting(s, o, reason) {
  retire(s, o);
  o.status = 'Cancelled';
  s.report(o.holder, o, 'OrderCancelled', reason, null);
}

function applyLeg(s, holder, signed, ticks, quote, fee) {
  const a = s.account(holder);
  const before = a.position;
  const after = before + signed;
  if (before === 0 || before > 0 === signed > 0) a.entry += BigInt(Math.abs(signed) * ticks);
  else if (after === 0) a.entry = 0n;
  else if (after > 0 !== before > 0) a.entry = BigInt(Math.abs(after) * ticks);
  a.position = after;
  a.cash += (signed > 0 ? -quote : quote) - fee;
}

function fill(s, taker, maker, lots, l) {
  const w = s.w;
  s.order(maker);
  s.order(taker);
  const ticks = l.ticks;
  const tradeId = ++w.tradeId;
  const quote = BigInt(lots * ticks * MICRO_PER_LOT_TICK);
  const takerFee = (quote * TAKER_FEE + FEE_SCALE - 1n) / FEE_SCALE;
  const makerFee = (quote * MAKER_FEE + FEE_SCALE - 1n) / FEE_SCALE;
  w.feePool += takerFee + makerFee;
  const signed = maker.buy ? lots : -lots;
  const makerBefore = maker.holder.position;
  const takerBefore = taker.holder.position;
  applyLeg(s, maker.holder, signed, ticks, quote, makerFee);
  applyLeg(s, taker.holder, -signed, ticks, quote, takerFee);
  const log = w.trades;
  const at = log.n & ((1 << 17) - 1);
  log.ticks[at] = ticks;
  log.lots[at] = lots;
  log.n++;
  l.lots -= lots;
  if (maker.buy) maker.holder.buyNotional -= lots * ticks;
  else maker.holder.sellNotional -= lots * ticks;
  maker.filled += lots;
  taker.filled += lots;
  const makerDone = maker.filled === maker.lots;
  const takerDone = taker.filled === taker.lots;
  maker.status = makerDone ? 'Filled' : 'PartiallyFilled';
  taker.status = takerDone ? 'Filled' : 'PartiallyFilled';
  if (makerDone) {
    s.log.slot(l.ids, maker.slot);
    l.ids[maker.slot] = 0;
    l.count--;
    l.head = maker.slot + 1;
    maker.slot = -1;
    maker.level = null;
  }
  s.bookTouched();
  const time = s.time;
  if (s.compact) {
    s.report(maker.holder, maker, 0, null, 1);
    s.report(taker.holder, taker, 0, null, 1);
    s.rows.row(ROW_TRADE, tradeId, ticks, lots, makerBefore, takerBefore, 0, null);
  } else {
    const makerFill = fillEvent(
      tradeId,
      maker,
      lots,
      l.price,
      quote,
      'Maker',
      makerFee,
      makerBefore,
      makerBefore + signed,
      time,
    );
    const takerFill = fillEvent(
      tradeId,
      taker,
      lots,
      l.price,
      quote,
      'Taker',
      takerFee,
      takerBefore,
      takerBefore - signed,
      time,
    );
    s.report(
      maker.holder,
      maker,
      makerDone ? 'OrderFilled' : 'OrderPartiallyFilled',
      null,
      makerFill,
    );
    s.report(
      taker.holder,
      taker,
      takerDone ? 'OrderFilled' : 'OrderPartiallyFilled',
      null,
      takerFill,
    );
    s.events.push({
      type: 'trade',
      market: 1,
      tradeId,
      price: l.price,
      quantity: BigInt(lots),
      takerSide: taker.buy ? 'Buy' : 'Sell',
      time,
    });
  }
  if (makerDone) {
    unlink(s, s.account(maker.holder), maker);
    w.orders.delete(s.log, maker.id);
  }
  if (takerDone) {
    unlink(s, s.account(taker.holder), taker);
    w.orders.delete(s.log, taker.id);
  }
  s.accountChanged(maker.account);
  s.accountChanged(taker.account);
}

function match(s, taker) {
  const w = s.w;
  const side = taker.buy ? w.asks : w.bids;
  for (;;) {
    const best = side.levels[side.levels.length - 1];
    if (best === undefined || taker.filled === taker.lots) return;
    if (taker.buy ? best.ticks > taker.ticks : best.ticks < taker.ticks) return;
    const l = s.level(best);
    while (l.count > 0 && taker.filled < taker.lots) {
      const id = l.ids[l.head];
      if (id === 0) {
        l.head++;
        continue;
      }
      const maker = w.orders.get(id);
      if (maker.holder === taker.holder) {
        cancelResting(s, maker, 'SelfTrade');
        continue;
      }
      const lots = Math.min(maker.lots - maker.filled, taker.lots - taker.filled);
      if (w.marginChecks) {
        const a = maker.holder;
        const after = a.position + (maker.buy ? lots : -lots);
        if (Math.abs(after) > Math.abs(a.position) && !marginAllows(w, a, 0)) {
          cancelResting(s, maker, 'InsufficientMargin');
          continue;
        }
      }
      fill(s, taker, maker, lots, l);
    }
    if (l.count === 0 && side.levels[side.levels.length - 1] === l) s.side(side).levels.pop();
  }
}

function placeOrder(s, cmd) {
  const w = s.w;
  const q = cmd.order;
  // The grid check: a float estimate of the tick count, then one exact bigint comparison.
  const ticks = Math.round(Number(q.price) / TICK_NUMBER);
  if (q.market !== 1 || q.orderType !== 0 || BigInt(ticks) * TICK !== q.price)
    return refuse(s, 4032);
  const lots = Number(q.quantity);
  const holder = w.accounts.get(cmd.account);
  if (holder === undefined) return refuse(s, 4040);
  if (lots * ticks < MIN_NOTIONAL_LOT_TICKS) return refuse(s, 4101);
  if (w.marginChecks && !marginAllows(w, holder, lots * ticks)) return refuse(s, 4100);
  const id = ++w.orderId;
  const o = new Order(
    id,
    cmd.account,
    holder,
    q.isBuy,
    q.timeInForce === 2,
    s.time,
    q.price,
    ticks,
    q.quantity,
    lots,
  );
  o.token = s.token;
  w.orders.set(s.log, id, o);
  const a = s.account(holder);
  link(s, a, o);
  s.report(a, o, 'OrderAccepted', null, null);
  const opposite = q.isBuy ? w.asks.levels : w.bids.levels;
  const best = opposite[opposite.length - 1];
  if (best !== undefined && (q.isBuy ? best.ticks <= ticks : best.ticks >= ticks)) match(s, o);
  if (w.orders.get(id) === o) {
    if (o.ioc) {
      retire(s, o);
      o.status = 'Cancelled';
      s.report(a, o, 'OrderCancelled', 'IOC', null);
    } else rest(s, o, a);
    s.bookTouched();
  }
  if (s.compact) s.rows.row(ROW_OUTCOME, a.reportSeq, id, o.filled, 0, 0, 0, null);
  else
    s.events.push({
      type: 'outcome',
      ok: true,
      kind: 'order',
      order: view(o, null, s.time),
      seq: a.reportSeq,
    });
}

function cancelOrder(s, cmd) {
  const o = s.w.orders.get(Number(cmd.orderId));
  if (o === null || o.account !== cmd.account) return refuse(s, 4041);
  retire(s, o);
  s.bookTouched();
  o.status = 'Cancelled';
  const seq = s.report(o.holder, o, 'OrderCancelled', 'User', null);
  if (s.compact) s.rows.row(ROW_OUTCOME, seq, o.id, o.filled, 0, 0, 0, null);
  else
    s.events.push({
      type: 'outcome',
      ok: true,
      kind: 'cancel',
      order: view(o, 'User', s.time),
      seq,
    });
}

function refuse(s, code) {
  if (s.compact) s.rows.row(ROW_REFUSED, code, 0, 0, 0, 0, 0, null);
  else s.events.push({ type: 'outcome', ok: false, code, message: 'refused', nonceConsumed: true });
}

function wellFormed(cmd) {
  if (typeof cmd.time !== 'number' || typeof cmd.account !== 'string') return false;
  if (cmd.type === 'cancelOrder') return typeof cmd.orderId === 'bigint';
  const o = cmd.order;
  return (
    typeof o === 'object' &&
    typeof o.market === 'number' &&
    typeof o.isBuy === 'boolean' &&
    typeof o.orderType === 'number' &&
    typeof o.timeInForce === 'number' &&
    typeof o.price === 'bigint' &&
    typeof o.triggerPrice === 'bigint' &&
    typeof o.quantity === 'bigint' &&
    typeof o.flags === 'number' &&
    typeof o.expiry === 'bigint' &&
    (o.cloid === null || typeof o.cloid === 'string') &&
    (o.parentCloid === null || typeof o.parentCloid === 'string')
  );
}

/** Applies a batch; returns the per-command event lists (objects) or the rows' end offsets. */
function applyBatch(world, commands, compact, rows) {
  const s = new Session(world, compact, rows);
  const out = new Array(commands.length);
  if (compact) rows.n = 0;
  for (let i = 0; i < commands.length; i++) {
    const cmd = commands[i];
    s.time = cmd.time;
    s.booked = false;
    if (!compact) s.events = [];
    if (!wellFormed(cmd)) throw new Error('malformed command');
    if (cmd.type === 'placeOrder') placeOrder(s, cmd);
    else cancelOrder(s, cmd);
    if (s.booked) {
      if (compact) rows.row(ROW_BOOK, world.bookSeq, 0, 0, 0, 0, 0, null);
      else s.events.push({ type: 'bookChanged', market: 1, bookSeq: world.bookSeq });
    }
    const changed = s.changed;
    if (changed.length !== 0) {
      for (const a of changed) {
        if (compact) rows.row(ROW_ACCOUNT, 0, 0, 0, 0, 0, 0, a);
        else s.events.push({ type: 'accountChanged', account: a, time: s.time });
      }
      s.changed = [];
    }
    world.time = cmd.time;
    out[i] = compact ? rows.n : s.events;
  }
  return out;
}

/** Runs the workload through the probe; same result shape as `runEngine`. */
export function runProbe(w, { margin = false, compact = false, batch = 256 } = {}) {
  const flow = engineFlow(w, { margin });
  const world = new World(margin);
  for (const c of flow.setup) {
    if (c.type === 'openAccount') world.accounts.set(c.account, new Account(c.account));
    else if (c.type === 'deposit') world.accounts.get(c.account).cash += c.amount;
  }
  const rows = new EventRows();
  for (let i = 0; i < w.preload; i += 1000) {
    const cmds = [];
    for (let j = i; j < Math.min(i + 1000, w.preload); j++) cmds.push(flow.at(j));
    applyBatch(world, cmds, compact, rows);
  }
  const total = w.preload + w.n;
  let refused = 0;
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  for (let i = w.preload; i < total; ) {
    const cmds = [];
    while (i < total && cmds.length < batch) cmds.push(flow.at(i++));
    const out = applyBatch(world, cmds, compact, rows);
    if (compact) {
      for (let k = 0; k < rows.n; k++) if (rows.numbers[k * 8] === ROW_REFUSED) refused++;
    } else {
      for (const events of out)
        for (const e of events) if (e.type === 'outcome' && !e.ok) refused++;
    }
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const cpu = process.cpuUsage(cpu0);
  let restingOrders = 0;
  let restingLots = 0;
  for (const l of [...world.bids.levels, ...world.asks.levels]) {
    restingOrders += l.count;
    restingLots += l.lots;
  }
  const best = (side) =>
    side.levels.length === 0 ? -1 : side.levels[side.levels.length - 1].ticks;
  return {
    ops: w.n,
    seconds,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    failures: refused,
    final: { restingOrders, restingLots, bestBid: best(world.bids), bestAsk: best(world.asks) },
  };
}

// Run directly: the probe beside nodejs-order-book, as run.mjs runs the engine.
if (import.meta.url === `file://${process.argv[1]}`) {
  const { loadWorkload, WORKLOADS } = await import('./workloads.mjs');
  const wl = await loadWorkload();
  const ops = Number(process.env.BENCH_OPS ?? 1_000_000);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  const variants = {
    'probe, book only, object events': { margin: false, compact: false },
    'probe, book only, compact events': { margin: false, compact: true },
    'probe, margin on, object events': { margin: true, compact: false },
    'probe, margin on, compact events': { margin: true, compact: true },
  };
  console.log(
    `# Design probe: ${ops.toLocaleString('en-US')} timed ops, ${rounds} rounds, Node ${process.version}`,
  );
  for (const [name, opts] of Object.entries(WORKLOADS)) {
    const w = wl.generate({ ...opts, n: ops });
    const rates = { 'nodejs-order-book': [] };
    for (const v of Object.keys(variants)) rates[v] = [];
    for (let r = 0; r < rounds; r++) {
      const nob = runNob(w);
      rates['nodejs-order-book'].push(nob.ops / nob.seconds);
      for (const [v, o] of Object.entries(variants)) {
        const res = runProbe(w, o);
        if (res.failures !== 0 || res.final.restingOrders !== w.final.restingOrders) {
          console.error(
            `${name} ${v}: final book differs or commands refused`,
            res.final,
            res.failures,
          );
          process.exitCode = 1;
        }
        rates[v].push(res.ops / res.seconds);
      }
    }
    const nob = median(rates['nodejs-order-book']);
    console.log(
      `\n## ${name}\n| variant | ops/s (median) | x nodejs-order-book |\n|---|---:|---:|`,
    );
    for (const [v, xs] of Object.entries(rates)) {
      const rate = median(xs);
      console.log(
        `| ${v} | ${Math.round(rate).toLocaleString('en-US')} | ${(rate / nob).toFixed(2)}x |`,
      );
    }
  }
}
