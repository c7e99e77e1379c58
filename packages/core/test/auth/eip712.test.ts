/**
 * EIP-712 primitives against public vectors: the EIP-712 "Mail" example (research 4.1, through a
 * tiny nested-struct hasher built on our primitives), the EIP-2612 permit and USDC domain
 * (research 4.3), and the Appendix A domain separators of both networks.
 */
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';
import { concatBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import {
  createSigningContext,
  domainSeparator,
  EIP712_DOMAIN_TYPEHASH,
  type Eip712Domain,
  encodePayload,
  networkDomains,
  nobleVerifier,
  parseSignature,
  publicKeyToAddress,
  STRUCT_DEFS,
  structHash,
  typedDataDigest,
} from '../../src/auth/index.js';
import { A, bytes, hex, mainnet, testnet } from './fixtures.js';

function recover(digest: Uint8Array, sig: string): string {
  const parsed = parseSignature(sig);
  if (!parsed.ok) throw new Error(parsed.error.message);
  return nobleVerifier.recoverAddress(digest, parsed.value);
}

describe('EIP712Domain', () => {
  it('typehash of EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)', () => {
    expect(hex(EIP712_DOMAIN_TYPEHASH)).toBe(
      '0x8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f',
    );
  });

  it('refuses a malformed domain at configuration time', () => {
    const d = { name: 'X', version: '1', chainId: 1, verifyingContract: '0x1234' };
    expect(() => domainSeparator(d)).toThrow(RangeError);
    const c = { ...d, verifyingContract: `0x${'11'.repeat(20)}` };
    expect(() => domainSeparator({ ...c, chainId: -1 })).toThrow(RangeError);
    expect(() => domainSeparator({ ...c, chainId: 1.5 })).toThrow(RangeError);
    expect(hex(domainSeparator({ ...c, chainId: 1n }))).toBe(hex(domainSeparator(c)));
  });

  it('chainId is any uint256: the top value is encoded as 32 0xff bytes, 2^256 is refused', () => {
    const c = { name: 'X', version: '1', verifyingContract: `0x${'11'.repeat(20)}` };
    const top = (1n << 256n) - 1n;
    const expected = keccak_256(
      concatBytes(
        EIP712_DOMAIN_TYPEHASH,
        keccak_256(utf8ToBytes('X')),
        keccak_256(utf8ToBytes('1')),
        new Uint8Array(32).fill(0xff),
        word(c.verifyingContract),
      ),
    );
    expect(hex(domainSeparator({ ...c, chainId: top }))).toBe(hex(expected));
    expect(() => domainSeparator({ ...c, chainId: top + 1n })).toThrow(RangeError);
  });

  it('a number chainId must be a safe integer (2^53 may already have lost precision)', () => {
    const c = { name: 'X', version: '1', verifyingContract: `0x${'11'.repeat(20)}` };
    expect(() => domainSeparator({ ...c, chainId: 2 ** 53 })).toThrow(
      'chainId 9007199254740992 is not a uint256',
    );
    expect(hex(domainSeparator({ ...c, chainId: 2 ** 53 - 1 }))).toBe(
      hex(domainSeparator({ ...c, chainId: 2n ** 53n - 1n })),
    );
    expect(() => domainSeparator({ ...c, chainId: 2n ** 53n })).not.toThrow();
  });
});

// A minimal EIP-712 hasher for the Mail example's nested structs and strings, built on the
// primitives under test (our structs are static, so the product needs none of this).
const PERSON = 'Person(string name,address wallet)';
const MAIL = `Mail(Person from,Person to,string contents)${PERSON}`;
const word = (address: string) => concatBytes(new Uint8Array(12), bytes(address));
const hashPerson = (p: { name: string; wallet: string }) =>
  keccak_256(
    concatBytes(keccak_256(utf8ToBytes(PERSON)), keccak_256(utf8ToBytes(p.name)), word(p.wallet)),
  );

describe('EIP-712 Mail example (ethereum/EIPs Example.js, research 4.1)', () => {
  const domain: Eip712Domain = {
    name: 'Ether Mail',
    version: '1',
    chainId: 1,
    verifyingContract: '0xCcCCccccCCCCcCCCCCCcCcCccCcCCCcCcccccccC',
  };
  const from = { name: 'Cow', wallet: '0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826' };
  const to = { name: 'Bob', wallet: '0xbBbBBBBbbBBBbbbBbbBbbbbBBbBbbbbBbBbbBBbB' };
  const encodeData = concatBytes(
    keccak_256(utf8ToBytes(MAIL)),
    hashPerson(from),
    hashPerson(to),
    keccak_256(utf8ToBytes('Hello, Bob!')),
  );
  const mailHash = keccak_256(encodeData);

  it('typeHash(Mail)', () => {
    expect(hex(keccak_256(utf8ToBytes(MAIL)))).toBe(
      '0xa0cedeb2dc280ba39b857546d74f5549c3a1d7bdc2dd96bf881f76108e23dac2',
    );
  });

  it('encodeData(Mail) and hashStruct(Mail)', () => {
    expect(hex(encodeData)).toBe(
      '0xa0cedeb2dc280ba39b857546d74f5549c3a1d7bdc2dd96bf881f76108e23dac2' +
        'fc71e5fa27ff56c350aa531bc129ebdf613b772b6604664f5d8dbe21b85eb0c8' +
        'cd54f074a4af31b4411ff6a60c9719dbd559c221c8ac3492d9d872b041d703d1' +
        'b5aadf3154a261abdd9086fc627b61efca26ae5702701d05cd2305f7c52a2fc8',
    );
    expect(hex(mailHash)).toBe(
      '0xc52c0ee5d84264471806290a3f2c4cecfc5490626bf912d01f240d7a274b371e',
    );
  });

  it('domain separator and digest', () => {
    const sep = domainSeparator(domain);
    expect(hex(sep)).toBe('0xf2cee375fa42b42143804025fc449deafd50cc031ca257e0b194a650a912090f');
    expect(hex(typedDataDigest(sep, mailHash))).toBe(
      '0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2',
    );
  });

  it('the cow key signs it (RFC 6979) and the signature recovers the cow address', () => {
    const cowKey = keccak_256(utf8ToBytes('cow'));
    expect(hex(cowKey)).toBe('0xc85ef7d79691fe79573b1a7064c19c1a9819ebdbd1faaab1a8ec92344438aaf4');
    const cow = publicKeyToAddress(secp256k1.getPublicKey(cowKey, false));
    expect(cow).toBe(from.wallet.toLowerCase());
    const digest = typedDataDigest(domainSeparator(domain), mailHash);
    const sig =
      '0x4355c47d63924e8a72e509b65029052eb6c299d53a04e167c5775fd466751c9d07299936d304c153f6443dfa05f40ff007d72911b6f72307f996231605b915621c';
    const recovered = secp256k1.sign(digest, cowKey, { prehash: false, format: 'recovered' });
    expect(hex(recovered.subarray(1)) + (27 + (recovered[0] as number)).toString(16)).toBe(sig);
    expect(recover(digest, sig)).toBe(cow);
    const parsed = parseSignature(sig);
    expect(parsed.ok && parsed.value.yParity).toBe(1);
  });

  it('its EIP-2098 64-byte form is refused (4001)', () => {
    const compact =
      '0x4355c47d63924e8a72e509b65029052eb6c299d53a04e167c5775fd466751c9d87299936d304c153f6443dfa05f40ff007d72911b6f72307f996231605b91562';
    expect(parseSignature(compact)).toEqual({
      ok: false,
      error: {
        code: 4001,
        message: 'INVALID_SIGNATURE: signature must be 65 bytes (r || s || v), got 64',
      },
    });
  });

  it("viem's variant (verifyingContract zero) and the anvil key over both domains", () => {
    const anvil = A.signer.toLowerCase();
    const zero = { ...domain, verifyingContract: `0x${'00'.repeat(20)}` };
    const d0 = typedDataDigest(domainSeparator(zero), mailHash);
    expect(hex(d0)).toBe('0x448f54762ef8ecccdc4d19bb7d467161383cd4b271617a8cee05c790eb745d74');
    expect(
      recover(
        d0,
        '0x32f3d5975ba38d6c2fba9b95d5cbed1febaa68003d3d588d51f2de522ad54117760cfc249470a75232552e43991f53953a3d74edf6944553c6bef2469bb9e5921b',
      ),
    ).toBe(anvil);
    expect(
      recover(
        typedDataDigest(domainSeparator(domain), mailHash),
        '0x6ea8bb309a3401225701f3565e32519f94a0ea91a5910ce9229fe488e773584c0390416a2190d9560219dab757ecca2029e63fa9d1c2aebf676cc25b9f03126a1b',
      ),
    ).toBe(anvil);
  });
});

describe('EIP-2612 permit (research 4.3)', () => {
  const usdc: Eip712Domain = {
    name: 'USD Coin',
    version: '2',
    chainId: 1,
    verifyingContract: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
  };

  it('PERMIT_TYPEHASH and the USDC mainnet DOMAIN_SEPARATOR', () => {
    expect(hex(STRUCT_DEFS.Permit.typeHash!)).toBe(
      '0x6e71edae12b1b97f4d1f60370fef10105fa2faae0126114a169c64845d6126c9',
    );
    expect(hex(domainSeparator(usdc))).toBe(
      '0x06c37168a7db5138defc7866392bb87a741f9b3d104deb5094588ce041cae335',
    );
  });

  it('the example permit: structHash, digest and signature (v = 28)', () => {
    const payload = encodePayload('Permit', {
      owner: A.signer,
      spender: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
      value: 1000000n,
      nonce: 0n,
      deadline: 1893456000n,
    });
    const sh = structHash(payload);
    expect(hex(sh)).toBe('0x9bbdd20c3394d7c18fed7c2cd2ffb6e7056b0b749df166268d5a420c3bf00038');
    const digest = typedDataDigest(domainSeparator(usdc), sh);
    expect(hex(digest)).toBe('0xd50eeefda754913009864c6a3837aefbc2059131e467d46349885e92e1be6313');
    const sig =
      '0x476106a4c0203df5a82789201c4dcdf429ab00aeee4b004ccc2ab35859106a7b3742f6c3046809677568bfe459036e3d5e40f652e7c67074cbb38155bbdcd4e01c';
    expect(recover(digest, sig)).toBe(A.signer.toLowerCase());
  });
});

describe('venue domains (Appendix A)', () => {
  it('testnet vault and token separators', () => {
    expect(hex(testnet.vaultSeparator)).toBe(A.domainSeparators.vault10143);
    expect(hex(testnet.tokenSeparator)).toBe(A.domainSeparators.token10143);
    expect(hex(domainSeparator(A.vaultDomain))).toBe(A.domainSeparators.vault10143);
    expect(hex(domainSeparator(A.tokenDomain))).toBe(A.domainSeparators.token10143);
  });

  it('mainnet is chain 143, token version "2"', () => {
    expect(hex(mainnet.vaultSeparator)).toBe(A.domainSeparators.vault143);
    expect(mainnet.chainId).toBe(143);
    expect(mainnet.tokenDomain.version).toBe('2');
    expect(mainnet.vaultDomain.version).toBe('1');
    expect(testnet.tokenDomain).toEqual({
      name: 'USD Coin',
      version: '1',
      chainId: 10143,
      verifyingContract: A.tokenDomain.verifyingContract.toLowerCase(),
    });
    expect(hex(mainnet.tokenSeparator)).toBe(
      hex(domainSeparator({ ...A.tokenDomain, chainId: 143, version: '2' })),
    );
  });

  it('refuses bad settings when the context is built', () => {
    const good = {
      network: 'testnet' as const,
      vaultName: 'V',
      vaultAddress: A.vaultDomain.verifyingContract,
      tokenName: 'T',
      tokenAddress: A.tokenDomain.verifyingContract,
    };
    expect(() => createSigningContext({ ...good, vaultAddress: '0x12' })).toThrow(RangeError);
    expect(() => createSigningContext({ ...good, tokenAddress: 'nope' })).toThrow(RangeError);
    expect(() =>
      createSigningContext({ ...good, network: 'devnet' as unknown as 'testnet' }),
    ).toThrow('network must be testnet or mainnet');
    // A network name read from a settings file is looked up as an own key, never the prototype.
    for (const network of ['constructor', 'toString', '__proto__']) {
      expect(() =>
        createSigningContext({ ...good, network: network as unknown as 'testnet' }),
      ).toThrow(`network settings: network must be testnet or mainnet, got ${network}`);
    }
    expect(() => createSigningContext({ ...good, vaultName: 7 as unknown as string })).toThrow(
      'network settings: vaultName and tokenName must be strings',
    );
    expect(() => createSigningContext({ ...good, tokenName: null as unknown as string })).toThrow(
      'network settings: vaultName and tokenName must be strings',
    );
  });

  it('networkDomains checks each address is exactly 20 bytes, before any separator', () => {
    const good = {
      network: 'mainnet' as const,
      vaultName: 'V',
      vaultAddress: A.vaultDomain.verifyingContract,
      tokenName: 'T',
      tokenAddress: A.tokenDomain.verifyingContract,
    };
    expect(networkDomains(good).vault.verifyingContract).toBe(
      A.vaultDomain.verifyingContract.toLowerCase(),
    );
    expect(() => networkDomains({ ...good, vaultAddress: `${good.vaultAddress}00` })).toThrow(
      'network settings: vaultAddress must be 0x followed by 40 hex digits',
    );
    expect(() => networkDomains({ ...good, tokenAddress: `${good.tokenAddress}00` })).toThrow(
      'network settings: tokenAddress must be 0x followed by 40 hex digits',
    );
  });

  it('each context carries its own chain id', () => {
    expect(testnet.chainId).toBe(10143);
    expect(mainnet.chainId).toBe(143);
    expect(testnet.network).toBe('testnet');
    expect(mainnet.network).toBe('mainnet');
  });
});
