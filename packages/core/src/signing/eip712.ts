/**
 * EIP-712 domains and digests, and the EIP-191 `personal_sign` hash. The two domains (vault and
 * collateral token) come from network configuration (protocol.md section 2): `testnet` has
 * chain id 10143 and token domain version "1", `mainnet` 143 and "2". Separators are computed
 * once per configuration.
 *
 * @module
 */
import { keccak_256 } from '@noble/hashes/sha3.js';
import { concatBytes, utf8ToBytes } from '@noble/hashes/utils.js';
import { hexToBytesStrict } from './hex.js';

/** An EIP-712 domain with the four fields the venue uses. */
export interface Eip712Domain {
  readonly name: string;
  readonly version: string;
  readonly chainId: number;
  readonly verifyingContract: string;
}

/** `keccak256("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)")`. */
export const DOMAIN_TYPEHASH: Uint8Array = keccak_256(
  utf8ToBytes('EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)'),
);

function uintWord(v: bigint): Uint8Array {
  const w = new Uint8Array(32);
  let x = v;
  for (let i = 31; i >= 0 && x > 0n; i--) {
    w[i] = Number(x & 0xffn);
    x >>= 8n;
  }
  return w;
}

function addressWord(address: string): Uint8Array {
  const b = hexToBytesStrict(address);
  if (typeof b === 'string' || b.length !== 20) throw new TypeError(`bad address ${address}`);
  const w = new Uint8Array(32);
  w.set(b, 12);
  return w;
}

/** The domain separator of a domain. */
export function domainSeparator(d: Eip712Domain): Uint8Array {
  return keccak_256(
    concatBytes(
      DOMAIN_TYPEHASH,
      keccak_256(utf8ToBytes(d.name)),
      keccak_256(utf8ToBytes(d.version)),
      uintWord(BigInt(d.chainId)),
      addressWord(d.verifyingContract),
    ),
  );
}

/** `keccak256(0x1901 || domainSeparator || structHash)`. */
export function typedDataDigest(separator: Uint8Array, structHash: Uint8Array): Uint8Array {
  return keccak_256(concatBytes(new Uint8Array([0x19, 0x01]), separator, structHash));
}

/** EIP-191 hash of a text message: the prefix carries the UTF-8 byte length. */
export function personalMessageHash(text: string): Uint8Array {
  const body = utf8ToBytes(text);
  return keccak_256(concatBytes(utf8ToBytes(`\x19Ethereum Signed Message:\n${body.length}`), body));
}

/** The text a wallet signs to authenticate a WebSocket: `<lowercase address>:<nonce>`. */
export function authenticateMessage(account: string, nonce: bigint): string {
  return `${account.toLowerCase()}:${nonce}`;
}

/** Network settings the domains are built from. */
export interface SigningNetwork {
  readonly network: 'testnet' | 'mainnet';
  readonly vaultName: string;
  readonly vaultAddress: string;
  readonly tokenName: string;
  readonly tokenAddress: string;
}

/** Both domains of a network with their separators, computed once. */
export interface SigningDomains {
  readonly vault: Eip712Domain;
  readonly token: Eip712Domain;
  readonly vaultSeparator: Uint8Array;
  readonly tokenSeparator: Uint8Array;
}

/** Builds the vault and token domains of a network. */
export function signingDomains(n: SigningNetwork): SigningDomains {
  const chainId = n.network === 'mainnet' ? 143 : 10143;
  const vault = { name: n.vaultName, version: '1', chainId, verifyingContract: n.vaultAddress };
  const token = {
    name: n.tokenName,
    version: n.network === 'mainnet' ? '2' : '1',
    chainId,
    verifyingContract: n.tokenAddress,
  };
  return {
    vault,
    token,
    vaultSeparator: domainSeparator(vault),
    tokenSeparator: domainSeparator(token),
  };
}
