// Signed order entry over the trading WebSocket, end to end: a venue started in this process
// (`startVenue` from ../dist, `--price-feed none`), N wallets onboarded through the public
// surface (signed referral, faucet, ERC-2612 permit deposit), each authenticated on /ws and
// sending pre-signed EIP-712 placeOrder messages from a child process (order-client.mjs).
//
// Phases per journal mode:
//   saturation  every wallet keeps `--window` orders in flight: accepted orders/s, latency
//   half-load   open-loop at 50 % of the saturation rate: latency below saturation
// In the same run, before and after the service phases: single-thread noble
// `secp256k1.recoverPublicKey` per second (the engine's own @noble/curves copy), and the ratio.
//
//   node packages/adapters-node/bench/ws-orders.mjs [--wallets 8] [--orders 400] [--window 8]
//        [--journal both|memory|disk] [--half-load-secs 3] [--anchor-ms 1000] [--json]
// Build first (`npx tsc -b`): it runs against packages/adapters-node/dist.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  fmt,
  median,
  nobleRecoverAnchor,
  parseArgs,
  processMeter,
  startBenchVenue,
  startChild,
} from './lib.mjs';

const opts = parseArgs(process.argv.slice(2), {
  wallets: 8,
  orders: 400,
  window: 8,
  journal: 'both',
  halfLoadSecs: 3,
  anchorMs: 1000,
  anchorRounds: 3,
  collateral: '10000000',
  seed: 1,
  json: false,
});
const log = opts.json ? () => {} : (line) => console.log(line);
const clientPath = fileURLToPath(new URL('./order-client.mjs', import.meta.url));

async function runService(journal) {
  const dataDir = journal === 'disk' ? mkdtempSync(join(tmpdir(), 'perp-bench-')) : null;
  const { venue, net } = await startBenchVenue({ dataDir, connectionsPerIp: opts.wallets + 10 });
  const client = startChild(clientPath, 'order client');
  try {
    const ready = client.next('ready');
    client.send({
      type: 'config',
      config: {
        rest: venue.rest,
        ws: venue.ws,
        inviteCode: venue.inviteCode,
        adminToken: venue.adminToken,
        net,
        wallets: opts.wallets,
        walletOffset: 0,
        salt: 'ws-orders',
        ordersPerWallet: opts.orders,
        collateral: opts.collateral,
        seed: opts.seed,
      },
    });
    const r = await ready;
    log(
      `  [${journal}] ${opts.wallets} wallets onboarded; ${r.signed} orders pre-signed with viem in ${fmt(r.signMs)} ms ` +
        `(${fmt((r.signed * 1000) / r.signMs)}/s in the client process, untimed); mix ${JSON.stringify(r.mix)}`,
    );
    const meter = processMeter();
    const phase = async (spec) => {
      const started = client.next('phaseStart');
      const done = client.next('phaseResult');
      client.send({ type: 'phase', phase: spec });
      await started;
      meter.mark();
      const res = (await done).result;
      return { ...res, server: meter.read() };
    };
    const saturation = await phase({ name: 'saturation', mode: 'flood', window: opts.window });
    let halfLoad = null;
    if (opts.halfLoadSecs > 0 && saturation.acked > 0) {
      const rate = Math.max(1, Math.floor(saturation.perSecond / 2));
      const perWallet = Math.ceil((rate * opts.halfLoadSecs) / opts.wallets);
      const signed = client.next('signed');
      client.send({ type: 'sign', count: perWallet });
      await signed;
      halfLoad = await phase({ name: 'half-load', mode: 'paced', rate });
      halfLoad.offeredPerSecond = rate;
    }
    await venue.context.host.idle();
    return { journal, saturation, halfLoad };
  } finally {
    await client.exit();
    await venue.close();
    if (dataDir !== null) rmSync(dataDir, { recursive: true, force: true });
  }
}

function describe(p) {
  const l = p.latencyMs;
  const errs = Object.entries(p.errors)
    .map(([code, e]) => `${code} x${e.count} (${e.sample})`)
    .join('; ');
  return [
    `    ${p.name.padEnd(10)} ${fmt(p.acked)}/${fmt(p.sent)} acked in ${fmt(p.elapsedMs)} ms = ${fmt(p.perSecond)} orders/s` +
      (Number.isFinite(p.steadyPerSecond)
        ? ` (steady middle 80 %: ${fmt(p.steadyPerSecond)}/s)`
        : '') +
      (p.offeredPerSecond !== undefined ? ` [offered ${fmt(p.offeredPerSecond)}/s open-loop]` : ''),
    `               latency request->ack p50 ${fmt(l.p50, 2)} ms, p90 ${fmt(l.p90, 2)}, p99 ${fmt(l.p99, 2)}, max ${fmt(l.max, 2)}`,
    `               server process CPU ${fmt(p.server.cpuShare * 100)} % of one core, event-loop utilisation ${fmt(p.server.elu * 100)} %`,
    `               execution reports ${JSON.stringify(p.reports)}${errs === '' ? '' : `\n               ERRORS: ${errs}`}`,
  ].join('\n');
}

log(
  `# ws-orders: ${opts.wallets} wallets x ${opts.orders} signed orders, window ${opts.window} per wallet, Node ${process.version}`,
);
const anchorBefore = await nobleRecoverAnchor({
  windowMs: opts.anchorMs,
  rounds: opts.anchorRounds,
});
const runs = [];
for (const journal of opts.journal === 'both' ? ['memory', 'disk'] : [opts.journal]) {
  const run = await runService(journal);
  runs.push(run);
  log(`  journal ${journal === 'disk' ? 'on disk (fdatasync before every ack)' : 'in memory'}:`);
  log(describe(run.saturation));
  if (run.halfLoad !== null) log(describe(run.halfLoad));
}
const anchorAfter = await nobleRecoverAnchor({
  windowMs: opts.anchorMs,
  rounds: opts.anchorRounds,
});
const noble = median([...anchorBefore.rounds, ...anchorAfter.rounds]);
log(
  `  anchor: noble ${anchorBefore.nobleVersion} secp256k1.recoverPublicKey, one thread: ${fmt(noble)}/s (${fmt(1e6 / noble)} us each); rounds ${[...anchorBefore.rounds, ...anchorAfter.rounds].map((x) => fmt(x)).join(', ')}`,
);
for (const run of runs) {
  const s = run.saturation;
  const line = `  ratio [${run.journal}] accepted orders/s / noble recover/s = ${(s.perSecond / noble).toFixed(3)}`;
  const lat =
    run.halfLoad === null
      ? ''
      : `; half-load p50 = ${(run.halfLoad.latencyMs.p50 / (1000 / noble)).toFixed(2)} x (1/R_noble), p99 = ${(run.halfLoad.latencyMs.p99 / (1000 / noble)).toFixed(2)} x`;
  log(line + lat);
}
const result = {
  bench: 'ws-orders',
  node: process.version,
  options: opts,
  anchor: { nobleRecoverPerSecond: noble, before: anchorBefore, after: anchorAfter },
  runs,
};
for (const run of runs) run.ratio = run.saturation.perSecond / noble;
if (opts.json) console.log(JSON.stringify(result));
const bad = runs.some(
  (r) =>
    r.saturation.acked !== r.saturation.sent ||
    (r.halfLoad !== null && r.halfLoad.acked !== r.halfLoad.sent),
);
if (bad) {
  console.error('some orders were not acknowledged (see ERRORS above)');
  process.exitCode = 1;
}
