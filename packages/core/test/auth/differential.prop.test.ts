/**
 * Differential properties against viem over random structs of every EIP-712 kind (FC_NUM_RUNS
 * per kind and direction, 200 by default, so 2,000 structs each way):
 *
 * - viem signs the typed data built from our field list; our verifier accepts it, recovers the
 *   signer, decodes the struct back and computes viem's digest; any one-byte change is refused.
 * - our encoder and digest agree with viem's `encodeAbiParameters`, `hashStruct` and
 *   `hashTypedData`; a signature made over our digest recovers with `recoverTypedDataAddress`.
 * - random authentication messages signed with viem's `signMessage` verify.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import fc from 'fast-check';
import {
  concat,
  decodeAbiParameters,
  encodeAbiParameters,
  hashStruct,
  hashTypedData,
  recoverTypedDataAddress,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import {
  authenticateMessage,
  discriminatorHex,
  encodePayload,
  encodePayloadHex,
  type FieldType,
  STRUCT_DEFS,
  type StructKind,
  type StructTypes,
  structHash,
  typedDataDigest,
  verifySignedPayload,
} from '../../src/auth/index.js';
import { type Hex, hex, RUNS, testnet, typedData, viemTypes } from './fixtures.js';

const KEYS = Array.from({ length: 16 }, (_, i) =>
  keccak_256(utf8ToBytes(`auth-differential-${i}`)),
);
const ACCOUNTS = KEYS.map((k) => privateKeyToAccount(hex(k)));

const EIP712_KINDS = (Object.keys(STRUCT_DEFS) as StructKind[]).filter(
  (k) => STRUCT_DEFS[k].scheme !== 'personal',
);

const hexBytes = (n: number) => fc.uint8Array({ minLength: n, maxLength: n }).map((b) => hex(b));
const uint = (bits: number) => fc.bigInt({ min: 0n, max: (1n << BigInt(bits)) - 1n });

function fieldArb(
  type: FieldType,
  name: string,
  flagsMask: number | undefined,
): fc.Arbitrary<unknown> {
  if (name === 'flags' && flagsMask !== undefined) return fc.integer({ min: 0, max: flagsMask });
  switch (type) {
    case 'address':
      return hexBytes(20);
    case 'bytes16':
      return fc.oneof(fc.constant(`0x${'00'.repeat(16)}`), hexBytes(16));
    case 'bool':
      return fc.boolean();
    case 'uint8':
      return fc.integer({ min: 0, max: 255 });
    case 'uint32':
      return uint(32).map(Number);
    case 'uint64':
      return uint(64);
    case 'uint256':
      return uint(256);
  }
}

/** A random struct of `kind` whose signer field is one of the pool's accounts, and that key's index. */
function structArb<K extends StructKind>(kind: K): fc.Arbitrary<[StructTypes[K], number]> {
  const def = STRUCT_DEFS[kind];
  const shape: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [name, type] of def.fields) shape[name] = fieldArb(type, name, def.flagsMask);
  return fc
    .tuple(fc.record(shape), fc.integer({ min: 0, max: KEYS.length - 1 }))
    .map(([s, k]) => [
      { ...s, [def.signerField]: ACCOUNTS[k]!.address.toLowerCase() } as unknown as StructTypes[K],
      k,
    ]);
}

function domainOf(kind: StructKind) {
  return STRUCT_DEFS[kind].scheme === 'token' ? testnet.tokenDomain : testnet.vaultDomain;
}

type SignArgs = Parameters<(typeof ACCOUNTS)[number]['signTypedData']>[0];

describe('viem signs, we verify', () => {
  it.each(EIP712_KINDS)('%s', async (kind) => {
    const def = STRUCT_DEFS[kind];
    await fc.assert(
      fc.asyncProperty(
        structArb(kind),
        fc.nat(),
        fc.integer({ min: 1, max: 255 }),
        async ([struct, k], at, xor) => {
          const data = typedData(domainOf(kind), kind, struct);
          const sig = await ACCOUNTS[k]!.signTypedData(data as SignArgs);
          const payload = encodePayloadHex(kind, struct);
          const r = verifySignedPayload(testnet, sig, payload, {
            discriminator: def.discriminator,
          });
          if (!r.ok) throw new Error(r.error.message);
          expect(r.value.signer).toBe(ACCOUNTS[k]!.address.toLowerCase());
          expect(r.value.payload).toEqual({ kind, struct });
          expect(hex(r.value.digest)).toBe(
            hashTypedData(data as Parameters<typeof hashTypedData>[0]),
          );
          // Any one-byte change is refused: 4000 (malformed) or 4001 (another message).
          const mutated = encodePayload(kind, struct);
          const i = at % mutated.length;
          mutated[i] = (mutated[i] as number) ^ xor;
          const m = verifySignedPayload(testnet, sig, hex(mutated));
          expect(m.ok).toBe(false);
          if (!m.ok) expect([4000, 4001]).toContain(m.error.code);
        },
      ),
      { numRuns: RUNS },
    );
  });
});

describe('we encode and hash, viem agrees', () => {
  it.each(EIP712_KINDS)('%s', async (kind) => {
    const def = STRUCT_DEFS[kind];
    const params = def.fields.map(([name, type]) => ({ name, type }));
    await fc.assert(
      fc.asyncProperty(structArb(kind), async ([struct, k]) => {
        const values = struct as unknown as Record<string, unknown>;
        const payload = encodePayload(kind, struct);
        // Payload = discriminator || abi.encode(fields), and viem decodes it back.
        const abi = encodeAbiParameters(
          params,
          def.fields.map(([n]) => values[n]),
        );
        expect(hex(payload)).toBe(concat([discriminatorHex(def.discriminator) as Hex, abi]));
        const decoded = decodeAbiParameters(params, hex(payload.subarray(1)));
        def.fields.forEach(([name, type], i) => {
          const v = decoded[i];
          const expected = values[name];
          if (type === 'address') expect(String(v).toLowerCase()).toBe(expected);
          else if (type === 'uint8' || type === 'uint32') expect(Number(v)).toBe(expected);
          else expect(v).toEqual(expected);
        });
        // hashStruct and the digest.
        const data = typedData(domainOf(kind), kind, struct);
        const sh = structHash(payload);
        expect(hex(sh)).toBe(
          hashStruct({ data: data.message, primaryType: kind, types: viemTypes(kind) }),
        );
        const separator = def.scheme === 'token' ? testnet.tokenSeparator : testnet.vaultSeparator;
        const digest = typedDataDigest(separator, sh);
        expect(hex(digest)).toBe(hashTypedData(data as Parameters<typeof hashTypedData>[0]));
        // A signature over our digest recovers with viem.
        const rec = secp256k1.sign(digest, KEYS[k]!, { prehash: false, format: 'recovered' });
        const signature = `${hex(rec.subarray(1))}${(27 + (rec[0] as number)).toString(16)}` as Hex;
        const recovered = await recoverTypedDataAddress({
          ...(data as Parameters<typeof hashTypedData>[0]),
          signature,
        });
        expect(recovered).toBe(ACCOUNTS[k]!.address);
      }),
      { numRuns: RUNS },
    );
  });
});

describe('authentication messages', () => {
  it('viem signMessage over <lowercase address>:<nonce> verifies as Authenticate', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 0, max: KEYS.length - 1 }),
        uint(64),
        uint(64),
        async (k, nonce, deadline) => {
          const account = ACCOUNTS[k]!;
          const sig = await account.signMessage({
            message: authenticateMessage(account.address, nonce),
          });
          const struct = { account: account.address.toLowerCase(), nonce, deadline };
          const payload = encodePayloadHex('Authenticate', struct);
          const r = verifySignedPayload(testnet, sig, payload, { discriminator: 0x09 });
          if (!r.ok) throw new Error(r.error.message);
          expect(r.value.signer).toBe(struct.account);
          expect(r.value.payload).toEqual({ kind: 'Authenticate', struct });
          // Another wallet's account word is refused.
          const impostor = ACCOUNTS[(k + 1) % ACCOUNTS.length]!.address.toLowerCase();
          const forged = encodePayloadHex('Authenticate', { ...struct, account: impostor });
          const f = verifySignedPayload(testnet, sig, forged);
          expect(!f.ok && f.error.code).toBe(4001);
        },
      ),
      { numRuns: RUNS },
    );
  });
});
