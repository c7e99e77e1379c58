// Market-data subscribers for md-fanout.mjs, run as a child process so the server's process
// does no client work. Driven over IPC:
//
//   parent -> {type: 'config', url, subscribers, mode: 'md' | 'raw', perIp, subscriptions}
//   child  -> {type: 'ready', connectMs, ...}   every socket open (md: every subscription
//                                                acknowledged and its snapshot received)
//   parent -> {type: 'measure', ms}             count what arrives during `ms`
//   child  -> {type: 'measured', ...}
//   parent -> {type: 'exit'}
//
// Sockets are spread over loopback source addresses (127.0.1.2, 127.0.1.3, ...), `perIp` each:
// the market-data service admits 30 sockets and 100 messages per second per client IP, and
// 1,000 real subscribers would not share one address. Counting reads only the first bytes of
// each frame (its `type`), so the client side stays cheap; the first message of each type per
// socket is parsed in full and checked.

import WebSocket from 'ws';
import { loopbackAddress } from './lib.mjs';

const send = (m) => process.send(m);
const fail = (e) => {
  send({ type: 'fatal', message: e instanceof Error ? e.stack : String(e) });
  setTimeout(() => process.exit(1), 100);
};

const TYPE_RE = /^\{"type":"([A-Za-z]+)"/;

class Sub {
  constructor(i, cfg) {
    this.i = i;
    this.cfg = cfg;
    this.counts = {};
    this.bytes = 0;
    this.total = 0;
    this.acks = 0;
    this.firstOf = {};
    this.errors = [];
  }

  open() {
    const ws = new WebSocket(this.cfg.url, {
      perMessageDeflate: false,
      localAddress: loopbackAddress(Math.floor(this.i / this.cfg.perIp)),
    });
    this.ws = ws;
    return new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
      ws.on('message', (data) => this.onMessage(data));
      ws.on('close', (code, reason) => {
        if (!this.closing) this.errors.push(`closed ${code} ${reason}`);
      });
    });
  }

  onMessage(data) {
    this.total++;
    this.bytes += data.length;
    if (this.cfg.mode === 'raw') return;
    const head = data.toString('latin1', 0, 40);
    const type = TYPE_RE.exec(head)?.[1] ?? 'unknown';
    this.counts[type] = (this.counts[type] ?? 0) + 1;
    if (this.firstOf[type] === undefined) {
      const m = JSON.parse(data.toString());
      this.firstOf[type] = m;
      if (type === 'error') this.errors.push(`${m.code} ${m.message}`);
    }
    if (type === 'subscribed') this.acks++;
    this.check?.();
  }

  /** md mode: every subscription acknowledged and a snapshot of each channel received. */
  get complete() {
    return (
      this.acks >= this.cfg.subscriptions.length &&
      this.cfg.expect.every((t) => (this.counts[t] ?? 0) > 0)
    );
  }
}

let subs = [];
process.on('message', async (m) => {
  try {
    if (m.type === 'config') {
      const cfg = m;
      const t0 = performance.now();
      subs = Array.from({ length: cfg.subscribers }, (_v, i) => new Sub(i, cfg));
      for (let i = 0; i < subs.length; i += 50)
        await Promise.all(subs.slice(i, i + 50).map((s) => s.open()));
      const connectMs = performance.now() - t0;
      if (cfg.mode === 'md') {
        // Subscribe in waves; each IP sends 2 messages per socket, well under 100 per second.
        await Promise.all(
          subs.map(
            (s) =>
              new Promise((resolve, reject) => {
                const timer = setTimeout(
                  () =>
                    reject(
                      new Error(
                        `subscriber ${s.i} incomplete after 30 s: ${JSON.stringify({ counts: s.counts, errors: s.errors })}`,
                      ),
                    ),
                  30_000,
                );
                s.check = () => {
                  if (s.complete) {
                    s.check = undefined;
                    clearTimeout(timer);
                    resolve();
                  }
                };
                for (const sub of cfg.subscriptions) s.ws.send(JSON.stringify(sub));
              }),
          ),
        );
      }
      const first = subs[0]?.firstOf ?? {};
      send({
        type: 'ready',
        connectMs,
        readyMs: performance.now() - t0,
        addresses: Math.ceil(subs.length / cfg.perIp),
        samples: Object.fromEntries(
          Object.entries(first).map(([k, v]) => [k, JSON.stringify(v).slice(0, 400)]),
        ),
        everyOneHasSnapshots: subs.every((s) => cfg.mode === 'raw' || s.complete),
        snapshotCounts:
          cfg.mode === 'md'
            ? Object.fromEntries(
                cfg.expect.map((t) => [t, subs.filter((s) => (s.counts[t] ?? 0) > 0).length]),
              )
            : {},
      });
    } else if (m.type === 'measure') {
      const before = subs.map((s) => ({ total: s.total, bytes: s.bytes, counts: { ...s.counts } }));
      const cpu = process.cpuUsage();
      const t0 = performance.now();
      await new Promise((r) => setTimeout(r, m.ms));
      const ms = performance.now() - t0;
      const c = process.cpuUsage(cpu);
      const perSub = subs.map((s, i) => s.total - before[i].total);
      const byType = {};
      const bytesBefore = before.reduce((x, b) => x + b.bytes, 0);
      subs.forEach((s, i) => {
        for (const [k, v] of Object.entries(s.counts))
          byType[k] = (byType[k] ?? 0) + v - (before[i].counts[k] ?? 0);
      });
      const total = perSub.reduce((x, y) => x + y, 0);
      const bytes = subs.reduce((x, s) => x + s.bytes, 0) - bytesBefore;
      send({
        type: 'measured',
        ms,
        total,
        bytes,
        perSecond: (total * 1000) / ms,
        byType,
        minPerSub: Math.min(...perSub),
        maxPerSub: Math.max(...perSub),
        subsWithNone: perSub.filter((n) => n === 0).length,
        clientCpuShare: (c.user + c.system) / 1000 / ms,
        errors: subs.flatMap((s) => s.errors).slice(0, 5),
        errorCount: subs.reduce((x, s) => x + s.errors.length, 0),
      });
    } else if (m.type === 'exit') {
      for (const s of subs) {
        s.closing = true;
        s.ws.terminate();
      }
      setTimeout(() => process.exit(0), 50);
    }
  } catch (e) {
    fail(e);
  }
});
