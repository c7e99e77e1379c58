/**
 * The hot-path verifier: every Appendix A vector verifies with its structHash and digest; the
 * negative chain-143 vector; every forged, replayed, misdirected or malformed request refused
 * with its exact code, the cheap checks before any ECDSA work; and the engine's deadline and
 * permit helpers at their boundaries.
 */
import { privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import {
  checkDeadline,
  checkPermit,
  DISCRIMINATOR,
  encodePayloadHex,
  nobleVerifier,
  type ParsedSignature,
  SECP256K1_N,
  type SignatureVerifier,
  type SigningContext,
  type StructKind,
  type StructTypes,
  verifySignedPayload,
} from '../../src/auth/index.js';
import {
  A,
  bytes,
  hex,
  mainnet,
  structFromMessage,
  structOf,
  testnet,
  typedData,
  VECTOR_KINDS,
  withByte,
  withWord,
} from './fixtures.js';

const signer = privateKeyToAccount(A.privateKey);
const other = privateKeyToAccount(
  '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
);
const ACCOUNT = A.signer.toLowerCase();
const ORDER = A.structs.Order!;

function refusal(r: ReturnType<typeof verifySignedPayload>) {
  if (r.ok) throw new Error('expected a refusal');
  return r.error;
}

/** A context whose verifier counts recoveries, to prove cheap refusals do no ECDSA work. */
function counting(): { ctx: SigningContext; calls: () => number } {
  let n = 0;
  const verifier: SignatureVerifier = {
    recoverAddress(digest: Uint8Array, sig: ParsedSignature) {
      n++;
      return nobleVerifier.recoverAddress(digest, sig);
    },
  };
  return { ctx: { ...testnet, verifier }, calls: () => n };
}

describe('Appendix A vectors verify', () => {
  it.each(VECTOR_KINDS)('%s', (kind) => {
    const v = A.structs[kind]!;
    const r = verifySignedPayload(testnet, v.sig, v.payload, {
      discriminator: Number(v.discriminator),
    });
    if (!r.ok) throw new Error(r.error.message);
    expect(r.value.signer).toBe(ACCOUNT);
    expect(hex(r.value.structHash!)).toBe(v.structHash);
    expect(hex(r.value.digest)).toBe(v.digest);
    expect(r.value.payload).toEqual({ kind, struct: structFromMessage(kind, v.message) });
  });

  it('Authenticate: personal_sign over the rebuilt text, no structHash', () => {
    const r = verifySignedPayload(testnet, A.authenticate.sig, A.authenticate.payload, {
      discriminator: DISCRIMINATOR.Authenticate,
    });
    if (!r.ok) throw new Error(r.error.message);
    expect(r.value.signer).toBe(ACCOUNT);
    expect(r.value.structHash).toBeNull();
    expect(hex(r.value.digest)).toBe(A.authenticate.eip191Hash);
    expect(structOf(r.value.payload, 'Authenticate')).toEqual({
      account: ACCOUNT,
      nonce: 1767225600000n,
      deadline: 1767225900n,
    });
  });

  it('negative vector: the Order signature under chain 143 recovers 0x7cB1..., refused 4001', () => {
    const r = refusal(verifySignedPayload(mainnet, ORDER.sig, ORDER.payload));
    expect(r).toEqual({
      code: 4001,
      message:
        'INVALID_SIGNATURE: signer 0x7cb16169d3c7b0acbb44b0e9fa08ecc8f9bcf8a5 does not match account ' +
        `${ACCOUNT} (server digest 0xadf0552b69171ce7259985af4fcfc0612d621b0e8f40abbd2dcd330d0de63b03; ` +
        'check the domain, chain id, struct type and field values)',
    });
  });
});

async function signUnder<K extends StructKind>(
  domain: { name: string; version: string; chainId: number; verifyingContract: string },
  kind: K,
  struct: StructTypes[K],
  by = signer,
) {
  return by.signTypedData(
    typedData(domain, kind, struct) as Parameters<typeof by.signTypedData>[0],
  );
}

describe('domain binding (4001)', () => {
  const withdrawal = structFromMessage('Withdrawal', A.structs.Withdrawal!.message);
  const permit = structFromMessage('Permit', A.structs.Permit!.message);
  const wPayload = A.structs.Withdrawal!.payload;
  const pPayload = A.structs.Permit!.payload;

  it('a signature for another chain id', async () => {
    const sig = await signUnder({ ...A.vaultDomain, chainId: 143 }, 'Withdrawal', withdrawal);
    expect(verifySignedPayload(mainnet, sig, wPayload).ok).toBe(true);
    expect(refusal(verifySignedPayload(testnet, sig, wPayload)).code).toBe(4001);
  });

  it('a vault struct signed under the token domain, and a permit under the vault domain', async () => {
    const w = await signUnder(A.tokenDomain, 'Withdrawal', withdrawal);
    expect(refusal(verifySignedPayload(testnet, w, wPayload)).message).toContain(
      'does not match owner',
    );
    const p = await signUnder(A.vaultDomain, 'Permit', permit);
    expect(refusal(verifySignedPayload(testnet, p, pPayload)).code).toBe(4001);
  });

  it('another verifyingContract', async () => {
    const sig = await signUnder(
      { ...A.vaultDomain, verifyingContract: A.tokenDomain.verifyingContract },
      'Withdrawal',
      withdrawal,
    );
    expect(refusal(verifySignedPayload(testnet, sig, wPayload)).code).toBe(4001);
  });

  it('token domain version "2" on testnet (mainnet\'s version)', async () => {
    const sig = await signUnder({ ...A.tokenDomain, version: '2' }, 'Permit', permit);
    expect(refusal(verifySignedPayload(testnet, sig, pPayload)).code).toBe(4001);
    expect(verifySignedPayload(testnet, A.structs.Permit!.sig, pPayload).ok).toBe(true);
  });
});

describe('signature form (4001)', () => {
  const R = ORDER.sig.slice(2, 66);
  const S = BigInt(`0x${ORDER.sig.slice(66, 130)}`);
  const withV = (v: string) => `${ORDER.sig.slice(0, 130)}${v}`;

  it.each([
    [
      'high s with v flipped',
      `0x${R}${(SECP256K1_N - S).toString(16).padStart(64, '0')}1b`,
      'high s',
    ],
    ['the 64-byte compact form', ORDER.sig.slice(0, 130), 'signature must be 65 bytes'],
    ['v = 29', withV('1d'), 'signature v must be 27, 28, 0 or 1, got 29'],
    ['v = 37', withV('25'), 'got 37'],
    ['66 bytes', `${ORDER.sig}00`, 'got 66'],
    ['odd-length hex', `${ORDER.sig}0`, 'odd number of hex digits'],
    ['non-hex', `${ORDER.sig.slice(0, -1)}x`, 'non-hex character'],
    // viem's isHex: a lowercase 0x prefix only.
    ['an upper-case 0X prefix', `0X${ORDER.sig.slice(2)}`, 'signature must start with 0x'],
    // ':' is the code unit after '9'; the offset names the bad digit, low nibble included.
    [
      'a colon digit',
      `${ORDER.sig.slice(0, -1)}:`,
      'signature has a non-hex character at offset 131',
    ],
    [
      'a colon high nibble',
      `0x:${ORDER.sig.slice(3)}`,
      'signature has a non-hex character at offset 2',
    ],
    ['a backquote digit', `${ORDER.sig.slice(0, -1)}\``, 'non-hex character at offset 131'],
    ['a G digit', `${ORDER.sig.slice(0, -1)}G`, 'non-hex character at offset 131'],
  ])('%s', (_, sig, message) => {
    const { ctx, calls } = counting();
    const e = refusal(verifySignedPayload(ctx, sig, ORDER.payload));
    expect(e.code).toBe(4001);
    expect(e.message).toContain(message);
    expect(calls()).toBe(0);
  });

  it('v = 0/1 is accepted like 27/28', () => {
    expect(verifySignedPayload(testnet, `${ORDER.sig.slice(0, 130)}01`, ORDER.payload).ok).toBe(
      true,
    );
  });

  it('an r that recovers no key', () => {
    // r = 5 is not the x-coordinate of a secp256k1 point; recovery throws and maps to 4001.
    const sig = `0x${'0'.repeat(63)}5${ORDER.sig.slice(66)}`;
    const e = refusal(verifySignedPayload(testnet, sig, ORDER.payload));
    expect(e.message).toBe(
      `INVALID_SIGNATURE: signature does not recover a public key (digest ${ORDER.digest})`,
    );
  });
});

describe('payload checks come first (4000, no ECDSA work)', () => {
  it.each([
    ['odd-length hex', `${ORDER.payload}0`, 'payload has an odd number of hex digits'],
    ['non-hex', `${ORDER.payload.slice(0, -1)}g`, 'payload has a non-hex character'],
    [
      'a truncated payload',
      ORDER.payload.slice(0, -2),
      'bad payload length: expected 449 bytes, got 448',
    ],
    ['a padded payload', `${ORDER.payload}00`, 'bad payload length: expected 449 bytes, got 450'],
    ['a dirty address word', withByte(ORDER.payload, 5, 0xff), 'Order.account (word 1)'],
    ['a bool word of 2', withWord(ORDER.payload, 3, 2n), 'Order.isBuy (word 3): bool'],
    [
      'a uint32 overflow',
      withWord(ORDER.payload, 2, 1n << 32n),
      'Order.market (word 2): uint32 overflow',
    ],
    ['an unused flag bit', withWord(ORDER.payload, 9, 1n << 4n), 'Order.flags: unused flag bits'],
    ['discriminator 0x00', withByte(ORDER.payload, 0, 0), 'payload discriminator 0x00 is reserved'],
    ['discriminator 0x0c', withByte(ORDER.payload, 0, 0x0c), 'unknown payload discriminator 0x0c'],
  ])('%s', (_, payload, message) => {
    const { ctx, calls } = counting();
    // Even with a broken signature too, the payload is judged first.
    for (const sig of [ORDER.sig, '0x1234']) {
      const e = refusal(verifySignedPayload(ctx, sig, payload));
      expect(e.code).toBe(4000);
      expect(e.message).toContain(message);
    }
    expect(calls()).toBe(0);
  });

  it('a payload for another endpoint (expected discriminator mismatch)', () => {
    const { ctx, calls } = counting();
    const e = refusal(
      verifySignedPayload(ctx, ORDER.sig, A.structs.UpdateLeverage!.payload, {
        discriminator: DISCRIMINATOR.Withdrawal,
      }),
    );
    expect(e).toEqual({
      code: 4000,
      message:
        'INVALID_REQUEST: payload 0x04 (UpdateLeverage) is not accepted here; expected 0x03 (Withdrawal)',
    });
    expect(calls()).toBe(0);
  });

  it('a valid request costs exactly one recovery', () => {
    const { ctx, calls } = counting();
    expect(verifySignedPayload(ctx, ORDER.sig, ORDER.payload).ok).toBe(true);
    expect(calls()).toBe(1);
  });
});

describe('signer binding (4001)', () => {
  it('a struct whose account is not the signer', async () => {
    const order = structFromMessage('Order', ORDER.message);
    const sig = await signUnder(A.vaultDomain, 'Order', order, other);
    const e = refusal(verifySignedPayload(testnet, sig, ORDER.payload));
    expect(e.code).toBe(4001);
    expect(e.message).toBe(
      `INVALID_SIGNATURE: signer ${other.address.toLowerCase()} does not match account ${ACCOUNT} ` +
        `(server digest ${ORDER.digest}; check the domain, chain id, struct type and field values)`,
    );
  });

  it('the same struct with the other key as account verifies as that key', async () => {
    const order = { ...structFromMessage('Order', ORDER.message), account: other.address };
    const sig = await signUnder(A.vaultDomain, 'Order', order, other);
    const r = verifySignedPayload(testnet, sig, encodePayloadHex('Order', order));
    expect(r.ok && r.value.signer).toBe(other.address.toLowerCase());
  });

  it.each([
    ['Withdrawal', 0x07],
    ['Withdrawal', 0x08],
    ['Deposit', 0x03],
    ['MarginTransfer', 0x07],
  ] as const)(
    'a %s signature replayed with the discriminator changed to 0x%s (same layout)',
    (kind, to) => {
      const v = A.structs[kind]!;
      const replay = withByte(v.payload, 0, to);
      expect(verifySignedPayload(testnet, v.sig, replay).ok === false).toBe(true);
      const e = refusal(verifySignedPayload(testnet, v.sig, replay));
      expect(e.code).toBe(4001);
      expect(e.message).toMatch(/^INVALID_SIGNATURE: signer 0x[0-9a-f]{40} does not match owner/);
    },
  );

  it('Authenticate: a changed nonce no longer matches the signed text', () => {
    const p = withWord(A.authenticate.payload, 2, 1767225600001n);
    const r = refusal(verifySignedPayload(testnet, A.authenticate.sig, p));
    expect(r.code).toBe(4001);
    // The hint names the personal_sign text, not an EIP-712 domain it does not have.
    expect(r.message).toMatch(/personal_sign of "<lowercase account>:<nonce>"/);
  });

  it('Authenticate: the deadline word is not signed (only checked to be a uint64)', () => {
    const p = withWord(A.authenticate.payload, 3, 1767225999n);
    expect(verifySignedPayload(testnet, A.authenticate.sig, p).ok).toBe(true);
    const bad = withWord(A.authenticate.payload, 3, 1n << 64n);
    expect(refusal(verifySignedPayload(testnet, A.authenticate.sig, bad)).code).toBe(4000);
  });
});

describe('checkDeadline', () => {
  const now = 1767225600000; // ms
  it.each([
    [
      1767225600n,
      now,
      4002,
      'INVALID_NONCE: deadline passed: 1767225600 s is not after 1767225600000 ms',
    ],
    [1767225599n, now, 4002, 'deadline passed'],
    [1767225601n, now, undefined, undefined],
    [1767229200n, now, undefined, undefined],
    [1767229201n, now, 4000, 'INVALID_REQUEST: deadline too far in the future'],
    // A millisecond clock between whole seconds.
    [1767225600n, now + 500, 4002, 'deadline passed'],
    [1767225601n, now + 500, undefined, undefined],
    [1767229200n, now + 500, undefined, undefined],
    [1767229201n, now + 500, 4000, 'deadline too far in the future'],
  ])('deadline %s s at %s ms', (deadline, nowMs, code, message) => {
    const r = checkDeadline(deadline, nowMs);
    expect(r?.code).toBe(code);
    if (message !== undefined) expect(r?.message).toContain(message);
  });

  it('a time that is not integer milliseconds is a bug, not a rejection', () => {
    expect(() => checkDeadline(1n, Number.NaN)).toThrow();
    expect(() => checkDeadline(1n, 1.5)).toThrow();
    expect(() => checkDeadline(1n, -1)).toThrow('time must be integer ms, got -1');
  });
});

describe('checkPermit', () => {
  const permit = structFromMessage('Permit', A.structs.Permit!.message);
  const ok = {
    vault: A.vaultDomain.verifyingContract, // checksummed: compared case-insensitively
    amount: 100000000n,
    tokenNonce: 0n,
    nowMs: 1767225600000,
    owner: A.signer,
  };

  it('accepts the Appendix A permit for its deposit', () => {
    expect(checkPermit(permit, ok)).toBeUndefined();
    expect(checkPermit(permit, { ...ok, amount: 99999999n })).toBeUndefined();
    const { owner: _, ...withoutOwner } = ok;
    expect(checkPermit(permit, withoutOwner)).toBeUndefined();
  });

  it.each([
    [{ vault: A.tokenDomain.verifyingContract }, 4000, 'permit spender'],
    [
      { amount: 100000001n },
      4000,
      'permit value 100000000 is less than the deposit amount 100000001',
    ],
    [{ tokenNonce: 1n }, 4000, 'permit nonce 0 is not the current token nonce 1'],
    [{ owner: other.address }, 4000, 'permit owner'],
    [{ nowMs: 1767225900000 }, 4002, 'permit deadline passed'],
  ] as const)('refuses %o', (patch, code, message) => {
    const r = checkPermit(permit, { ...ok, ...patch });
    expect(r?.code).toBe(code);
    expect(r?.message).toContain(message);
  });

  it('a permit nonce ahead of the token nonce is refused too (ERC-2612 wants it equal)', () => {
    const r = checkPermit({ ...permit, nonce: 1n }, ok);
    expect(r?.code).toBe(4000);
    expect(r?.message).toBe('INVALID_REQUEST: permit nonce 1 is not the current token nonce 0');
  });

  it('a deadline one millisecond in the future passes', () => {
    expect(checkPermit(permit, { ...ok, nowMs: 1767225899999 })).toBeUndefined();
  });
});

describe('payload round trip through the verifier', () => {
  it('re-encoding the decoded struct gives the received bytes', () => {
    for (const kind of VECTOR_KINDS) {
      const v = A.structs[kind]!;
      const r = verifySignedPayload(testnet, v.sig, v.payload);
      if (!r.ok) throw new Error(r.error.message);
      const p = r.value.payload;
      expect(encodePayloadHex(p.kind, p.struct as never)).toBe(v.payload);
    }
    expect(hex(bytes(ORDER.payload))).toBe(ORDER.payload);
  });
});
