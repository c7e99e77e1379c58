/**
 * Hostile signatures give the same answer on every backend: core's `nobleVerifier`, native
 * libsecp256k1 inline, and the pool's workers (noble and native). Below the parser (which refuses
 * most of these first) the recovery itself must still agree: r or s = 0, r or s >= n, high s, a
 * recovery to the point at infinity, an r that is no point's x, recovery ids 2 and 3 (x = r + n),
 * digests 0, n and 2^256 - 1. Above it, every v byte 0..255 and every length is refused or
 * accepted identically by whole verifications on the pool and inline. A pool asked for native
 * whose worker cannot load the binding answers with noble, identically.
 */

import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import {
  createSigningContext,
  encodePayloadHex,
  nobleVerifier,
  type ParsedSignature,
  prepareSignature,
  publicKeyToAddress,
  receivePayload,
  recoverSigner,
  SECP256K1_HALF_N,
  SECP256K1_N,
  settleSignature,
  verifySignedPayload,
} from '@perp/core';
import { afterAll, describe, expect, it } from 'vitest';
import {
  createSignatureRecovery,
  loadNativeVerifier,
  RECOVER_WORKER_URL,
  type SignatureRecovery,
  VerifyPool,
} from '../src/verify/pool.js';

const N = SECP256K1_N;
const P = secp256k1.Point.CURVE().p;
const G = secp256k1.Point.BASE;
const native = loadNativeVerifier();
const word = (v: bigint): string => v.toString(16).padStart(64, '0');
const bytes32 = (v: bigint): Uint8Array => Uint8Array.from(Buffer.from(word(v), 'hex'));

/** Digest e and signature (r, s, parity) whose recovery is the point at infinity: s R = e G. */
function infinityCase(e: bigint): { digest: Uint8Array; sig: ParsedSignature } {
  const R = G.multiply(e);
  const { x, y } = R.toAffine();
  return { digest: bytes32(e), sig: { r: x, s: 1n, yParity: Number(y & 1n) as 0 | 1 } };
}

/** An x in [1, n-1] that is not the x-coordinate of any curve point. */
function notOnCurve(): bigint {
  for (let x = 5n; ; x++) {
    try {
      secp256k1.Point.fromHex(`02${word(x)}`);
    } catch {
      return x;
    }
  }
}

/** A valid low-s signature of `digest` by a fixed key. */
function valid(digest: Uint8Array): ParsedSignature {
  const rec = secp256k1.sign(digest, new Uint8Array(32).fill(3), {
    prehash: false,
    format: 'recovered',
  });
  const r = BigInt(`0x${Buffer.from(rec.subarray(1, 33)).toString('hex')}`);
  const s = BigInt(`0x${Buffer.from(rec.subarray(33, 65)).toString('hex')}`);
  return { r, s, yParity: rec[0] as 0 | 1 };
}

const d7 = new Uint8Array(32).fill(7);
const ok = valid(d7);
/** Raw recoveries below the parser. yParity 2 and 3 are typed out but a worker byte holds them. */
const RAW: [string, Uint8Array, ParsedSignature][] = [
  ['valid', d7, ok],
  ['valid, other parity', d7, { ...ok, yParity: (1 - ok.yParity) as 0 | 1 }],
  [
    'high s (n - s, parity flipped)',
    d7,
    { ...ok, s: N - ok.s, yParity: (1 - ok.yParity) as 0 | 1 },
  ],
  ['high s = n - 1', d7, { ...ok, s: N - 1n }],
  ['s = n/2 + 1', d7, { ...ok, s: SECP256K1_HALF_N + 1n }],
  ['r = 0', d7, { ...ok, r: 0n }],
  ['s = 0', d7, { ...ok, s: 0n }],
  ['r = n', d7, { ...ok, r: N }],
  ['s = n', d7, { ...ok, s: N }],
  ['r = n + 1', d7, { ...ok, r: N + 1n }],
  ['r = p - 1', d7, { ...ok, r: P - 1n }],
  ['r = 2^256 - 1', d7, { ...ok, r: (1n << 256n) - 1n }],
  ['s = 2^256 - 1', d7, { ...ok, s: (1n << 256n) - 1n }],
  ['r not on curve', d7, { ...ok, r: notOnCurve() }],
  ['r = 1', d7, { ...ok, r: 1n }],
  ['infinity e=1', infinityCase(1n).digest, infinityCase(1n).sig],
  ['infinity e=12345', infinityCase(12345n).digest, infinityCase(12345n).sig],
  ['digest 0', bytes32(0n), valid(bytes32(0n))],
  ['digest n (= 0 mod n), signed over 0', bytes32(N), valid(bytes32(0n))],
  ['digest 2^256-1', bytes32((1n << 256n) - 1n), valid(bytes32((1n << 256n) - 1n))],
  ['recid 2, small r', d7, { r: 3n, s: 5n, yParity: 2 as 0 | 1 }],
  ['recid 3, small r', d7, { r: 7n, s: 5n, yParity: 3 as 0 | 1 }],
  ['recid 2, large r (x = r + n >= p)', d7, { ...ok, yParity: 2 as 0 | 1 }],
  ['recid 4', d7, { ...ok, yParity: 4 as 0 | 1 }],
  ['recid 27', d7, { ...ok, yParity: 27 as 0 | 1 }],
];

const pools: SignatureRecovery[] = [];
afterAll(async () => {
  await Promise.all(pools.map((p) => p.close()));
});

const backends: (readonly [
  string,
  (d: Uint8Array, s: ParsedSignature) => Promise<string | null>,
])[] = [
  [
    'noble workers',
    (() => {
      const p = new VerifyPool({ size: 1, backend: 'noble' });
      pools.push(p);
      return (d: Uint8Array, s: ParsedSignature) => p.recover(d, s);
    })(),
  ],
  ...(native === undefined
    ? []
    : ([
        ['native inline', async (d: Uint8Array, s: ParsedSignature) => recoverSigner(native, d, s)],
        [
          'native workers',
          (() => {
            const p = new VerifyPool({ size: 1, backend: 'native' });
            pools.push(p);
            return (d: Uint8Array, s: ParsedSignature) => p.recover(d, s);
          })(),
        ],
      ] as const)),
  [
    // A pool asked for native whose worker cannot load the binding falls back to noble.
    'native workers without the binding',
    (() => {
      const hide = join(tmpdir(), `verify-hide-native-${process.pid}.cjs`);
      writeFileSync(
        hide,
        `const M = require('node:module'); const load = M._load;
         M._load = function (request, ...rest) {
           if (request === 'secp256k1/bindings') throw new Error('no native binding here');
           return load.call(this, request, ...rest);
         };`,
      );
      const p = new VerifyPool({
        size: 1,
        backend: 'native',
        spawn: (workerData) =>
          new Worker(RECOVER_WORKER_URL, { workerData, execArgv: ['--require', hide] }),
      });
      pools.push(p);
      return (d: Uint8Array, s: ParsedSignature) => p.recover(d, s);
    })(),
  ],
];

describe('raw recovery on hostile inputs', () => {
  // The package ships a linux-x64 prebuild: there, the native differential must not be skipped.
  it.runIf(process.platform === 'linux' && process.arch === 'x64')(
    'the native binding loads on linux-x64',
    () => {
      expect(native).toBeDefined();
    },
  );

  it.each(backends)('%s = noble', async (_, recover) => {
    const expected = RAW.map(([name, d, s]) => [name, recoverSigner(nobleVerifier, d, s)]);
    const got = [];
    for (const [name, d, s] of RAW)
      got.push([name, await recover(d, s).catch((e) => `threw ${e}`)]);
    expect(got).toEqual(expected);
    // Sanity: the cases mean what they say.
    const byName = Object.fromEntries(expected);
    expect(byName.valid).toBe(
      publicKeyToAddress(secp256k1.getPublicKey(new Uint8Array(32).fill(3), false)),
    );
    expect(byName['infinity e=1']).toBeNull();
    expect(byName['r = 0']).toBeNull();
    expect(byName['r = n']).toBeNull();
  });

  it('noble and native agree on many random recid-2/3 and infinity cases', async () => {
    if (native === undefined) return;
    for (let i = 1n; i < 200n; i++) {
      const inf = infinityCase(i * 7919n);
      expect(recoverSigner(native, inf.digest, inf.sig)).toBe(
        recoverSigner(nobleVerifier, inf.digest, inf.sig),
      );
      const hi = { r: i, s: i + 1n, yParity: (2 + Number(i & 1n)) as 0 | 1 };
      expect(recoverSigner(native, d7, hi)).toBe(recoverSigner(nobleVerifier, d7, hi));
    }
  });
});

describe('whole verifications: every v byte and length, pool vs inline', () => {
  const settings = {
    network: 'testnet' as const,
    vaultName: 'ExampleVault',
    vaultAddress: '0x5fbdb2315678afecb367f032d93f642f64180aa3',
    tokenName: 'USD Coin',
    tokenAddress: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512',
  };
  const noble = createSigningContext(settings);
  const key = new Uint8Array(32).fill(3);
  const account = publicKeyToAddress(secp256k1.getPublicKey(key, false));
  const payload = encodePayloadHex('CancelAll', { account, market: 0, nonce: 1n, deadline: 1n });
  const received = receivePayload(payload);
  if (!received.ok) throw new Error(received.error.message);
  const pending = prepareSignature(noble, received.value, `0x${word(1n)}${word(1n)}1b`);
  if (!pending.ok) throw new Error(pending.error.message);
  const sig = valid(pending.value.digest);
  const rs = `${word(sig.r)}${word(sig.s)}`;
  const vHex = (27 + sig.yParity).toString(16);
  const sigs: string[] = [];
  for (let v = 0; v < 256; v++) sigs.push(`0x${rs}${v.toString(16).padStart(2, '0')}`);
  sigs.push(
    `0x${rs}`,
    `0x${rs}1b00`,
    `0x${rs}1`,
    `0x${word(sig.r)}${word(N - sig.s)}${(28 - sig.yParity).toString(16)}`,
    `0x${word(0n)}${word(sig.s)}1b`,
    `0x${word(sig.r)}${word(0n)}1b`,
    `0x${word(N)}${word(sig.s)}1b`,
    `0x${word(sig.r)}${word(N)}1b`,
    `0x${word(notOnCurve())}${word(sig.s)}1b`,
    '',
    '0x',
    `${rs}1b`,
    `0X${rs}${vHex}`,
    `0x${rs.toUpperCase()}${vHex.toUpperCase()}`,
  );

  it.each(['noble', ...(native === undefined ? [] : ['native' as const])] as const)(
    '%s pool (and inline with 0 workers) = noble inline',
    async (backend) => {
      for (const workers of [0, 1]) {
        const recovery = createSignatureRecovery({ workers, backend });
        pools.push(recovery);
        expect(recovery.backend).toBe(backend);
        for (const s of sigs) {
          const expected = verifySignedPayload(noble, s, payload);
          const p = prepareSignature(noble, received.value, s);
          const got = p.ok
            ? settleSignature(p.value, await recovery.recover(p.value.digest, p.value.signature))
            : p;
          expect({ s, got }).toEqual({ s, got: expected });
        }
        // Of the v bytes, exactly the right parity as 0/1 and as 27/28 verifies.
        const accepted = sigs.filter((s) => verifySignedPayload(noble, s, payload).ok);
        expect(accepted.map((s) => s.slice(130).toLowerCase())).toEqual([
          `0${sig.yParity}`,
          vHex,
          vHex,
        ]);
      }
    },
  );
});
