// Signed-payload verification throughput: `verifySignedPayload` on full Order payloads (hex and
// payload checks, two keccak-256 for the EIP-712 digest, signature checks, one public-key
// recovery, keccak for the address, signer comparison) against raw @noble/curves
// `secp256k1.recoverPublicKey` over the same digests and signatures. Same process, same run,
// alternating windows (the order flips every round), median of the rounds.
//
// Run after `npx tsc -b` (it imports the built `dist/`):
//   node packages/core/bench/auth/verify.bench.mjs
//
//   AUTH_BENCH_ROUNDS     timed windows per contender (default 7)
//   AUTH_BENCH_WINDOW_MS  length of one window in ms (default 1000)
//   AUTH_BENCH_WARMUP_MS  warm-up per contender before timing (default 1000)

import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import {
  createSigningContext,
  encodePayload,
  encodePayloadHex,
  publicKeyToAddress,
  structHash,
  typedDataDigest,
  verifySignedPayload,
} from '../../dist/auth/index.js';

const ROUNDS = Number(process.env.AUTH_BENCH_ROUNDS ?? 7);
const WINDOW_MS = Number(process.env.AUTH_BENCH_WINDOW_MS ?? 1000);
const WARMUP_MS = Number(process.env.AUTH_BENCH_WARMUP_MS ?? 1000);
const KEYS = 256;

const ctx = createSigningContext({
  network: 'testnet',
  vaultName: 'ExampleVault',
  vaultAddress: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
  tokenName: 'USD Coin',
  tokenAddress: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
});

const toHex = (bytes) => Buffer.from(bytes).toString('hex');
const expectedOrder = { discriminator: 0x01 };

// 256 distinct wallets, each with its own Order, digest and signature.
const cases = [];
for (let i = 0; i < KEYS; i++) {
  const secretKey = keccak_256(new TextEncoder().encode(`auth-bench-key-${i}`));
  const account = publicKeyToAddress(secp256k1.getPublicKey(secretKey, false));
  const order = {
    account,
    market: 1 + (i % 4),
    isBuy: i % 2 === 0,
    orderType: 0,
    timeInForce: 0,
    price: 65000500000000000000000n + BigInt(i) * 10n ** 18n,
    triggerPrice: 0n,
    quantity: 150000n + BigInt(i),
    flags: i % 16,
    expiry: 0n,
    cloid: `0x${(i + 1).toString(16).padStart(32, '0')}`,
    parentCloid: `0x${'00'.repeat(16)}`,
    nonce: 1767225600000n + BigInt(i),
    deadline: 1767225900n,
  };
  const digest = typedDataDigest(ctx.vaultSeparator, structHash(encodePayload('Order', order)));
  const recovered = secp256k1.sign(digest, secretKey, { prehash: false, format: 'recovered' });
  cases.push({
    account,
    payloadHex: encodePayloadHex('Order', order),
    // Ethereum wire form r || s || v; noble's recovered form is recid || r || s.
    sigHex: `0x${toHex(recovered.subarray(1))}${(27 + recovered[0]).toString(16)}`,
    digest,
    recovered,
    compressedKey: toHex(secp256k1.getPublicKey(secretKey, true)),
  });
}

// Both contenders must be right before either is timed.
for (const c of cases) {
  const r = verifySignedPayload(ctx, c.sigHex, c.payloadHex, expectedOrder);
  if (!r.ok || r.value.signer !== c.account) throw new Error(`verify failed: ${JSON.stringify(r)}`);
  if (toHex(r.value.digest) !== toHex(c.digest)) throw new Error('digest differs');
  const pub = secp256k1.recoverPublicKey(c.recovered, c.digest, { prehash: false });
  if (toHex(pub) !== c.compressedKey) throw new Error('noble recovery differs');
}

let sink = 0;
const contenders = {
  verifySignedPayload: (c) => {
    const r = verifySignedPayload(ctx, c.sigHex, c.payloadHex, expectedOrder);
    sink += r.ok ? r.value.signer.length : -1;
  },
  'noble recoverPublicKey': (c) => {
    sink += secp256k1.recoverPublicKey(c.recovered, c.digest, { prehash: false }).length;
  },
};

/** Operations per second of `op` over a window of `ms`, cycling through the 256 cases. */
function window(op, ms) {
  let n = 0;
  let i = 0;
  const start = performance.now();
  const end = start + ms;
  let now = start;
  while (now < end) {
    for (let k = 0; k < 16; k++) {
      op(cases[i]);
      i = (i + 1) & (KEYS - 1);
    }
    n += 16;
    now = performance.now();
  }
  return (n * 1000) / (now - start);
}

const names = Object.keys(contenders);
for (const name of names) window(contenders[name], WARMUP_MS);
const rates = Object.fromEntries(names.map((n) => [n, []]));
for (let r = 0; r < ROUNDS; r++) {
  const order = r % 2 === 0 ? names : [...names].reverse();
  for (const name of order) rates[name].push(window(contenders[name], WINDOW_MS));
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const ours = median(rates.verifySignedPayload);
const noble = median(rates['noble recoverPublicKey']);
const fmt = (x) => Math.round(x).toLocaleString('en-US');

console.log(
  `# Signed Order verification: ${KEYS} keys, ${ROUNDS} alternating rounds of ${WINDOW_MS} ms, Node ${process.version}`,
);
console.log(
  `verifySignedPayload (full Order)   ${fmt(ours)} verifications/s  (${(1e6 / ours).toFixed(0)} us each)`,
);
console.log(
  `noble recoverPublicKey (raw)       ${fmt(noble)} recoveries/s     (${(1e6 / noble).toFixed(0)} us each)`,
);
console.log(`ratio                              ${(ours / noble).toFixed(3)}x (target >= 0.9x)`);
console.log(
  `rounds: ours [${rates.verifySignedPayload.map(fmt).join(', ')}], noble [${rates['noble recoverPublicKey'].map(fmt).join(', ')}]`,
);
if (sink === 0) console.log('(sink)');
if (ours / noble < 0.9) process.exitCode = 1;
