// Signature verification off the event loop (issue 6 item 5): signed verifications per second
// through the worker pool against single-thread @noble/curves recovery, measured in the same run.
//
//   node packages/adapters-node/bench/verify-pool.mjs        (after npx tsc -b)
//
//   VERIFY_BENCH_MS        timed window per configuration, ms (default 2000)
//   VERIFY_BENCH_WARMUP_MS warm-up per configuration, ms (default 500)
//   VERIFY_BENCH_WORKERS   comma-separated pool sizes (default 1..cores)
//   VERIFY_BENCH_INFLIGHT  verifications kept in flight (default 512)
//   --json                 print one JSON line instead of the table
//
// One "signed verification" is the venue's whole path for a signed Order: strict hex and payload
// decoding, signature form, EIP-712 digest (receivePayload, prepareSignature) on the main thread,
// the recovery on a worker, the signer comparison (settleSignature) back on the main thread. The
// anchor is the bare recovery the pool offloads, `nobleVerifier.recoverAddress` on the main
// thread, measured before and after the pool runs (their mean is the baseline).
//
// "per core" divides the pool's rate by (workers x anchor): 1.0 means each worker verifies as
// fast as one thread recovering with noble and nothing else. With the native backend it shows the
// libsecp256k1 speed-up on top. The main thread decodes, hashes and settles for all workers, so
// on a machine with no spare core the per-core ratio falls as workers compete with it.

import { availableParallelism } from 'node:os';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import {
  createSigningContext,
  encodePayloadHex,
  nobleVerifier,
  prepareSignature,
  publicKeyToAddress,
  receivePayload,
  settleSignature,
} from '@perp/core';
import { loadNativeVerifier, VerifyPool } from '../dist/verify/pool.js';

const WINDOW_MS = Number(process.env.VERIFY_BENCH_MS ?? 2000);
const WARMUP_MS = Number(process.env.VERIFY_BENCH_WARMUP_MS ?? 500);
const INFLIGHT = Number(process.env.VERIFY_BENCH_INFLIGHT ?? 512);
const CORES = availableParallelism();
const SIZES = (
  process.env.VERIFY_BENCH_WORKERS ?? Array.from({ length: CORES }, (_, i) => i + 1).join(',')
)
  .split(',')
  .map(Number);
const JSON_OUT = process.argv.includes('--json');

const ctx = createSigningContext({
  network: 'testnet',
  vaultName: 'ExampleVault',
  vaultAddress: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
  tokenName: 'USD Coin',
  tokenAddress: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
});

// 256 distinct signed Orders by 64 keys.
const DUMMY_SIG = `0x${'00'.repeat(31)}01${'00'.repeat(31)}011b`;
const requests = [];
for (let i = 0; i < 256; i++) {
  const key = new Uint8Array(32).fill((i % 64) + 1);
  const account = publicKeyToAddress(secp256k1.getPublicKey(key, false));
  const payload = encodePayloadHex('Order', {
    account,
    market: 1,
    isBuy: i % 2 === 0,
    orderType: 0,
    timeInForce: 0,
    price: 65_000n * 10n ** 18n + BigInt(i),
    triggerPrice: 0n,
    quantity: 1_000n + BigInt(i),
    flags: 0,
    expiry: 0n,
    cloid: `0x${i.toString(16).padStart(32, '0')}`,
    parentCloid: `0x${'0'.repeat(32)}`,
    nonce: 1_767_225_600_000n + BigInt(i),
    deadline: 1_767_229_200n,
  });
  const received = receivePayload(payload);
  const digest = prepareSignature(ctx, received.value, DUMMY_SIG).value.digest;
  const rec = secp256k1.sign(digest, key, { prehash: false, format: 'recovered' });
  const sig = `0x${Buffer.from(rec.subarray(1)).toString('hex')}${(27 + rec[0]).toString(16)}`;
  requests.push({ sig, payload, account });
}
const expectedOrder = { discriminator: 0x01 };

/** Bare noble recoveries per second on this thread over the same digests. */
function nobleAnchor(ms) {
  const prepared = requests.map(
    (r) => prepareSignature(ctx, receivePayload(r.payload, expectedOrder).value, r.sig).value,
  );
  const end = performance.now() + ms;
  let n = 0;
  const start = performance.now();
  while (performance.now() < end) {
    for (let k = 0; k < 8; k++) {
      const p = prepared[n % prepared.length];
      if (nobleVerifier.recoverAddress(p.digest, p.signature) !== p.claimed)
        throw new Error('anchor recovered a wrong signer');
      n++;
    }
  }
  return (n * 1000) / (performance.now() - start);
}

/** Full signed verifications per second through `pool`, INFLIGHT at a time. */
async function throughPool(pool, ms) {
  let next = 0;
  let done = 0;
  let stop = false;
  const one = async () => {
    while (!stop) {
      const r = requests[next++ % requests.length];
      const received = receivePayload(r.payload, expectedOrder);
      const pending = prepareSignature(ctx, received.value, r.sig);
      const signer = await pool.recover(pending.value.digest, pending.value.signature);
      const settled = settleSignature(pending.value, signer);
      if (!settled.ok || settled.value.signer !== r.account)
        throw new Error('pool verified a wrong signer');
      done++;
    }
  };
  const runners = Array.from({ length: INFLIGHT }, one);
  const start = performance.now();
  const startDone = done;
  await new Promise((r) => setTimeout(r, ms));
  const rate = ((done - startDone) * 1000) / (performance.now() - start);
  stop = true;
  await Promise.all(runners);
  return rate;
}

nobleAnchor(WARMUP_MS);
const anchorBefore = nobleAnchor(WINDOW_MS);
const backends = loadNativeVerifier() === undefined ? ['noble'] : ['noble', 'native'];
const rows = [];
for (const backend of backends) {
  for (const workers of SIZES) {
    const pool = new VerifyPool({ size: workers, backend });
    await throughPool(pool, WARMUP_MS);
    const rate = await throughPool(pool, WINDOW_MS);
    await pool.close();
    rows.push({ backend, workers, rate });
  }
}
const anchorAfter = nobleAnchor(WINDOW_MS);
const anchor = (anchorBefore + anchorAfter) / 2;
for (const r of rows) {
  r.ratioPerCore = r.rate / (r.workers * anchor);
  r.ratioTotal = r.rate / anchor;
}

if (JSON_OUT) {
  console.log(
    JSON.stringify({
      cores: CORES,
      anchor: { nobleRecoverPerSecond: anchor, before: anchorBefore, after: anchorAfter },
      rows,
    }),
  );
} else {
  const f = (x, d = 0) =>
    x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  console.log(
    `cores: ${CORES}; window ${WINDOW_MS} ms; ${INFLIGHT} in flight; node ${process.version}`,
  );
  console.log(
    `anchor: single-thread noble recover ${f(anchor)}/s (before ${f(anchorBefore)}, after ${f(anchorAfter)})`,
  );
  console.log('');
  console.log('| backend | workers | signed verifications/s | x anchor | x anchor per core |');
  console.log('|---|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(
      `| ${r.backend} | ${r.workers} | ${f(r.rate)} | ${f(r.ratioTotal, 2)} | ${f(r.ratioPerCore, 2)} |`,
    );
  }
}
