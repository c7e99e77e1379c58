// Market-data fan-out: 1,000 subscribers on /marketdata (orderbook depth 20 and tickers of
// BTC-PERP) while signed orders flow, against the raw anchor in the same run: a bare `ws`
// server broadcasting a payload of the same mean size to the same 1,000 clients as fast as the
// sockets take it (research performance-anchors 5, M14 method).
//
// Processes: the venue (and later the bare ws server) runs in this process; the subscribers in
// one child (md-clients.mjs); the order flow in another (order-client.mjs, open loop).
//
// Steps:
//   1. orders only (`--order-rate`/s, open loop) for `--baseline-secs`: server CPU with no subscribers
//   2. 1,000 subscribers connect and subscribe; every one must get its snapshots
//   3. `--measure-secs`: messages delivered to all subscribers, server CPU; the marginal CPU
//      (step 3 minus step 1) divided by deliveries is the service's cost per delivered message
//   4. the venue stops; a bare ws server broadcasts to 1,000 fresh clients for `--measure-secs`
//
//   node packages/adapters-node/bench/md-fanout.mjs [--subscribers 1000] [--order-rate 100]
//        [--measure-secs 5] [--baseline-secs 3] [--json]
// Build first (`npx tsc -b`): it runs against packages/adapters-node/dist.

import { fileURLToPath } from 'node:url';
import { WebSocketServer } from 'ws';
import { fmt, parseArgs, processMeter, startBenchVenue, startChild } from './lib.mjs';

const opts = parseArgs(process.argv.slice(2), {
  subscribers: 1000,
  perIp: 25,
  orderRate: 100,
  wallets: 4,
  baselineSecs: 3,
  measureSecs: 5,
  instrument: 'BTC-PERP',
  depth: 20,
  orderSlackSecs: 40,
  collateral: '10000000',
  json: false,
});
const log = opts.json ? () => {} : (line) => console.log(line);
const orderClientPath = fileURLToPath(new URL('./order-client.mjs', import.meta.url));
const mdClientsPath = fileURLToPath(new URL('./md-clients.mjs', import.meta.url));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const subscriptions = [
  { type: 'subscribe', channel: 'orderbook', instrument: opts.instrument, depth: opts.depth },
  { type: 'subscribe', channel: 'tickers' },
];

log(
  `# md-fanout: ${opts.subscribers} subscribers (orderbook ${opts.instrument} depth ${opts.depth} + tickers), orders ${opts.orderRate}/s, Node ${process.version}`,
);

// ---- the venue ------------------------------------------------------------------------------
const { venue, net } = await startBenchVenue({ connectionsPerIp: opts.wallets + 10 });
const meter = processMeter();
const orders = startChild(orderClientPath, 'order client');
let exhausted = false;
orders.on((m) => {
  if (m.type === 'exhausted') exhausted = true;
});
// Enough signed orders for every step plus slack for slow subscription.
const orderSecs = opts.baselineSecs + opts.measureSecs + opts.orderSlackSecs;
const ready = orders.next('ready');
orders.send({
  type: 'config',
  config: {
    rest: venue.rest,
    ws: venue.ws,
    inviteCode: venue.inviteCode,
    adminToken: venue.adminToken,
    net,
    wallets: opts.wallets,
    walletOffset: 0,
    salt: 'md-fanout',
    ordersPerWallet: Math.ceil((opts.orderRate * orderSecs) / opts.wallets),
    collateral: opts.collateral,
    seed: 7,
  },
});
const r = await ready;
log(
  `  ${opts.wallets} wallets onboarded, ${r.signed} orders pre-signed (${fmt(r.signMs)} ms, untimed)`,
);

const flowStarted = orders.next('phaseStart');
const flowDone = orders.next('phaseResult');
orders.send({ type: 'phase', phase: { name: 'warming up', mode: 'paced', rate: opts.orderRate } });
await flowStarted;
await sleep(1000);
orders.send({ type: 'mark', label: 'orders only' });
meter.mark();
await sleep(opts.baselineSecs * 1000);
const baseline = meter.read();
log(
  `  step 1, orders only: server CPU ${fmt(baseline.cpuShare * 100, 1)} % of one core, event-loop utilisation ${fmt(baseline.elu * 100, 1)} %`,
);

orders.send({ type: 'mark', label: 'subscribers connecting' });
const md = startChild(mdClientsPath, 'market-data clients');
const mdReady = md.next('ready');
md.send({
  type: 'config',
  url: venue.marketdata,
  subscribers: opts.subscribers,
  mode: 'md',
  perIp: opts.perIp,
  subscriptions,
  expect: ['orderbook', 'tickers'],
});
const mr = await mdReady;
log(
  `  step 2, ${opts.subscribers} subscribers from ${mr.addresses} loopback addresses: connected in ${fmt(mr.connectMs)} ms, ` +
    `all subscribed with snapshots in ${fmt(mr.readyMs)} ms; subscribers with a snapshot: ${JSON.stringify(mr.snapshotCounts)}`,
);
for (const [type, sample] of Object.entries(mr.samples))
  log(`    sample ${type}: ${sample.slice(0, 160)}${sample.length > 160 ? '...' : ''}`);
await sleep(1000);
orders.send({ type: 'mark', label: 'fan-out measured' });
meter.mark();
const measured = md.next('measured');
md.send({ type: 'measure', ms: opts.measureSecs * 1000 });
const service = await measured;
const serviceCpu = meter.read();
orders.send({ type: 'mark', label: 'winding down' });
orders.send({ type: 'stop' });
const flow = (await flowDone).result;
await md.exit();
await orders.exit();
await venue.close();

const meanBytes = service.total > 0 ? service.bytes / service.total : 0;
const marginalCpuMs = (serviceCpu.cpuShare - baseline.cpuShare) * service.ms;
const serviceUsPerDelivery = (marginalCpuMs * 1000) / service.total;
// The service's own ceiling: orderbook at most 10 pushes/s per (instrument, depth), tickers at most 1/s.
const ceiling = opts.subscribers * 11;
log(
  `  step 3, measured ${fmt(service.ms)} ms: ${fmt(service.perSecond)} messages/s delivered to all subscribers ` +
    `(${fmt(service.perSecond / opts.subscribers, 2)}/s each, min ${fmt((service.minPerSub * 1000) / service.ms, 1)}, max ${fmt((service.maxPerSub * 1000) / service.ms, 1)}; ` +
    `by type ${JSON.stringify(service.byType)}; pacing ceiling ${fmt(ceiling)}/s), mean ${fmt(meanBytes)} B/message, ${fmt((service.bytes * 1000) / service.ms / 1e6, 2)} MB/s`,
);
log(
  `          server CPU ${fmt(serviceCpu.cpuShare * 100, 1)} % (ELU ${fmt(serviceCpu.elu * 100, 1)} %), marginal over step 1: ` +
    `${fmt((marginalCpuMs / service.ms) * 100, 1)} % of a core = ${fmt(serviceUsPerDelivery, 2)} us per delivered message; clients' process ${fmt(service.clientCpuShare * 100)} %`,
);
log(
  `          orders during the run: ${fmt(flow.acked)}/${fmt(flow.sent)} acked, ${fmt(flow.perSecond)}/s, p50 ${fmt(flow.latencyMs.p50, 2)} ms, p99 ${fmt(flow.latencyMs.p99, 2)} ms` +
    `${Object.keys(flow.errors).length ? `, ERRORS ${JSON.stringify(flow.errors)}` : ''}${exhausted ? ' (ran out of signed orders before the end!)' : ''}` +
    `${service.errorCount ? `; subscriber errors ${service.errorCount}: ${service.errors.join(' | ')}` : ''}`,
);
for (const seg of flow.segments.filter((x) => x.answered > 0)) {
  log(
    `            order latency while ${seg.label.padEnd(23)} ${fmt(seg.answered)} answers, p50 ${fmt(seg.p50, 2)} ms, p99 ${fmt(seg.p99, 2)} ms, max ${fmt(seg.max, 2)} ms`,
  );
}

// ---- the raw anchor: bare ws broadcast ---------------------------------------------------------
const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false });
await new Promise((r) => wss.once('listening', r));
const rawUrl = `ws://127.0.0.1:${wss.address().port}`;
const raw = startChild(mdClientsPath, 'raw ws clients');
const rawReady = raw.next('ready');
raw.send({
  type: 'config',
  url: rawUrl,
  subscribers: opts.subscribers,
  mode: 'raw',
  perIp: opts.perIp,
  subscriptions: [],
  expect: [],
});
await rawReady;
const size = Math.max(64, Math.round(meanBytes));
const head = '{"type":"orderbook","pad":"';
const payload = `${head}${'x'.repeat(Math.max(0, size - head.length - 2))}"}`;
let broadcasting = true;
const SOFT = 1024 * 1024;
const pump = () => {
  if (!broadcasting) return;
  for (let round = 0; round < 8; round++) {
    for (const ws of wss.clients) {
      if (ws.bufferedAmount < SOFT) {
        ws.send(payload);
      }
    }
  }
  setImmediate(pump);
};
pump();
await sleep(1000);
meter.mark();
const rawMeasured = raw.next('measured');
raw.send({ type: 'measure', ms: opts.measureSecs * 1000 });
const anchor = await rawMeasured;
const anchorCpu = meter.read();
broadcasting = false;
// Second anchor, same clients: the bare server at the service's own cadence (bursts to every
// client at the per-subscriber rate the service just delivered), so both pay for small,
// unbatched socket writes; a saturated sender gets its writes coalesced by the kernel buffers.
await sleep(500);
const burstEveryMs = 1000 / Math.max(0.1, service.perSecond / opts.subscribers);
const burst = setInterval(() => {
  for (const ws of wss.clients) ws.send(payload);
}, burstEveryMs);
await sleep(500);
meter.mark();
const pacedMeasured = raw.next('measured');
raw.send({ type: 'measure', ms: opts.measureSecs * 1000 });
const pacedAnchor = await pacedMeasured;
const pacedCpu = meter.read();
clearInterval(burst);
await raw.exit();
for (const ws of wss.clients) ws.terminate();
await new Promise((r) => wss.close(r));
const anchorUsPerDelivery = (anchorCpu.cpuShare * anchor.ms * 1000) / anchor.total;
log(
  `  anchor, bare ws 8.23 broadcast of a ${payload.length}-byte payload to ${opts.subscribers} clients: ${fmt(anchor.perSecond)} messages/s delivered ` +
    `(min ${fmt((anchor.minPerSub * 1000) / anchor.ms)}/s per client), server CPU ${fmt(anchorCpu.cpuShare * 100, 1)} % = ${fmt(anchorUsPerDelivery, 2)} us per delivered message; clients' process ${fmt(anchor.clientCpuShare * 100)} %`,
);
const pacedUsPerDelivery = (pacedCpu.cpuShare * pacedAnchor.ms * 1000) / pacedAnchor.total;
log(
  `  anchor, bare ws at the service's cadence (a burst to every client every ${fmt(burstEveryMs, 1)} ms): ${fmt(pacedAnchor.perSecond)} messages/s, ` +
    `server CPU ${fmt(pacedCpu.cpuShare * 100, 1)} % = ${fmt(pacedUsPerDelivery, 2)} us per delivered message`,
);
const ratio = service.perSecond / anchor.perSecond;
const costRatio = serviceUsPerDelivery / anchorUsPerDelivery;
const pacedCostRatio = serviceUsPerDelivery / pacedUsPerDelivery;
log(
  `  ratio delivered messages/s, service / raw ws = ${ratio.toFixed(4)} (the service is paced: its ceiling here is ${fmt(ceiling)}/s = ${(ceiling / anchor.perSecond).toFixed(4)} of raw)`,
);
log(
  `  ratio server CPU per delivered message, service (marginal) / raw ws = ${costRatio.toFixed(2)} (saturated anchor), ${pacedCostRatio.toFixed(2)} (same-cadence anchor)`,
);

const result = {
  bench: 'md-fanout',
  node: process.version,
  options: opts,
  service: {
    ...service,
    meanBytes,
    serverCpu: serviceCpu,
    baselineCpu: baseline,
    usPerDelivery: serviceUsPerDelivery,
    ceiling,
    ready: mr,
  },
  orders: { ...flow, exhausted },
  anchor: {
    ...anchor,
    payloadBytes: payload.length,
    serverCpu: anchorCpu,
    usPerDelivery: anchorUsPerDelivery,
  },
  ratio,
  costRatio,
};
if (opts.json) console.log(JSON.stringify(result));
if (!mr.everyOneHasSnapshots || service.errorCount > 0 || flow.acked !== flow.sent)
  process.exitCode = 1;
