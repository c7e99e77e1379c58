/**
 * Native libsecp256k1 (the optional `secp256k1` package), the worker's noble recovery and core's
 * `nobleVerifier` give byte-identical answers: random keys and digests recover the same address;
 * random (r, s, v) (high s, r off the curve) recover the same address or fail on both; and whole
 * verifications, high-s and malformed signatures included, are refused identically.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import {
  createSigningContext,
  encodePayloadHex,
  nobleVerifier,
  type ParsedSignature,
  parseSignature,
  prepareSignature,
  publicKeyToAddress,
  receivePayload,
  recoverSigner,
  SECP256K1_N,
  type SignatureVerifier,
  verifySignedPayload,
} from '@perp/core';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { loadNativeVerifier, VerifyPool } from './pool.js';
import { JOB_BYTES, nobleRecovery, RESULT_BYTES, recoverBatch } from './recover-batch.mjs';

const RUNS = Number(process.env.FC_NUM_RUNS ?? 200);
const native = loadNativeVerifier();
const nativeIt = native === undefined ? it.skip : it;

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');
const word = (v: bigint): string => v.toString(16).padStart(64, '0');

/** The worker's code path (recover-batch.mjs with noble) as a SignatureVerifier. */
const workerNoble: SignatureVerifier = {
  recoverAddress(digest: Uint8Array, sig: ParsedSignature): string {
    const job = new Uint8Array(JOB_BYTES);
    job.set(digest, 0);
    job.set(Buffer.from(word(sig.r) + word(sig.s), 'hex'), 32);
    job[96] = sig.yParity;
    const out = recoverBatch(nobleRecovery, job, 1);
    if (out[0] !== 1) throw new Error('no key recovers');
    return `0x${hex(out.subarray(1, RESULT_BYTES))}`;
  },
};

const keyArb = fc
  .uint8Array({ minLength: 32, maxLength: 32 })
  .filter((b) => b.some((x) => x !== 0) && BigInt(`0x${hex(b)}`) < SECP256K1_N);
const digestArb = fc.uint8Array({ minLength: 32, maxLength: 32 });
const scalarArb = fc.bigInt({ min: 1n, max: SECP256K1_N - 1n });
/** Any signature our parser lets through the range checks, high s included. */
const rawSigArb = fc.record({
  r: scalarArb,
  s: scalarArb,
  yParity: fc.constantFrom(0 as const, 1 as const),
});

describe('recovery backends agree', () => {
  it('native binding status is reported (it ships linux-x64, darwin-arm64 and win32-x64 builds)', () => {
    // Not an assertion on the platform: the pool falls back to noble when this is undefined.
    expect(native === undefined || typeof native.recoverAddress === 'function').toBe(true);
  });

  it('worker noble path = core nobleVerifier on random keys and digests', () => {
    fc.assert(
      fc.property(keyArb, digestArb, (key, digest) => {
        const rec = secp256k1.sign(digest, key, { prehash: false, format: 'recovered' });
        const sig = parseSignature(
          `0x${hex(rec.subarray(1))}${(27 + (rec[0] as number)).toString(16)}`,
        );
        if (!sig.ok) throw new Error(sig.error.message);
        const address = nobleVerifier.recoverAddress(digest, sig.value);
        expect(address).toBe(publicKeyToAddress(secp256k1.getPublicKey(key, false)));
        expect(workerNoble.recoverAddress(digest, sig.value)).toBe(address);
      }),
      { numRuns: RUNS },
    );
  });

  nativeIt('native = noble on random keys and digests', () => {
    fc.assert(
      fc.property(keyArb, digestArb, (key, digest) => {
        const rec = secp256k1.sign(digest, key, { prehash: false, format: 'recovered' });
        const sig = parseSignature(
          `0x${hex(rec.subarray(1))}${(27 + (rec[0] as number)).toString(16)}`,
        );
        if (!sig.ok) throw new Error(sig.error.message);
        expect(native!.recoverAddress(digest, sig.value)).toBe(
          nobleVerifier.recoverAddress(digest, sig.value),
        );
      }),
      { numRuns: RUNS },
    );
  });

  it.each([
    ['worker noble', workerNoble],
    ...(native === undefined ? [] : [['native', native] as const]),
  ] as const)('%s = noble on random (r, s, v): same address or no key on both', (_, backend) => {
    fc.assert(
      fc.property(rawSigArb, digestArb, (sig, digest) => {
        expect(recoverSigner(backend, digest, sig)).toBe(recoverSigner(nobleVerifier, digest, sig));
      }),
      { numRuns: RUNS },
    );
  });

  it.each([
    ['worker noble', workerNoble],
    ...(native === undefined ? [] : [['native', native] as const]),
  ] as const)('%s: r = 5 (no point) fails on both', (_, backend) => {
    const sig = { r: 5n, s: 1n, yParity: 0 as const };
    const digest = new Uint8Array(32).fill(7);
    expect(recoverSigner(nobleVerifier, digest, sig)).toBeNull();
    expect(recoverSigner(backend, digest, sig)).toBeNull();
  });
});

describe('whole verifications are identical', () => {
  const settings = {
    vaultName: 'ExampleVault',
    vaultAddress: '0x5fbdb2315678afecb367f032d93f642f64180aa3',
    tokenName: 'USD Coin',
    tokenAddress: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512',
  };
  const noble = createSigningContext({ network: 'testnet', ...settings });
  const contexts = [
    ['worker noble', createSigningContext({ network: 'testnet', ...settings }, workerNoble)],
    ...(native === undefined
      ? []
      : [['native', createSigningContext({ network: 'testnet', ...settings }, native)] as const]),
  ] as const;

  /** A signed CancelAll by `key`, and ways to spoil its signature. */
  const caseArb = fc.record({
    key: keyArb,
    nonce: fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
    market: fc.integer({ min: 0, max: 2 ** 32 - 1 }),
    spoil: fc.constantFrom(
      'none',
      'high-s',
      'v-flip',
      'v=0/1',
      'short',
      'v=29',
      'r-garbage',
      'other-signer',
    ),
    garbage: scalarArb,
  });

  it.each(contexts)('%s refuses and accepts exactly as noble', (_, ctx) => {
    fc.assert(
      fc.property(caseArb, ({ key, nonce, market, spoil, garbage }) => {
        const account = publicKeyToAddress(secp256k1.getPublicKey(key, false));
        const payload = encodePayloadHex('CancelAll', { account, market, nonce, deadline: 1n });
        const received = receivePayload(payload);
        if (!received.ok) throw new Error(received.error.message);
        // Any well-formed signature yields the digest.
        const pending = prepareSignature(noble, received.value, `0x${word(1n)}${word(1n)}1b`);
        if (!pending.ok) throw new Error(pending.error.message);
        const digest = pending.value.digest;
        const rec = secp256k1.sign(digest, key, { prehash: false, format: 'recovered' });
        const r = BigInt(`0x${hex(rec.subarray(1, 33))}`);
        const s = BigInt(`0x${hex(rec.subarray(33, 65))}`);
        const v = 27 + (rec[0] as number);
        const sigOf: Record<typeof spoil, () => string> = {
          none: () => `0x${word(r)}${word(s)}${v.toString(16)}`,
          'high-s': () => `0x${word(r)}${word(SECP256K1_N - s)}${(55 - v).toString(16)}`,
          'v-flip': () => `0x${word(r)}${word(s)}${(55 - v).toString(16)}`,
          'v=0/1': () => `0x${word(r)}${word(s)}0${v - 27}`,
          short: () => `0x${word(r)}${word(s)}`,
          'v=29': () => `0x${word(r)}${word(s)}1d`,
          'r-garbage': () => `0x${word(garbage)}${word(s)}${v.toString(16)}`,
          'other-signer': () => {
            const o = secp256k1.sign(digest, new Uint8Array(32).fill(9), {
              prehash: false,
              format: 'recovered',
            });
            return `0x${hex(o.subarray(1))}${(27 + (o[0] as number)).toString(16)}`;
          },
        };
        const sig = sigOf[spoil]();
        const expected = verifySignedPayload(noble, sig, payload);
        expect(verifySignedPayload(ctx, sig, payload)).toEqual(expected);
        expect(expected.ok).toBe(spoil === 'none' || spoil === 'v=0/1');
      }),
      { numRuns: RUNS },
    );
  });
});

describe('the pool agrees with noble', () => {
  const pools: VerifyPool[] = [];
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.close()));
  });

  it.each(['noble', ...(native === undefined ? [] : ['native'])] as const)(
    '%s workers: random signatures, valid and forged, in concurrent batches',
    async (backend) => {
      const pool = new VerifyPool({ size: 2, backend: backend as 'native' | 'noble' });
      pools.push(pool);
      const cases = fc.sample(fc.tuple(rawSigArb, digestArb, keyArb, fc.boolean()), 300);
      const jobs = cases.map(([raw, digest, key, valid]) => {
        if (!valid) return { digest, sig: raw as ParsedSignature };
        const rec = secp256k1.sign(digest, key, { prehash: false, format: 'recovered' });
        const sig = parseSignature(
          `0x${hex(rec.subarray(1))}${(27 + (rec[0] as number)).toString(16)}`,
        );
        if (!sig.ok) throw new Error(sig.error.message);
        return { digest, sig: sig.value };
      });
      const got = await Promise.all(jobs.map((j) => pool.recover(j.digest, j.sig)));
      expect(got).toEqual(jobs.map((j) => recoverSigner(nobleVerifier, j.digest, j.sig)));
      expect(got.some((a) => a === null)).toBe(true);
    },
  );
});
