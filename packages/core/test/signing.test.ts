/**
 * Signed structs, EIP-712 / EIP-191 / EIP-2612: the public vectors (EIP-712 Mail, personal_sign,
 * permit) and every vector of research Appendix A as golden tests; differential property tests
 * against viem in both directions; every malformed or forged input refused with its exact code.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import fc from 'fast-check';
import {
  concat,
  encodeAbiParameters,
  hashMessage,
  hashTypedData,
  keccak256,
  recoverMessageAddress,
  recoverTypedDataAddress,
  toBytes,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import {
  authenticateMessage,
  bytesToHex0x,
  DOMAIN_TYPEHASH,
  decodePayload,
  domainSeparator,
  encodePayload,
  personalMessageHash,
  STRUCTS,
  signingDomains,
  structHash,
  typedDataDigest,
  verifySignedPayload,
} from '../src/index.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 1000);
const A = JSON.parse(readFileSync(resolve(__dirname, 'vectors/appendix-a.json'), 'utf8')) as {
  signer: string;
  privateKey: `0x${string}`;
  vaultDomain: { name: string; version: string; chainId: number; verifyingContract: string };
  tokenDomain: { name: string; version: string; chainId: number; verifyingContract: string };
  domainSeparators: Record<string, string>;
  authenticate: { message: string; eip191Hash: string; payload: string; sig: string };
  structs: Record<
    string,
    {
      discriminator: string;
      message: Record<string, string | number | boolean>;
      payload: string;
      structHash: string;
      digest: string;
      sig: string;
    }
  >;
};

const testnet = signingDomains({
  network: 'testnet',
  vaultName: A.vaultDomain.name,
  vaultAddress: A.vaultDomain.verifyingContract.toLowerCase(),
  tokenName: A.tokenDomain.name,
  tokenAddress: A.tokenDomain.verifyingContract.toLowerCase(),
});
const mainnet = signingDomains({
  network: 'mainnet',
  vaultName: A.vaultDomain.name,
  vaultAddress: A.vaultDomain.verifyingContract.toLowerCase(),
  tokenName: A.tokenDomain.name,
  tokenAddress: A.tokenDomain.verifyingContract.toLowerCase(),
});
const SIGNER = A.signer.toLowerCase();
const hex = (b: Uint8Array) => bytesToHex0x(b);

describe('public vectors', () => {
  it('EIP-712 Mail example: type hash, domain separator, digest and signer', () => {
    const enc = (s: string) => keccak256(toBytes(s));
    const mailType =
      'Mail(Person from,Person to,string contents)Person(string name,address wallet)';
    expect(enc(mailType)).toBe(
      '0xa0cedeb2dc280ba39b857546d74f5549c3a1d7bdc2dd96bf881f76108e23dac2',
    );
    const sep = domainSeparator({
      name: 'Ether Mail',
      version: '1',
      chainId: 1,
      verifyingContract: '0xcccccccccccccccccccccccccccccccccccccccc',
    });
    expect(hex(sep)).toBe('0xf2cee375fa42b42143804025fc449deafd50cc031ca257e0b194a650a912090f');
    expect(hex(DOMAIN_TYPEHASH)).toBe(
      '0x8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f',
    );
    const mailHash = toBytes('0xc52c0ee5d84264471806290a3f2c4cecfc5490626bf912d01f240d7a274b371e');
    expect(hex(typedDataDigest(sep, mailHash))).toBe(
      '0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2',
    );
  });

  it('EIP-191 personal_sign: hello world hash and the authentication vector', () => {
    expect(hex(personalMessageHash('hello world'))).toBe(
      '0xd9eba16ed0ecae432b71fe008c98cc872bb4cc214d3220a36f365326cf807d68',
    );
    expect(authenticateMessage(A.signer, 1767225600000n)).toBe(A.authenticate.message);
    expect(hex(personalMessageHash(A.authenticate.message))).toBe(A.authenticate.eip191Hash);
    const r = verifySignedPayload(
      testnet,
      { sig: A.authenticate.sig, payload: A.authenticate.payload },
      [0x09],
    );
    expect(r.ok && r.value.signer).toBe(SIGNER);
  });

  it('EIP-2612 permit type hash and the USDC mainnet domain separator', () => {
    expect(hex(STRUCTS.get(0x05)!.typeHash)).toBe(
      '0x6e71edae12b1b97f4d1f60370fef10105fa2faae0126114a169c64845d6126c9',
    );
    const usdc = domainSeparator({
      name: 'USD Coin',
      version: '2',
      chainId: 1,
      verifyingContract: '0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48',
    });
    expect(hex(usdc)).toBe('0x06c37168a7db5138defc7866392bb87a741f9b3d104deb5094588ce041cae335');
  });
});

describe('Appendix A vectors', () => {
  it('domain separators for vault 10143, vault 143 and token 10143', () => {
    expect(hex(testnet.vaultSeparator)).toBe(A.domainSeparators.vault10143);
    expect(hex(mainnet.vaultSeparator)).toBe(A.domainSeparators.vault143);
    expect(hex(testnet.tokenSeparator)).toBe(A.domainSeparators.token10143);
  });

  for (const [name, v] of Object.entries(A.structs)) {
    it(`${name}: encoding, decoding, struct hash, digest and signer`, () => {
      const d = Number.parseInt(v.discriminator, 16);
      const values = Object.fromEntries(
        Object.entries(v.message).map(([k, x]) => [
          k,
          typeof x === 'string' && /^\d+$/.test(x)
            ? BigInt(x)
            : typeof x === 'string'
              ? x.toLowerCase()
              : x,
        ]),
      );
      expect(hex(encodePayload(d, values as never))).toBe(v.payload);
      const decoded = decodePayload(v.payload);
      expect(decoded.ok).toBe(true);
      if (!decoded.ok) return;
      for (const [k, x] of Object.entries(values))
        expect(decoded.struct.values[k]).toEqual(typeof x === 'number' ? BigInt(x) : x);
      expect(hex(structHash(decoded.struct))).toBe(v.structHash);
      const r = verifySignedPayload(testnet, { sig: v.sig, payload: v.payload }, [d]);
      expect(r.ok ? hex(r.value.digest) : r.error.message).toBe(v.digest);
      expect(r.ok && r.value.signer).toBe(SIGNER);
    });
  }

  it('the Order signature under the chain-143 domain recovers another address and is refused (4001)', () => {
    const o = A.structs.Order!;
    const r = verifySignedPayload(mainnet, { sig: o.sig, payload: o.payload }, [1]);
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.error.code).toBe(4001);
      expect(r.error.message).toContain('0x7cb16169d3c7b0acbb44b0e9fa08ecc8f9bcf8a5');
      expect(r.error.message).toContain(
        '0xadf0552b69171ce7259985af4fcfc0612d621b0e8f40abbd2dcd330d0de63b03',
      );
    }
  });
});

describe('refusals (exact codes)', () => {
  const order = A.structs.Order!;
  const withdrawal = A.structs.Withdrawal!;
  const code = (sig: unknown, payload: unknown, allowed = [1], domains = testnet) => {
    const r = verifySignedPayload(domains, { sig, payload }, allowed);
    return r.ok ? 0 : r.error.code;
  };
  const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
  const sigParts = (s: string) => ({
    r: s.slice(2, 66),
    s: BigInt(`0x${s.slice(66, 130)}`),
    v: Number.parseInt(s.slice(130), 16),
  });

  it('wrong chain id, wrong domain, wrong verifying contract, token version 2 on testnet: 4001', () => {
    expect(code(order.sig, order.payload, [1], mainnet)).toBe(4001);
    const other = signingDomains({
      network: 'testnet',
      vaultName: 'OtherVault',
      vaultAddress: A.vaultDomain.verifyingContract.toLowerCase(),
      tokenName: 'USD Coin',
      tokenAddress: A.tokenDomain.verifyingContract.toLowerCase(),
    });
    expect(code(order.sig, order.payload, [1], other)).toBe(4001);
    const moved = signingDomains({
      network: 'testnet',
      vaultName: 'ExampleVault',
      vaultAddress: `0x${'1'.repeat(40)}`,
      tokenName: 'USD Coin',
      tokenAddress: A.tokenDomain.verifyingContract.toLowerCase(),
    });
    expect(code(order.sig, order.payload, [1], moved)).toBe(4001);
    const permit = A.structs.Permit!;
    expect(code(permit.sig, permit.payload, [5], testnet)).toBe(0);
    expect(
      code(permit.sig, permit.payload, [5], {
        ...testnet,
        tokenSeparator: domainSeparator({ ...testnet.token, version: '2' }),
      }),
    ).toBe(4001);
  });

  it('high s (s -> n - s, v flipped): 4001 even though viem would recover the signer', async () => {
    const p = sigParts(order.sig);
    const high = `0x${p.r}${(N - p.s).toString(16).padStart(64, '0')}${(p.v === 27 ? 28 : 27).toString(16)}`;
    const viemSigner = await recoverTypedDataAddress({
      domain: A.vaultDomain as never,
      types: { Order: STRUCTS.get(1)!.fields.map(([name, type]) => ({ name, type })) },
      primaryType: 'Order',
      message: Object.fromEntries(
        Object.entries(order.message).map(([k, x]) => [
          k,
          typeof x === 'string' && /^\d+$/.test(x) ? BigInt(x) : x,
        ]),
      ) as never,
      signature: high as `0x${string}`,
    });
    expect(viemSigner.toLowerCase()).toBe(SIGNER);
    const r = verifySignedPayload(testnet, { sig: high, payload: order.payload }, [1]);
    expect(r.ok ? '' : r.error.message).toMatch(/high s/);
  });

  it('64-byte compact, 66 bytes, v = 29, v = 37, odd-length and non-hex signatures: 4001', () => {
    expect(code(order.sig.slice(0, 130), order.payload)).toBe(4001);
    expect(code(`${order.sig}00`, order.payload)).toBe(4001);
    expect(code(`${order.sig.slice(0, 130)}1d`, order.payload)).toBe(4001);
    expect(code(`${order.sig.slice(0, 130)}25`, order.payload)).toBe(4001);
    expect(code(order.sig.slice(0, 131), order.payload)).toBe(4001);
    expect(code(`${order.sig.slice(0, 128)}zz1c`, order.payload)).toBe(4001);
  });

  it('v = 0/1 is accepted as yParity', () => {
    const v0 = `${order.sig.slice(0, 130)}${(Number.parseInt(order.sig.slice(130), 16) - 27).toString(16).padStart(2, '0')}`;
    expect(code(v0, order.payload)).toBe(0);
  });

  it('truncated and padded payloads, dirty address word, bool 2, uint32 overflow, unused flag bit: 4000', () => {
    expect(code(order.sig, order.payload.slice(0, -2))).toBe(4000);
    expect(code(order.sig, `${order.payload}00`)).toBe(4000);
    const dirty = `0x01${'ff'}${order.payload.slice(6)}`;
    expect(code(order.sig, dirty)).toBe(4000);
    const words = (p: string) => ({ head: p.slice(0, 4), body: p.slice(4) });
    const set = (p: string, word: number, valueHex: string) => {
      const { head, body } = words(p);
      return (
        head + body.slice(0, (word - 1) * 64) + valueHex.padStart(64, '0') + body.slice(word * 64)
      );
    };
    expect(code(order.sig, set(order.payload, 3, '2'))).toBe(4000); // isBuy = 2
    expect(code(order.sig, set(order.payload, 2, '100000000'))).toBe(4000); // market > uint32
    expect(code(order.sig, set(order.payload, 9, '10'))).toBe(4000); // flags bit 4
    const r = verifySignedPayload(
      testnet,
      { sig: order.sig, payload: set(order.payload, 9, '10') },
      [1],
    );
    expect(r.ok ? '' : r.error.message).toMatch(/flag/);
  });

  it('unknown discriminators 0x00 and 0x0c, and a payload for another endpoint: 4000', () => {
    expect(code(order.sig, `0x00${order.payload.slice(4)}`, [0])).toBe(4000);
    expect(code(order.sig, `0x0c${order.payload.slice(4)}`, [0x0c])).toBe(4000);
    expect(code(withdrawal.sig, withdrawal.payload, [0x07])).toBe(4000);
  });

  it("another struct's signature replayed under this discriminator (Withdrawal -> Deposit, same layout): 4001", () => {
    const asDeposit = `0x07${withdrawal.payload.slice(4)}`;
    expect(code(withdrawal.sig, asDeposit, [0x07])).toBe(4001);
  });

  it('signer mismatch: a valid signature by another key over a payload naming the signer: 4001', async () => {
    const other = privateKeyToAccount(
      '0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d',
    );
    const sig = await other.signTypedData({
      domain: A.vaultDomain as never,
      types: { Order: STRUCTS.get(1)!.fields.map(([name, type]) => ({ name, type })) },
      primaryType: 'Order',
      message: Object.fromEntries(
        Object.entries(order.message).map(([k, x]) => [
          k,
          typeof x === 'string' && /^\d+$/.test(x) ? BigInt(x) : x,
        ]),
      ) as never,
    });
    const r = verifySignedPayload(testnet, { sig, payload: order.payload }, [1]);
    expect(r.ok ? '' : r.error.message).toContain(
      `signer ${other.address.toLowerCase()} does not match account ${SIGNER}`,
    );
  });
});

describe('differential against viem', () => {
  const keyArb = fc
    .uint8Array({ minLength: 32, maxLength: 32 })
    .filter(
      (b) =>
        b.some((x) => x !== 0) &&
        BigInt(hex(b)) < 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n,
    );
  const valueArb = (type: string): fc.Arbitrary<bigint | boolean | string> => {
    switch (type) {
      case 'address':
        return fc.uint8Array({ minLength: 20, maxLength: 20 }).map(hex);
      case 'bool':
        return fc.boolean();
      case 'bytes16':
        return fc.uint8Array({ minLength: 16, maxLength: 16 }).map(hex);
      default: {
        const bits = Number(type.slice(4));
        return fc.bigInt({ min: 0n, max: (1n << BigInt(bits)) - 1n });
      }
    }
  };
  const eip712 = [...STRUCTS.values()].filter((d) => d.domain !== 'personal');
  const structArb = fc
    .constantFrom(...eip712)
    .chain((d) =>
      fc
        .record(Object.fromEntries(d.fields.map(([n, t]) => [n, valueArb(t)])))
        .map((values) => ({ d, values })),
    );
  const domain = (d: (typeof eip712)[number]) =>
    d.domain === 'token' ? A.tokenDomain : A.vaultDomain;

  it('viem signs, we verify (1,000+ random structs of every kind)', async () => {
    await fc.assert(
      fc.asyncProperty(structArb, keyArb, async ({ d, values }, key) => {
        const account = privateKeyToAccount(hex(key) as `0x${string}`);
        const owner = d.fields[0]![0];
        const message = { ...values, [owner]: account.address.toLowerCase() };
        if (d.flagBits > 0) message.flags = (message.flags as bigint) & BigInt(d.flagBits);
        const types = { [d.name]: d.fields.map(([name, type]) => ({ name, type })) };
        const sig = await account.signTypedData({
          domain: domain(d) as never,
          types,
          primaryType: d.name,
          message: message as never,
        });
        const payload = concat([
          `0x${d.discriminator.toString(16).padStart(2, '0')}`,
          encodeAbiParameters(
            d.fields.map(([name, type]) => ({ name, type })),
            d.fields.map(([n]) => message[n]) as never,
          ),
        ]);
        const r = verifySignedPayload(testnet, { sig, payload }, [d.discriminator]);
        expect(r.ok ? r.value.signer : r.error.message).toBe(account.address.toLowerCase());
        expect(hex(encodePayload(d.discriminator, message as never))).toBe(payload);
      }),
      { numRuns: runs },
    );
  });

  it("our encoder and digest agree with viem's hashTypedData and recovery", async () => {
    await fc.assert(
      fc.asyncProperty(structArb, keyArb, async ({ d, values }, key) => {
        const account = privateKeyToAccount(hex(key) as `0x${string}`);
        const owner = d.fields[0]![0];
        const message = { ...values, [owner]: account.address.toLowerCase() };
        if (d.flagBits > 0) message.flags = (message.flags as bigint) & BigInt(d.flagBits);
        const payload = hex(encodePayload(d.discriminator, message as never));
        const decoded = decodePayload(payload, [d.discriminator]);
        if (!decoded.ok) throw new Error(decoded.error.message);
        const ours = typedDataDigest(
          d.domain === 'token' ? testnet.tokenSeparator : testnet.vaultSeparator,
          structHash(decoded.struct),
        );
        const types = { [d.name]: d.fields.map(([name, type]) => ({ name, type })) };
        const theirs = hashTypedData({
          domain: domain(d) as never,
          types,
          primaryType: d.name,
          message: message as never,
        });
        expect(hex(ours)).toBe(theirs);
        const sig = await account.sign({ hash: hex(ours) as `0x${string}` });
        const recovered = await recoverTypedDataAddress({
          domain: domain(d) as never,
          types,
          primaryType: d.name,
          message: message as never,
          signature: sig,
        });
        expect(recovered.toLowerCase()).toBe(account.address.toLowerCase());
      }),
      { numRuns: runs },
    );
  });

  it('personal_sign authentication messages: viem signs, we verify, and the reverse', async () => {
    await fc.assert(
      fc.asyncProperty(
        keyArb,
        fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }),
        async (key, nonce) => {
          const account = privateKeyToAccount(hex(key) as `0x${string}`);
          const text = authenticateMessage(account.address, nonce);
          expect(hex(personalMessageHash(text))).toBe(hashMessage(text));
          const sig = await account.signMessage({ message: text });
          const payload = hex(
            encodePayload(0x09, { account: account.address.toLowerCase(), nonce, deadline: 0n }),
          );
          const r = verifySignedPayload(testnet, { sig, payload }, [0x09]);
          expect(r.ok ? r.value.signer : r.error.message).toBe(account.address.toLowerCase());
          expect(
            (await recoverMessageAddress({ message: text, signature: sig })).toLowerCase(),
          ).toBe(account.address.toLowerCase());
        },
      ),
      { numRuns: Math.max(100, Math.floor(runs / 5)) },
    );
  });
});
