/**
 * Verification runs ahead and in parallel, commands keep per-wallet arrival order: with a
 * recovery whose answers are released by the test, a slow first request of wallet A holds back
 * A's later (already verified) request, while wallet B's request reaches the engine at once. A
 * recovery that cannot run (a dead worker) is a retryable 5000 and does not block the wallet.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import {
  createEngineState,
  createSigningContext,
  encodePayloadHex,
  nobleVerifier,
  type ParsedSignature,
  prepareSignature,
  publicKeyToAddress,
  RateLimiter,
  receivePayload,
  WALLET_LIMITS,
} from '@perp/core';
import { describe, expect, it } from 'vitest';
import type { CommandInput, CommandResult } from '../engine/host.js';
import { WalletQueue } from '../engine/wallet-queue.js';
import { SignedRequests } from '../requests.js';
import type { VenueContext } from '../venue-context.js';
import { type SignatureRecovery, VerificationUnavailable } from './pool.js';

const NOW = 1_767_225_600_000;
const signing = createSigningContext({
  network: 'testnet',
  vaultName: 'ExampleVault',
  vaultAddress: '0x5fbdb2315678afecb367f032d93f642f64180aa3',
  tokenName: 'USD Coin',
  tokenAddress: '0xe7f1725e7734ce288f8367e1bb143e90bb3f0512',
});

const KEY_A = new Uint8Array(32).fill(0xa1);
const KEY_B = new Uint8Array(32).fill(0xb2);
const addressOf = (key: Uint8Array) => publicKeyToAddress(secp256k1.getPublicKey(key, false));

/** A signed CancelAll of `key` for `market` (the market tells the requests apart). */
function cancelAll(key: Uint8Array, market: number): { sig: string; payload: string } {
  const payload = encodePayloadHex('CancelAll', {
    account: addressOf(key),
    market,
    nonce: BigInt(NOW + market),
    deadline: BigInt(NOW / 1000 + 60),
  });
  const received = receivePayload(payload);
  if (!received.ok) throw new Error(received.error.message);
  const pending = prepareSignature(
    signing,
    received.value,
    `0x${'00'.repeat(31)}01${'00'.repeat(31)}011b`,
  );
  if (!pending.ok) throw new Error(pending.error.message);
  const rec = secp256k1.sign(pending.value.digest, key, { prehash: false, format: 'recovered' });
  const sig = `0x${Buffer.from(rec.subarray(1)).toString('hex')}${(27 + (rec[0] as number)).toString(16)}`;
  return { sig, payload };
}

/** A recovery whose answers the test releases one by one. */
class GatedRecovery implements SignatureRecovery {
  readonly backend = 'noble' as const;
  readonly workers = 1;
  readonly started: string[] = [];
  private readonly gates = new Map<string, (fail?: boolean) => void>();

  recover(digest: Uint8Array, signature: ParsedSignature): Promise<string | null> {
    const key = Buffer.from(digest).toString('hex');
    this.started.push(key);
    return new Promise((resolve, reject) => {
      this.gates.set(key, (fail) => {
        if (fail)
          reject(new VerificationUnavailable('a signature verification worker exited (code 1)'));
        else resolve(nobleVerifier.recoverAddress(digest, signature));
      });
    });
  }

  /** Releases the recovery of `digest`. */
  release(digest: Uint8Array, fail = false): void {
    const gate = this.gates.get(Buffer.from(digest).toString('hex'));
    if (gate === undefined) throw new Error('not started');
    gate(fail);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

function setup() {
  const submitted: CommandInput[] = [];
  const host = {
    state: createEngineState({}, NOW),
    now: () => NOW,
    submit: (command: CommandInput): Promise<CommandResult> => {
      submitted.push(command);
      return Promise.resolve({
        command,
        events: [],
        outcome: { ok: true, kind: 'cancelAll', cancelled: 0, seq: submitted.length },
        seq: submitted.length,
      } as unknown as CommandResult);
    },
  };
  const ctx = {
    host,
    walletLimiter: new RateLimiter(WALLET_LIMITS),
    rateNow: () => NOW,
    walletQueue: new WalletQueue(),
  } as unknown as VenueContext;
  const recovery = new GatedRecovery();
  const requests = new SignedRequests(ctx, signing, recovery);
  const digestOf = (s: { sig: string; payload: string }): Uint8Array => {
    const r = receivePayload(s.payload);
    if (!r.ok) throw new Error(r.error.message);
    const p = prepareSignature(signing, r.value, s.sig);
    if (!p.ok) throw new Error(p.error.message);
    return p.value.digest;
  };
  const markets = () =>
    submitted.map((c) => {
      const { account, market } = c as { account: string; market: number };
      return `${account === addressOf(KEY_A) ? 'A' : 'B'}${market}`;
    });
  return { requests, recovery, digestOf, markets };
}

const settle = () => new Promise((r) => setTimeout(r, 5));

describe('per-wallet order with verification ahead', () => {
  it("a slow first request of A holds back A's second; B goes through", async () => {
    const { requests, recovery, digestOf, markets } = setup();
    const a1 = cancelAll(KEY_A, 1);
    const a2 = cancelAll(KEY_A, 2);
    const b1 = cancelAll(KEY_B, 3);
    const results = [a1, a2, b1].map((s) => requests.handle(s, { allowed: ['CancelAll'] }));
    // All three recoveries started at arrival, none waits for another.
    expect(recovery.started).toHaveLength(3);
    recovery.release(digestOf(a2));
    recovery.release(digestOf(b1));
    await settle();
    expect(markets()).toEqual(['B3']);
    recovery.release(digestOf(a1));
    const done = await Promise.all(results);
    expect(done.map((r) => r.ok)).toEqual([true, true, true]);
    expect(markets()).toEqual(['B3', 'A1', 'A2']);
  });

  it('many requests per wallet, answers released in reverse: each wallet keeps arrival order', async () => {
    const { requests, recovery, digestOf, markets } = setup();
    const sent = [1, 2, 3, 4, 5].flatMap((m) => [cancelAll(KEY_A, m), cancelAll(KEY_B, 10 + m)]);
    const results = sent.map((s) => requests.handle(s, { allowed: ['CancelAll'] }));
    for (const s of [...sent].reverse()) recovery.release(digestOf(s));
    await Promise.all(results);
    const order = markets();
    expect(order.filter((m) => m.startsWith('A'))).toEqual(['A1', 'A2', 'A3', 'A4', 'A5']);
    expect(order.filter((m) => m.startsWith('B'))).toEqual(['B11', 'B12', 'B13', 'B14', 'B15']);
  });

  it('a recovery that cannot run is a retryable 5000 and the wallet moves on', async () => {
    const { requests, recovery, digestOf, markets } = setup();
    const a1 = cancelAll(KEY_A, 1);
    const a2 = cancelAll(KEY_A, 2);
    const r1 = requests.handle(a1, { allowed: ['CancelAll'] });
    const r2 = requests.handle(a2, { allowed: ['CancelAll'] });
    recovery.release(digestOf(a2));
    recovery.release(digestOf(a1), true);
    const [first, second] = await Promise.all([r1, r2]);
    expect(first.ok).toBe(false);
    if (!first.ok) {
      expect(first.code).toBe(5000);
      expect(first.message).toMatch(
        /^INTERNAL_ERROR: signature verification failed \(a signature verification worker exited/,
      );
    }
    expect(second.ok).toBe(true);
    expect(markets()).toEqual(['A2']);
  });

  it('a forged signature is still a 4001 and consumes nothing', async () => {
    const { requests, recovery, digestOf, markets } = setup();
    const a1 = cancelAll(KEY_A, 1);
    const forged = { ...a1, sig: cancelAll(KEY_B, 1).sig };
    const r = requests.handle(forged, { allowed: ['CancelAll'] });
    recovery.release(digestOf(forged));
    const done = await r;
    expect(!done.ok && done.code).toBe(4001);
    expect(markets()).toEqual([]);
  });
});
