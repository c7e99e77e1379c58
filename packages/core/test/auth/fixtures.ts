/**
 * Shared fixtures of the auth tests: the Appendix A vectors (research api-conventions), the
 * signing contexts they imply, and converters between vector JSON, our structs and viem's typed
 * data (built from the same field lists, so the differential tests compare like with like).
 */
import { readFileSync } from 'node:fs';
import {
  createSigningContext,
  type DecodedPayload,
  type Eip712Domain,
  type FieldType,
  STRUCT_DEFS,
  type StructKind,
  type StructTypes,
} from '../../src/auth/index.js';

export type Hex = `0x${string}`;

export interface VectorDomain {
  name: string;
  version: string;
  chainId: number;
  verifyingContract: Hex;
}

export interface StructVector {
  discriminator: string;
  message: Record<string, string | number | boolean>;
  payload: Hex;
  structHash: Hex;
  digest: Hex;
  sig: Hex;
}

export interface AppendixA {
  signer: Hex;
  privateKey: Hex;
  vaultDomain: VectorDomain;
  tokenDomain: VectorDomain;
  domainSeparators: { vault10143: Hex; vault143: Hex; token10143: Hex };
  authenticate: { message: string; eip191Hash: Hex; payload: Hex; sig: Hex };
  structs: Record<string, StructVector>;
}

/** Research api-conventions Appendix A, verbatim. */
export const A: AppendixA = JSON.parse(
  readFileSync(new URL('../vectors/appendix-a.json', import.meta.url), 'utf8'),
);

/** Property-test run count (CI and soak runs raise it). */
export const RUNS = Number(process.env.FC_NUM_RUNS ?? 200);

const settings = {
  vaultName: A.vaultDomain.name,
  vaultAddress: A.vaultDomain.verifyingContract,
  tokenName: A.tokenDomain.name,
  tokenAddress: A.tokenDomain.verifyingContract,
};

/** The Appendix A domains as a testnet venue (chain 10143, token version "1"). */
export const testnet = createSigningContext({ network: 'testnet', ...settings });
/** The same names and addresses on mainnet (chain 143, token version "2"). */
export const mainnet = createSigningContext({ network: 'mainnet', ...settings });

/** A vector message (decimal strings, checksummed addresses) as our decoded struct. */
export function structFromMessage<K extends StructKind>(
  kind: K,
  message: Record<string, string | number | boolean>,
): StructTypes[K] {
  const out: Record<string, unknown> = {};
  for (const [name, type] of STRUCT_DEFS[kind].fields) {
    const v = message[name];
    if (v === undefined) throw new Error(`vector ${kind} lacks ${name}`);
    out[name] = convert(type, v);
  }
  return out as unknown as StructTypes[K];
}

function convert(type: FieldType, v: string | number | boolean): unknown {
  switch (type) {
    case 'address':
    case 'bytes16':
      return String(v).toLowerCase();
    case 'bool':
      return v;
    case 'uint8':
    case 'uint32':
      return Number(v);
    default:
      return BigInt(v);
  }
}

/** viem's `types` for a struct, from our field list. */
export function viemTypes(kind: StructKind): Record<string, { name: string; type: string }[]> {
  return { [kind]: STRUCT_DEFS[kind].fields.map(([name, type]) => ({ name, type })) };
}

/** viem typed data for a struct under a domain. */
export function typedData<K extends StructKind>(
  domain: Eip712Domain,
  kind: K,
  struct: StructTypes[K],
) {
  return {
    domain: {
      name: domain.name,
      version: domain.version,
      chainId: Number(domain.chainId),
      verifyingContract: domain.verifyingContract as Hex,
    },
    types: viemTypes(kind),
    primaryType: kind,
    message: struct as unknown as Record<string, unknown>,
  } as const;
}

/** Hex of bytes (test-side, independent of the code under test). */
export function hex(bytes: Uint8Array): Hex {
  return `0x${Buffer.from(bytes).toString('hex')}`;
}

/** Bytes of hex (test-side). */
export function bytes(h: string): Uint8Array {
  return new Uint8Array(Buffer.from(h.slice(2), 'hex'));
}

/** A payload with one byte replaced. */
export function withByte(payload: string, index: number, value: number): Hex {
  const b = bytes(payload);
  b[index] = value;
  return hex(b);
}

/** A payload with a 32-byte word (1-based) replaced by `value` (a bigint). */
export function withWord(payload: string, word: number, value: bigint): Hex {
  const b = bytes(payload);
  b.set(bytes(`0x${value.toString(16).padStart(64, '0')}`), 1 + 32 * (word - 1));
  return hex(b);
}

/** Narrowing helper for tests: the struct of a decoded payload of a known kind. */
export function structOf<K extends StructKind>(payload: DecodedPayload, kind: K): StructTypes[K] {
  if (payload.kind !== kind) throw new Error(`expected ${kind}, got ${payload.kind}`);
  return payload.struct as StructTypes[K];
}

/** The Appendix A struct kinds with their vectors. */
export const VECTOR_KINDS = Object.keys(A.structs) as StructKind[];
