// Load generator for the trading WebSocket, run as a child process of ws-orders.mjs and
// md-fanout.mjs so its CPU is not the server's. Driven over IPC:
//
//   parent -> {type: 'config', ...}      onboard wallets, connect, authenticate, subscribe
//   child  -> {type: 'ready', ...}       wallets funded, first phase's orders signed
//   parent -> {type: 'phase', ...}       run one phase (flood with a window, or paced)
//   child  -> {type: 'phaseStart' | 'phaseResult', ...}
//   parent -> {type: 'sign', count}      sign more orders per wallet (untimed)
//   parent -> {type: 'stop'}             end a paced phase early
//   parent -> {type: 'exit'}
//
// Every order is a real EIP-712 Order signed with viem's signTypedData, before the timed
// window (signing here would otherwise compete with the server for the same two cores).

import WebSocket from 'ws';
import {
  benchKey,
  deadline,
  fund,
  invite,
  percentile,
  prng,
  reserveNonces,
  Wallet,
} from './lib.mjs';

const PRICE_UNIT = 10n ** 18n;
const HALF = PRICE_UNIT / 2n; // BTC-PERP tick 0.5
const MID = 65000n * PRICE_UNIT;
const LOT = 10n; // 0.001 BTC in raw units (4 quantity decimals)
const ZERO16 = `0x${'0'.repeat(32)}`;

const send = (m) => process.send(m, (e) => e && process.exit(1));
const fail = (e) => {
  send({ type: 'fatal', message: e instanceof Error ? e.stack : String(e) });
  setTimeout(() => process.exit(1), 100);
};

/**
 * The order mix: 60 % passive GTC limits 1-40 ticks away from mid (they rest), 40 % aggressive
 * limits priced through mid by 0-10 ticks (they cross whatever rests there), half GTC (the rest
 * of an unfilled one rests) and half IOC. Sides 50/50; sizes 0.001-0.010 BTC resting and
 * 0.001-0.020 BTC crossing, so every order is above the 5 USD minimum notional.
 */
function orderFields(rand) {
  const isBuy = rand() < 0.5;
  const resting = rand() < 0.6;
  let ticks;
  let qty;
  let tif = 0; // GTC
  if (resting) {
    ticks = -BigInt(1 + Math.floor(rand() * 40));
    qty = BigInt(1 + Math.floor(rand() * 10));
  } else {
    ticks = BigInt(Math.floor(rand() * 11));
    qty = BigInt(1 + Math.floor(rand() * 20));
    if (rand() < 0.5) tif = 2; // IOC
  }
  const price = isBuy ? MID + ticks * HALF : MID - ticks * HALF;
  return {
    isBuy,
    price,
    quantity: qty * LOT,
    timeInForce: tif,
    kind: resting ? 'resting' : tif === 2 ? 'crossingIoc' : 'crossingGtc',
  };
}

class Trader {
  constructor(index, cfg) {
    this.index = index;
    this.cfg = cfg;
    this.wallet = new Wallet(benchKey(cfg.walletOffset + index, cfg.salt), cfg.net);
    this.rand = prng(cfg.seed * 1000 + index);
    this.orders = []; // pre-serialized placeOrder messages
    this.next = 0;
    this.pending = new Map(); // id -> send time
    this.waiters = new Map(); // id -> resolve (setup requests)
    this.reports = {};
    this.onAck = null;
    this.mix = { resting: 0, crossingGtc: 0, crossingIoc: 0 };
    this.cloid = 0;
  }

  async connect() {
    const ws = new WebSocket(this.cfg.ws, { perMessageDeflate: false });
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    this.ws = ws;
    ws.on('message', (data) => this.onMessage(data));
    ws.on('close', (code, reason) => {
      if (!this.closing)
        fail(new Error(`wallet ${this.index}: trading socket closed ${code} ${reason}`));
    });
  }

  onMessage(data) {
    const m = JSON.parse(data.toString());
    if (m.type === 'executionReport') {
      this.reports[m.kind] = (this.reports[m.kind] ?? 0) + 1;
      if (m.kind === 'DepositMargin') this.depositDone?.(m);
      return;
    }
    if (m.id === undefined) return;
    const w = this.waiters.get(m.id);
    if (w !== undefined) {
      this.waiters.delete(m.id);
      w(m);
      return;
    }
    const sentAt = this.pending.get(m.id);
    if (sentAt !== undefined) {
      this.pending.delete(m.id);
      this.onAck(m, performance.now() - sentAt);
    }
  }

  request(message) {
    const id = `s${this.index}_${this.waiters.size}_${Math.random().toString(36).slice(2, 8)}`;
    return new Promise((resolve) => {
      this.waiters.set(id, resolve);
      this.ws.send(JSON.stringify({ ...message, id }));
    });
  }

  async setup() {
    const { cfg } = this;
    await invite(this.wallet, cfg);
    await this.connect();
    const auth = await this.request({
      type: 'authenticate',
      signature: await this.wallet.authenticate(),
    });
    if (auth.type !== 'authenticateSuccess')
      throw new Error(`authenticate: ${JSON.stringify(auth)}`);
    const sub = await this.request({ type: 'subscribeTrading' });
    if (sub.type !== 'subscribeTradingSuccess')
      throw new Error(`subscribeTrading: ${JSON.stringify(sub)}`);
    const settled = new Promise((resolve) => {
      this.depositDone = resolve;
    });
    await fund(this.wallet, { ...cfg, amount: cfg.collateral });
    const report = await Promise.race([
      settled,
      new Promise((r) => setTimeout(() => r(null), 10_000)),
    ]);
    if (report === null || report.status !== 'Completed')
      throw new Error(`deposit did not settle: ${JSON.stringify(report)}`);
    this.reports = {};
  }

  /** Signs `count` more orders (real EIP-712 signatures). */
  async sign(count) {
    const first = reserveNonces(count);
    const dl = deadline(1800);
    for (let i = 0; i < count; i++) {
      const f = orderFields(this.rand);
      this.mix[f.kind]++;
      const signature = await this.wallet.sign('Order', {
        market: 1,
        isBuy: f.isBuy,
        orderType: 0,
        timeInForce: f.timeInForce,
        price: f.price,
        triggerPrice: 0n,
        quantity: f.quantity,
        flags: 0,
        expiry: 0n,
        cloid: `0x${(this.index + 1).toString(16).padStart(8, '0')}${(++this.cloid).toString(16).padStart(24, '0')}`,
        parentCloid: ZERO16,
        nonce: first + BigInt(i),
        deadline: dl,
      });
      const id = `o${this.index}_${this.orders.length}`;
      this.orders.push({
        id,
        text: JSON.stringify({ type: 'placeOrder', id, instrument: 'BTC-PERP', signature }),
      });
    }
  }

  /** Sends the next order; false when none is left. */
  sendNext() {
    if (this.next >= this.orders.length) return false;
    const o = this.orders[this.next++];
    this.pending.set(o.id, performance.now());
    this.ws.send(o.text);
    return true;
  }

  get left() {
    return this.orders.length - this.next;
  }
}

/** Runs one phase over every trader; resolves with its counts and latencies. */
function runPhase(traders, phase) {
  return new Promise((resolve) => {
    const latencies = [];
    // The parent may split a phase into labelled segments (`mark` messages), e.g. before and
    // during a market-data measurement; each gets its own latency summary.
    const segments = [{ label: phase.name, lat: [] }];
    const errors = {};
    const ackTimes = [];
    let sent = 0;
    let acked = 0;
    let answered = 0;
    let stopped = false;
    const reportsBefore = traders.map((t) => ({ ...t.reports }));
    const start = performance.now();
    let timer = null;
    let finished = false;
    const finishIfDone = () => {
      if (finished) return;
      if (!(stopped || traders.every((t) => t.left === 0)) || answered < sent) return;
      finished = true;
      if (timer !== null) clearInterval(timer);
      process.off('message', onStop);
      const end = performance.now();
      latencies.sort((a, b) => a - b);
      const reports = {};
      traders.forEach((t, i) => {
        for (const [k, v] of Object.entries(t.reports))
          reports[k] = (reports[k] ?? 0) + v - (reportsBefore[i][k] ?? 0);
      });
      // Steady rate: acks between the 10 % and 90 % marks of the phase's answers.
      let steady = Number.NaN;
      if (ackTimes.length >= 20) {
        const a = Math.floor(ackTimes.length * 0.1);
        const b = Math.floor(ackTimes.length * 0.9);
        steady = ((b - a) * 1000) / (ackTimes[b] - ackTimes[a]);
      }
      resolve({
        name: phase.name,
        mode: phase.mode,
        sent,
        acked,
        errors,
        elapsedMs: end - start,
        perSecond: (acked * 1000) / (end - start),
        steadyPerSecond: steady,
        latencyMs: {
          p50: percentile(latencies, 50),
          p90: percentile(latencies, 90),
          p99: percentile(latencies, 99),
          max: latencies[latencies.length - 1],
          mean: latencies.reduce((x, y) => x + y, 0) / latencies.length,
        },
        reports,
        segments: segments.map(({ label, lat }) => {
          const sorted = [...lat].sort((a, b) => a - b);
          return {
            label,
            answered: lat.length,
            p50: percentile(sorted, 50),
            p99: percentile(sorted, 99),
            max: sorted[sorted.length - 1],
          };
        }),
      });
    };
    for (const t of traders) {
      t.onAck = (m, ms) => {
        answered++;
        ackTimes.push(performance.now());
        latencies.push(ms);
        segments[segments.length - 1].lat.push(ms);
        if (m.type === 'orderAck') acked++;
        else {
          const key = m.type === 'error' ? String(m.code) : m.type;
          errors[key] ??= { count: 0, sample: m.message ?? JSON.stringify(m).slice(0, 200) };
          errors[key].count++;
        }
        if (phase.mode === 'flood' && !stopped && t.sendNext()) sent++;
        finishIfDone();
      };
    }
    const onStop = (m) => {
      if (m.type === 'mark') segments.push({ label: m.label, lat: [] });
      if (m.type === 'stop') {
        stopped = true;
        finishIfDone();
      }
    };
    process.on('message', onStop);
    send({ type: 'phaseStart', name: phase.name });
    if (phase.mode === 'flood') {
      for (const t of traders) for (let k = 0; k < phase.window; k++) if (t.sendNext()) sent++;
      finishIfDone();
    } else {
      // Open loop: the schedule, not the answers, decides when an order goes out.
      let rr = 0;
      timer = setInterval(() => {
        if (stopped) return;
        const due = Math.floor(((performance.now() - start) * phase.rate) / 1000);
        while (sent < due) {
          let t = null;
          for (let k = 0; k < traders.length; k++) {
            const c = traders[(rr + k) % traders.length];
            if (c.left > 0) {
              t = c;
              rr = (rr + k + 1) % traders.length;
              break;
            }
          }
          if (t === null) {
            stopped = true;
            send({ type: 'exhausted', name: phase.name });
            break;
          }
          t.sendNext();
          sent++;
        }
        finishIfDone();
      }, 2);
    }
  });
}

let traders = [];
process.on('message', async (m) => {
  try {
    if (m.type === 'config') {
      const cfg = m.config;
      traders = Array.from({ length: cfg.wallets }, (_v, i) => new Trader(i, cfg));
      // Onboarding over REST and the socket, a few wallets at a time.
      for (let i = 0; i < traders.length; i += 4)
        await Promise.all(traders.slice(i, i + 4).map((t) => t.setup()));
      const t0 = performance.now();
      await Promise.all(traders.map((t) => t.sign(cfg.ordersPerWallet)));
      const signMs = performance.now() - t0;
      send({ type: 'ready', signed: cfg.ordersPerWallet * traders.length, signMs, mix: sumMix() });
    } else if (m.type === 'sign') {
      const t0 = performance.now();
      await Promise.all(traders.map((t) => t.sign(m.count)));
      send({
        type: 'signed',
        signed: m.count * traders.length,
        signMs: performance.now() - t0,
        mix: sumMix(),
      });
    } else if (m.type === 'phase') {
      const result = await runPhase(traders, m.phase);
      send({ type: 'phaseResult', result });
    } else if (m.type === 'exit') {
      for (const t of traders) {
        t.closing = true;
        t.ws?.close();
      }
      setTimeout(() => process.exit(0), 50);
    }
  } catch (e) {
    fail(e);
  }
});

function sumMix() {
  const out = { resting: 0, crossingGtc: 0, crossingIoc: 0 };
  for (const t of traders) for (const k of Object.keys(out)) out[k] += t.mix[k];
  return out;
}
