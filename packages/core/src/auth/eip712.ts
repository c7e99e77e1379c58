/**
 * EIP-712 hashing for the venue's static structs: the domain separator, the typed-data digest,
 * and the struct hash taken straight from the received payload bytes,
 * `keccak256(typeHash || payload[1:])` (research 7.1), so the hot path never re-encodes.
 *
 * @module
 */
import { keccak_256 } from '@noble/hashes/sha3.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { parseHex } from './hex.js';
import { discriminatorHex, type StructDef, structDefOf } from './structs.js';

/** The domain type both venue domains use. */
export const EIP712_DOMAIN_TYPE =
  'EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)';

/** keccak256 of {@link EIP712_DOMAIN_TYPE} (`0x8b73c3c6...400f`). */
export const EIP712_DOMAIN_TYPEHASH: Uint8Array = keccak_256(utf8ToBytes(EIP712_DOMAIN_TYPE));

/** An EIP-712 domain with the four fields of {@link EIP712_DOMAIN_TYPE}. */
export interface Eip712Domain {
  readonly name: string;
  readonly version: string;
  readonly chainId: number | bigint;
  /** `0x` + 40 hex digits, any case. */
  readonly verifyingContract: string;
}

/**
 * The domain separator `keccak256(typeHash || keccak(name) || keccak(version) || chainId ||
 * verifyingContract)`. Throws `RangeError` for a malformed domain (a configuration error).
 */
export function domainSeparator(domain: Eip712Domain): Uint8Array {
  const contract = parseHex(domain.verifyingContract);
  if (typeof contract === 'string' || contract.length !== 20) {
    throw new RangeError(
      `EIP-712 domain: verifyingContract ${domain.verifyingContract} is not an address`,
    );
  }
  let chainId =
    typeof domain.chainId === 'bigint'
      ? domain.chainId
      : Number.isSafeInteger(domain.chainId)
        ? BigInt(domain.chainId)
        : -1n;
  if (chainId < 0n || chainId >> 256n !== 0n) {
    throw new RangeError(`EIP-712 domain: chainId ${domain.chainId} is not a uint256`);
  }
  const encoded = new Uint8Array(5 * 32);
  encoded.set(EIP712_DOMAIN_TYPEHASH, 0);
  encoded.set(keccak_256(utf8ToBytes(domain.name)), 32);
  encoded.set(keccak_256(utf8ToBytes(domain.version)), 64);
  for (let i = 127; chainId > 0n; i--) {
    encoded[i] = Number(chainId & 0xffn);
    chainId >>= 8n;
  }
  encoded.set(contract, 128 + 12);
  return keccak_256(encoded);
}

const PREFIX_1901 = Uint8Array.of(0x19, 0x01);

/** The signed digest `keccak256(0x19 0x01 || domainSeparator || structHash)`. */
export function typedDataDigest(separator: Uint8Array, structHash: Uint8Array): Uint8Array {
  return keccak_256.create().update(PREFIX_1901).update(separator).update(structHash).digest();
}

/** hashStruct of a validated payload of a known EIP-712 struct (no checks beyond the type). */
export function structHashOf(def: StructDef, payload: Uint8Array): Uint8Array {
  if (def.typeHash === undefined) throw new RangeError(`${def.kind} is not an EIP-712 struct`);
  return keccak_256.create().update(def.typeHash).update(payload.subarray(1)).digest();
}

/**
 * hashStruct of payload bytes, `keccak256(typeHash[payload[0]] || payload[1:])`. Call it on a
 * validated payload; throws `RangeError` for an unknown or non-EIP-712 discriminator.
 */
export function structHash(payload: Uint8Array): Uint8Array {
  const discriminator = payload[0] ?? 0;
  const def = structDefOf(discriminator);
  if (def === undefined)
    throw new RangeError(`unknown payload discriminator ${discriminatorHex(discriminator)}`);
  return structHashOf(def, payload);
}
