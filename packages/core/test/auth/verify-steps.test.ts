/**
 * The verifier in steps (receive, prepare, recover, settle), as adapters use it to run the one
 * recovery elsewhere, agrees with {@link verifySignedPayload}; and the cases the retired
 * `signing` suite covered that the other auth tests did not: viem accepts the high-s twin that we
 * refuse, a different vault name, random keys for personal_sign both ways, and the auth API
 * reachable from the package index.
 */
import fc from 'fast-check';
import { hashMessage, recoverMessageAddress, recoverTypedDataAddress } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import {
  authenticateMessage,
  createSigningContext,
  DISCRIMINATOR,
  encodePayloadHex,
  isSignatureObject,
  matchSigner,
  nobleVerifier,
  personalMessageHash,
  prepareSignature,
  receivePayload,
  recoverSigner,
  SECP256K1_N,
  settleSignature,
  verifySignedPayload,
} from '../../src/auth/index.js';
import * as core from '../../src/index.js';
import { A, bytes, hex, RUNS, structFromMessage, testnet, typedData } from './fixtures.js';

const ACCOUNT = A.signer.toLowerCase();
const ORDER = A.structs.Order!;

/** verifySignedPayload, step by step. */
function stepwise(ctx: core.SigningContext, sig: unknown, payload: unknown, expected?: number) {
  const received = receivePayload(
    payload,
    expected === undefined ? undefined : { discriminator: expected },
  );
  if (!received.ok) return received;
  const pending = prepareSignature(ctx, received.value, sig);
  if (!pending.ok) return pending;
  const { digest, signature } = pending.value;
  return settleSignature(pending.value, recoverSigner(ctx.verifier, digest, signature));
}

describe('the verifier in steps', () => {
  const cases: [string, unknown, unknown, number | undefined][] = [
    ...Object.values(A.structs).map(
      (v) =>
        [`vector ${v.discriminator}`, v.sig, v.payload, Number(v.discriminator)] as [
          string,
          unknown,
          unknown,
          number,
        ],
    ),
    ['authenticate', A.authenticate.sig, A.authenticate.payload, DISCRIMINATOR.Authenticate],
    ['another endpoint', ORDER.sig, ORDER.payload, DISCRIMINATOR.Cancel],
    ['non-hex payload', ORDER.sig, '0xzz', undefined],
    ['non-string payload', ORDER.sig, 7, undefined],
    ['short signature', ORDER.sig.slice(0, 130), ORDER.payload, undefined],
    ['r recovers no key', `0x${'0'.repeat(63)}5${ORDER.sig.slice(66)}`, ORDER.payload, undefined],
    [
      'replayed under 0x07',
      A.structs.Withdrawal!.sig,
      `0x07${A.structs.Withdrawal!.payload.slice(4)}`,
      undefined,
    ],
  ];
  it.each(cases)('%s: same result as verifySignedPayload', (_, sig, payload, expected) => {
    const whole = verifySignedPayload(
      testnet,
      sig,
      payload,
      expected === undefined ? undefined : { discriminator: expected },
    );
    expect(stepwise(testnet, sig, payload, expected)).toEqual(whole);
  });

  it('receivePayload keeps the bytes the struct hash is taken from', () => {
    const r = receivePayload(ORDER.payload, { discriminator: DISCRIMINATOR.Order });
    if (!r.ok) throw new Error(r.error.message);
    expect(hex(r.value.bytes)).toBe(ORDER.payload);
    expect(r.value.payload.kind).toBe('Order');
  });

  it('prepareSignature: digest, struct hash and the claimed signer before any recovery', () => {
    const r = receivePayload(A.structs.Permit!.payload);
    if (!r.ok) throw new Error(r.error.message);
    const p = prepareSignature(testnet, r.value, A.structs.Permit!.sig);
    if (!p.ok) throw new Error(p.error.message);
    expect(hex(p.value.digest)).toBe(A.structs.Permit!.digest);
    expect(hex(p.value.structHash!)).toBe(A.structs.Permit!.structHash);
    expect(p.value.claimed).toBe(ACCOUNT);
    expect(p.value.claimedField).toBe('owner');
  });

  it('matchSigner: null is "does not recover", another address a mismatch naming the field', () => {
    const digest = bytes(ORDER.digest);
    const none = matchSigner(null, digest, ACCOUNT, 'account');
    expect(!none.ok && none.error.message).toBe(
      `INVALID_SIGNATURE: signature does not recover a public key (digest ${ORDER.digest})`,
    );
    const other = matchSigner(`0x${'1'.repeat(40)}`, digest, ACCOUNT, 'owner');
    expect(!other.ok && other.error.code).toBe(4001);
    expect(!other.ok && other.error.message).toContain(`does not match owner ${ACCOUNT}`);
    expect(matchSigner(ACCOUNT, digest, ACCOUNT, 'account')).toEqual({ ok: true, value: ACCOUNT });
  });

  it('recoverSigner turns a throwing backend into null', () => {
    const throwing = {
      recoverAddress(): string {
        throw new Error('no key');
      },
    };
    const sig = core.parseSignature(ORDER.sig);
    if (!sig.ok) throw new Error(sig.error.message);
    expect(recoverSigner(throwing, bytes(ORDER.digest), sig.value)).toBeNull();
    expect(recoverSigner(nobleVerifier, bytes(ORDER.digest), sig.value)).toBe(ACCOUNT);
  });

  it('isSignatureObject wants two strings in a plain object', () => {
    expect(isSignatureObject({ sig: '0x', payload: '0x' })).toBe(true);
    expect(isSignatureObject({ sig: '0x' })).toBe(false);
    expect(isSignatureObject({ sig: 1, payload: '0x' })).toBe(false);
    expect(isSignatureObject(['0x', '0x'])).toBe(false);
    expect(isSignatureObject(null)).toBe(false);
  });
});

describe('ported from the signing suite', () => {
  it('the package index exports the auth API', () => {
    expect(core.verifySignedPayload).toBe(verifySignedPayload);
    expect(core.createSigningContext).toBe(createSigningContext);
    expect(core.DISCRIMINATOR.Order).toBe(1);
  });

  it('high s (s -> n - s, v flipped): viem recovers the signer, we refuse with 4001', async () => {
    const r = ORDER.sig.slice(2, 66);
    const s = BigInt(`0x${ORDER.sig.slice(66, 130)}`);
    const v = Number.parseInt(ORDER.sig.slice(130), 16);
    const high = `0x${r}${(SECP256K1_N - s).toString(16).padStart(64, '0')}${(v === 27 ? 28 : 27).toString(16)}`;
    const order = structFromMessage('Order', ORDER.message);
    const viemSigner = await recoverTypedDataAddress({
      ...(typedData(A.vaultDomain, 'Order', order) as Parameters<
        typeof recoverTypedDataAddress
      >[0]),
      signature: high as `0x${string}`,
    });
    expect(viemSigner.toLowerCase()).toBe(ACCOUNT);
    const e = verifySignedPayload(testnet, high, ORDER.payload);
    expect(!e.ok && e.error.code).toBe(4001);
    expect(!e.ok && e.error.message).toMatch(/high s/);
  });

  it('another vault name is another domain: 4001', () => {
    const other = createSigningContext({
      network: 'testnet',
      vaultName: 'OtherVault',
      vaultAddress: A.vaultDomain.verifyingContract,
      tokenName: A.tokenDomain.name,
      tokenAddress: A.tokenDomain.verifyingContract,
    });
    const e = verifySignedPayload(other, ORDER.sig, ORDER.payload);
    expect(!e.ok && e.error.code).toBe(4001);
    // The token domain does not depend on the vault name: the permit still verifies.
    expect(verifySignedPayload(other, A.structs.Permit!.sig, A.structs.Permit!.payload).ok).toBe(
      true,
    );
  });

  it('random keys: viem signs authentication text, we verify; viem recovers it back', async () => {
    const keyArb = fc
      .uint8Array({ minLength: 32, maxLength: 32 })
      .filter((b) => b.some((x) => x !== 0) && BigInt(hex(b)) < SECP256K1_N);
    await fc.assert(
      fc.asyncProperty(
        keyArb,
        fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        async (key, nonce) => {
          const account = privateKeyToAccount(hex(key));
          const text = authenticateMessage(account.address, nonce);
          expect(hex(personalMessageHash(text))).toBe(hashMessage(text));
          const sig = await account.signMessage({ message: text });
          const payload = encodePayloadHex('Authenticate', {
            account: account.address.toLowerCase(),
            nonce,
            deadline: 0n,
          });
          const r = verifySignedPayload(testnet, sig, payload, {
            discriminator: DISCRIMINATOR.Authenticate,
          });
          expect(r.ok ? r.value.signer : r.error.message).toBe(account.address.toLowerCase());
          expect(
            (await recoverMessageAddress({ message: text, signature: sig })).toLowerCase(),
          ).toBe(account.address.toLowerCase());
        },
      ),
      { numRuns: Math.max(50, Math.floor(RUNS / 4)) },
    );
  });
});
