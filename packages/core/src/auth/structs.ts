/**
 * The signed structs of protocol.md section 2 (byte layouts and type strings of research 7.3).
 *
 * A payload is `discriminator || word_1 || ... || word_n`, one 32-byte ABI word per field in
 * EIP-712 field order. One field list per struct drives decoding, encoding, the EIP-712 type
 * string and the typehash, so they cannot drift apart; each list is also checked at compile time
 * against the struct's interface.
 *
 * Decoded values: `address` and `bytes16` are lowercase `0x` hex, `bool` is a boolean, `uint8`
 * and `uint32` are numbers (always exact), `uint64` and `uint256` are bigints.
 *
 * Decoding is strict and total: it never throws, and every refusal is 4000 naming the check, so a
 * payload maps to exactly one struct value and back (research 7.1, rule 3).
 *
 * @module
 */
import { keccak_256 } from '@noble/hashes/sha3.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { type Rejection, reject } from '../errors.js';
import { bigintOf, hexOf, parseHex, toHex } from './hex.js';

/** The ABI word types the signed structs use (all static). */
export type FieldType = 'address' | 'bool' | 'uint8' | 'uint32' | 'uint64' | 'uint256' | 'bytes16';

/** The decoded TypeScript value of a field type. */
export type FieldValue<T extends FieldType> = T extends 'address' | 'bytes16'
  ? string
  : T extends 'bool'
    ? boolean
    : T extends 'uint8' | 'uint32'
      ? number
      : bigint;

/** An ordered field list: `[name, type]` per 32-byte word. */
export type FieldList = readonly (readonly [name: string, type: FieldType])[];

/** How a struct is signed: EIP-712 under the vault or token domain, or EIP-191 personal_sign. */
export type SigningScheme = 'vault' | 'token' | 'personal';

/** `0x01` Order (place), vault domain. */
export interface OrderStruct {
  /** Signer; on the trading socket also the authenticated wallet. */
  readonly account: string;
  /** Instrument id. */
  readonly market: number;
  readonly isBuy: boolean;
  /** 0 Limit, 1 StopLimit, 2 StopLoss, 3 TakeProfit. */
  readonly orderType: number;
  /** 0 GTC, 1 GTD, 2 IOC, 3 FOK, 4 DAY. */
  readonly timeInForce: number;
  /** Price x 10^18. */
  readonly price: bigint;
  /** Trigger price x 10^18 (0 for Limit). */
  readonly triggerPrice: bigint;
  /** Quantity x 10^quantityDecimals. */
  readonly quantity: bigint;
  /** {@link ORDER_FLAGS} bits; other bits are refused. */
  readonly flags: number;
  /** GTD expiry in seconds, 0 otherwise. */
  readonly expiry: bigint;
  /** Client order id, zero for none. */
  readonly cloid: string;
  /** Entry order a managed TP/SL attaches to, zero for the position. */
  readonly parentCloid: string;
  /** Wallet nonce in milliseconds. */
  readonly nonce: bigint;
  /** Deadline in seconds. */
  readonly deadline: bigint;
}

/** `0x02` Cancel, vault domain: target by `orderId` or `cloid`. */
export interface CancelStruct {
  readonly account: string;
  readonly market: number;
  readonly orderId: bigint;
  readonly cloid: string;
  readonly nonce: bigint;
  readonly deadline: bigint;
}

/** `0x03` Withdrawal, vault domain. */
export interface WithdrawalStruct {
  readonly owner: string;
  /** Collateral x 10^6. */
  readonly amount: bigint;
  /** 0 for cross, the instrument id for isolated. */
  readonly market: number;
  /** Bit 0: isolated. */
  readonly flags: number;
  readonly nonce: bigint;
  readonly deadline: bigint;
}

/** `0x04` UpdateLeverage, vault domain. */
export interface UpdateLeverageStruct {
  readonly account: string;
  readonly market: number;
  /** Leverage x 100 (1000 is 10x). */
  readonly leverage: number;
  /** Bit 0: isolated. */
  readonly flags: number;
  readonly nonce: bigint;
  readonly deadline: bigint;
}

/** `0x05` ERC-2612 Permit, token domain. */
export interface PermitStruct {
  readonly owner: string;
  /** Must be the vault. */
  readonly spender: string;
  /** Collateral x 10^6. */
  readonly value: bigint;
  /** The token's `nonces(owner)`, not a millisecond nonce. */
  readonly nonce: bigint;
  /** Seconds. */
  readonly deadline: bigint;
}

/** `0x06` Replace (amend), vault domain. */
export interface ReplaceStruct {
  readonly account: string;
  readonly market: number;
  readonly orderId: bigint;
  readonly origCloid: string;
  readonly price: bigint;
  readonly triggerPrice: bigint;
  /** New total quantity. */
  readonly quantity: bigint;
  /** New client id, zero to keep the current one. */
  readonly cloid: string;
  readonly nonce: bigint;
  readonly deadline: bigint;
}

/** `0x07` Deposit authorisation, vault domain (Withdrawal's layout). */
export interface DepositStruct {
  readonly owner: string;
  readonly amount: bigint;
  readonly market: number;
  readonly flags: number;
  readonly nonce: bigint;
  readonly deadline: bigint;
}

/** `0x08` MarginTransfer, vault domain (Withdrawal's layout; flags bit 0 is the source mode). */
export interface MarginTransferStruct {
  readonly owner: string;
  readonly amount: bigint;
  readonly market: number;
  readonly flags: number;
  readonly nonce: bigint;
  readonly deadline: bigint;
}

/** `0x09` Authenticate: signed with personal_sign over `<lowercase account>:<nonce>`. */
export interface AuthenticateStruct {
  readonly account: string;
  readonly nonce: bigint;
  /** Not covered by the signed text; only checked to be a valid uint64. */
  readonly deadline: bigint;
}

/** `0x0a` CancelAll, vault domain; `market` 0 cancels in every market. */
export interface CancelAllStruct {
  readonly account: string;
  readonly market: number;
  readonly nonce: bigint;
  readonly deadline: bigint;
}

/** `0x0b` ClaimLiquidation, vault domain. */
export interface ClaimLiquidationStruct {
  readonly account: string;
  readonly auctionId: bigint;
  readonly quantity: bigint;
  /** Worst acceptable auction price x 10^18 (highest for a buy, lowest for a sell). */
  readonly maxPrice: bigint;
  readonly nonce: bigint;
  readonly deadline: bigint;
}

/** Every struct's decoded type, by kind. */
export interface StructTypes {
  Order: OrderStruct;
  Cancel: CancelStruct;
  Withdrawal: WithdrawalStruct;
  UpdateLeverage: UpdateLeverageStruct;
  Permit: PermitStruct;
  Replace: ReplaceStruct;
  Deposit: DepositStruct;
  MarginTransfer: MarginTransferStruct;
  Authenticate: AuthenticateStruct;
  CancelAll: CancelAllStruct;
  ClaimLiquidation: ClaimLiquidationStruct;
}

/** A struct name such as `Order`. */
export type StructKind = keyof StructTypes;

/** Discriminator byte of every struct (protocol.md section 2); `0x00` is reserved. */
export const DISCRIMINATOR = {
  Order: 0x01,
  Cancel: 0x02,
  Withdrawal: 0x03,
  UpdateLeverage: 0x04,
  Permit: 0x05,
  Replace: 0x06,
  Deposit: 0x07,
  MarginTransfer: 0x08,
  Authenticate: 0x09,
  CancelAll: 0x0a,
  ClaimLiquidation: 0x0b,
} as const satisfies Record<StructKind, number>;

/** A known discriminator byte. */
export type Discriminator = (typeof DISCRIMINATOR)[StructKind];

/** Order `flags` bits (research 7.3.2); every other bit must be zero. */
export const ORDER_FLAGS = {
  /** Margin mode: 0 Cross, 1 Isolated. */
  isolated: 1,
  reduceOnly: 2,
  postOnly: 4,
  /** Managed TP/SL. */
  managed: 8,
} as const;

/** Margin-struct `flags` bit 0 (Withdrawal, Deposit, MarginTransfer, UpdateLeverage): isolated. */
export const MARGIN_FLAG_ISOLATED = 1;

/** A decoded payload: the struct's kind and its values. Narrow on `kind`. */
export type DecodedPayload = {
  readonly [K in StructKind]: { readonly kind: K; readonly struct: StructTypes[K] };
}[StructKind];

/** Everything about one struct, derived from its field list. */
export interface StructDef<K extends StructKind = StructKind> {
  readonly kind: K;
  readonly discriminator: Discriminator;
  readonly scheme: SigningScheme;
  readonly fields: FieldList;
  /** The field the signer must equal: `account` or `owner` (always the first field). */
  readonly signerField: 'account' | 'owner';
  /** Defined bits of the `flags` field; undefined when the struct has no flags. */
  readonly flagsMask: number | undefined;
  /** Payload length in bytes, `1 + 32 * fields.length`. */
  readonly length: number;
  /** EIP-712 `encodeType`, e.g. `Cancel(address account,...)`; undefined for personal_sign. */
  readonly typeString: string | undefined;
  /** keccak256 of {@link StructDef.typeString}; undefined for personal_sign. */
  readonly typeHash: Uint8Array | undefined;
}

// The interface a field list describes, for the compile-time check in `define`.
type StructOfFields<F extends FieldList> = { [E in F[number] as E[0]]: FieldValue<E[1]> };
type SameShape<S, F extends FieldList> = [S] extends [StructOfFields<F>]
  ? [StructOfFields<F>] extends [S]
    ? true
    : false
  : false;

function define<K extends StructKind, const F extends FieldList>(
  kind: K,
  scheme: SigningScheme,
  // A field list whose names and types do not match the interface makes this parameter `never`.
  fields: F & (SameShape<StructTypes[K], F> extends true ? unknown : never),
  flagsMask?: number,
): StructDef<K> {
  const first = fields[0]?.[0];
  if (first !== 'account' && first !== 'owner') throw new Error(`${kind}: first field must sign`);
  const typeString =
    scheme === 'personal' ? undefined : `${kind}(${fields.map(([n, t]) => `${t} ${n}`).join(',')})`;
  return Object.freeze({
    kind,
    discriminator: DISCRIMINATOR[kind],
    scheme,
    fields,
    signerField: first,
    flagsMask,
    length: 1 + 32 * fields.length,
    typeString,
    typeHash: typeString === undefined ? undefined : keccak_256(utf8ToBytes(typeString)),
  });
}

const ACCOUNT = ['account', 'address'] as const;
const OWNER = ['owner', 'address'] as const;
const MARKET = ['market', 'uint32'] as const;
const NONCE = ['nonce', 'uint64'] as const;
const DEADLINE = ['deadline', 'uint64'] as const;
const MARGIN_FIELDS = [
  OWNER,
  ['amount', 'uint256'],
  MARKET,
  ['flags', 'uint32'],
  NONCE,
  DEADLINE,
] as const;

/** Every struct definition, by kind (type strings as research 7.3 and protocol.md section 2). */
export const STRUCT_DEFS: { readonly [K in StructKind]: StructDef<K> } = Object.freeze({
  Order: define(
    'Order',
    'vault',
    [
      ACCOUNT,
      MARKET,
      ['isBuy', 'bool'],
      ['orderType', 'uint8'],
      ['timeInForce', 'uint8'],
      ['price', 'uint256'],
      ['triggerPrice', 'uint256'],
      ['quantity', 'uint256'],
      ['flags', 'uint32'],
      ['expiry', 'uint64'],
      ['cloid', 'bytes16'],
      ['parentCloid', 'bytes16'],
      NONCE,
      DEADLINE,
    ],
    ORDER_FLAGS.isolated | ORDER_FLAGS.reduceOnly | ORDER_FLAGS.postOnly | ORDER_FLAGS.managed,
  ),
  Cancel: define('Cancel', 'vault', [
    ACCOUNT,
    MARKET,
    ['orderId', 'uint64'],
    ['cloid', 'bytes16'],
    NONCE,
    DEADLINE,
  ]),
  Withdrawal: define('Withdrawal', 'vault', MARGIN_FIELDS, MARGIN_FLAG_ISOLATED),
  UpdateLeverage: define(
    'UpdateLeverage',
    'vault',
    [ACCOUNT, MARKET, ['leverage', 'uint32'], ['flags', 'uint32'], NONCE, DEADLINE],
    MARGIN_FLAG_ISOLATED,
  ),
  Permit: define('Permit', 'token', [
    OWNER,
    ['spender', 'address'],
    ['value', 'uint256'],
    ['nonce', 'uint256'],
    ['deadline', 'uint256'],
  ]),
  Replace: define('Replace', 'vault', [
    ACCOUNT,
    MARKET,
    ['orderId', 'uint64'],
    ['origCloid', 'bytes16'],
    ['price', 'uint256'],
    ['triggerPrice', 'uint256'],
    ['quantity', 'uint256'],
    ['cloid', 'bytes16'],
    NONCE,
    DEADLINE,
  ]),
  Deposit: define('Deposit', 'vault', MARGIN_FIELDS, MARGIN_FLAG_ISOLATED),
  MarginTransfer: define('MarginTransfer', 'vault', MARGIN_FIELDS, MARGIN_FLAG_ISOLATED),
  Authenticate: define('Authenticate', 'personal', [ACCOUNT, NONCE, DEADLINE]),
  CancelAll: define('CancelAll', 'vault', [ACCOUNT, MARKET, NONCE, DEADLINE]),
  ClaimLiquidation: define('ClaimLiquidation', 'vault', [
    ACCOUNT,
    ['auctionId', 'uint64'],
    ['quantity', 'uint256'],
    ['maxPrice', 'uint256'],
    NONCE,
    DEADLINE,
  ]),
});

const BY_DISCRIMINATOR: readonly (StructDef | undefined)[] = (() => {
  const table: (StructDef | undefined)[] = [];
  for (const def of Object.values(STRUCT_DEFS)) table[def.discriminator] = def;
  return table;
})();

/** The struct of a discriminator byte; undefined for `0x00` and unknown bytes. */
export function structDefOf(discriminator: number): StructDef | undefined {
  return BY_DISCRIMINATOR[discriminator];
}

/** `0x`-prefixed two-digit hex of a discriminator, for messages. */
export function discriminatorHex(discriminator: number): string {
  return `0x${discriminator.toString(16).padStart(2, '0')}`;
}

/** Result of the pure auth functions: a value, or a rejection with the spec code. */
export type AuthResult<T> =
  | { readonly ok: true; readonly value: T }
  | { readonly ok: false; readonly error: Rejection };

/** Which payloads an endpoint accepts (anything else is 4000). */
export interface ExpectedPayload {
  readonly discriminator: number | readonly number[];
}

const invalid = (detail: string): { ok: false; error: Rejection } => ({
  ok: false,
  error: reject('INVALID_REQUEST', detail),
});

function describeExpected(expected: ExpectedPayload): string {
  const list =
    typeof expected.discriminator === 'number' ? [expected.discriminator] : expected.discriminator;
  return list
    .map((d) => `${discriminatorHex(d)} (${structDefOf(d)?.kind ?? 'unknown'})`)
    .join(' or ');
}

function isExpected(expected: ExpectedPayload, discriminator: number): boolean {
  const e = expected.discriminator;
  return typeof e === 'number' ? e === discriminator : e.includes(discriminator);
}

/** First non-zero byte offset in `bytes[start, end)`, or -1. */
function nonZeroAt(bytes: Uint8Array, start: number, end: number): number {
  for (let i = start; i < end; i++) if (bytes[i] !== 0) return i;
  return -1;
}

const WIDTH_BYTES: Readonly<Record<'uint8' | 'uint32' | 'uint64' | 'uint256', number>> = {
  uint8: 1,
  uint32: 4,
  uint64: 8,
  uint256: 32,
};

/** Reads the 4 bytes at `at` as an unsigned big-endian number. */
function u32At(bytes: Uint8Array, at: number): number {
  return (
    (((bytes[at] as number) << 24) |
      ((bytes[at + 1] as number) << 16) |
      ((bytes[at + 2] as number) << 8) |
      (bytes[at + 3] as number)) >>>
    0
  );
}

/** Decodes the word at `at` for `type`, or says why it is not canonical. */
function decodeWord(
  type: FieldType,
  bytes: Uint8Array,
  at: number,
): { value: string | boolean | number | bigint } | string {
  switch (type) {
    case 'address':
      if (nonZeroAt(bytes, at, at + 12) >= 0) return 'address word must have 12 zero high bytes';
      return { value: `0x${hexOf(bytes, at + 12, at + 32)}` };
    case 'bytes16':
      if (nonZeroAt(bytes, at + 16, at + 32) >= 0)
        return 'bytes16 word must have 16 zero low bytes (left-aligned)';
      return { value: `0x${hexOf(bytes, at, at + 16)}` };
    case 'bool': {
      const last = bytes[at + 31] as number;
      if (nonZeroAt(bytes, at, at + 31) >= 0 || last > 1) return 'bool word must be 0 or 1';
      return { value: last === 1 };
    }
    default: {
      const width = WIDTH_BYTES[type];
      if (nonZeroAt(bytes, at, at + 32 - width) >= 0)
        return `${type} overflow: value does not fit ${width * 8} bits`;
      if (type === 'uint8') return { value: bytes[at + 31] as number };
      if (type === 'uint32') return { value: u32At(bytes, at + 28) };
      if (type === 'uint64')
        return { value: (BigInt(u32At(bytes, at + 24)) << 32n) | BigInt(u32At(bytes, at + 28)) };
      return { value: bigintOf(bytes, at, at + 32) };
    }
  }
}

/**
 * Validates and decodes payload bytes: known discriminator, accepted by this endpoint, exact
 * length, canonical words, zero unused flag bits. Every failure is 4000 naming the check.
 */
export function decodePayloadBytes(
  payload: Uint8Array,
  expected?: ExpectedPayload,
): AuthResult<DecodedPayload> {
  if (payload.length === 0) return invalid('payload is empty');
  const discriminator = payload[0] as number;
  const def = structDefOf(discriminator);
  if (def === undefined) {
    return invalid(
      discriminator === 0
        ? 'payload discriminator 0x00 is reserved'
        : `unknown payload discriminator ${discriminatorHex(discriminator)}`,
    );
  }
  if (expected !== undefined && !isExpected(expected, discriminator)) {
    return invalid(
      `payload ${discriminatorHex(discriminator)} (${def.kind}) is not accepted here; expected ${describeExpected(expected)}`,
    );
  }
  if (payload.length !== def.length) {
    return invalid(`bad payload length: expected ${def.length} bytes, got ${payload.length}`);
  }
  const struct: Record<string, string | boolean | number | bigint> = {};
  const fields = def.fields;
  for (let i = 0; i < fields.length; i++) {
    const [name, type] = fields[i] as readonly [string, FieldType];
    const word = decodeWord(type, payload, 1 + 32 * i);
    if (typeof word === 'string') return invalid(`${def.kind}.${name} (word ${i + 1}): ${word}`);
    struct[name] = word.value;
  }
  if (def.flagsMask !== undefined) {
    const flags = struct.flags as number;
    const unused = flags & ~def.flagsMask;
    if (unused !== 0) {
      return invalid(
        `${def.kind}.flags: unused flag bits set (0x${(unused >>> 0).toString(16)}; defined bits 0x${def.flagsMask.toString(16)})`,
      );
    }
  }
  return { ok: true, value: { kind: def.kind, struct } as unknown as DecodedPayload };
}

/** Decodes a hex payload (strict hex, then as {@link decodePayloadBytes}); failures are 4000. */
export function decodePayload(
  payloadHex: unknown,
  expected?: ExpectedPayload,
): AuthResult<DecodedPayload> {
  const bytes = parseHex(payloadHex);
  if (typeof bytes === 'string') return invalid(`payload ${bytes}`);
  return decodePayloadBytes(bytes, expected);
}

// Encoding: for clients, tests and the simulated chain. Invalid values are programming errors
// here (the caller builds the struct), so they throw instead of returning a rejection.

function wordError(kind: string, name: string, detail: string): RangeError {
  return new RangeError(`${kind}.${name}: ${detail}`);
}

function writeFixedHex(
  out: Uint8Array,
  at: number,
  value: unknown,
  size: number,
  kind: string,
  name: string,
): void {
  const bytes = parseHex(value);
  if (typeof bytes === 'string' || bytes.length !== size)
    throw wordError(kind, name, `must be 0x followed by ${2 * size} hex digits`);
  out.set(bytes, at);
}

function writeUint(
  out: Uint8Array,
  at: number,
  value: unknown,
  bits: number,
  kind: string,
  name: string,
): void {
  let v: bigint;
  if (typeof value === 'bigint') v = value;
  else if (typeof value === 'number' && Number.isSafeInteger(value)) v = BigInt(value);
  else throw wordError(kind, name, 'must be a bigint or a safe integer');
  if (v < 0n || v >> BigInt(bits) !== 0n)
    throw wordError(kind, name, `uint${bits} out of range: ${v}`);
  for (let i = at + 31; v > 0n; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
}

/** Payload bytes of a struct (throws `RangeError` naming the field for an invalid value). */
export function encodePayload<K extends StructKind>(kind: K, struct: StructTypes[K]): Uint8Array {
  const def: StructDef = STRUCT_DEFS[kind];
  const values = struct as unknown as Readonly<Record<string, unknown>>;
  const out = new Uint8Array(def.length);
  out[0] = def.discriminator;
  def.fields.forEach(([name, type], i) => {
    const at = 1 + 32 * i;
    const value = values[name];
    if (type === 'address') writeFixedHex(out, at + 12, value, 20, kind, name);
    else if (type === 'bytes16') writeFixedHex(out, at, value, 16, kind, name);
    else if (type === 'bool') {
      if (typeof value !== 'boolean') throw wordError(kind, name, 'must be a boolean');
      out[at + 31] = value ? 1 : 0;
    } else writeUint(out, at, value, WIDTH_BYTES[type] * 8, kind, name);
  });
  if (def.flagsMask !== undefined && (Number(values.flags) & ~def.flagsMask) !== 0) {
    throw wordError(kind, 'flags', `only bits 0x${def.flagsMask.toString(16)} are defined`);
  }
  return out;
}

/** Payload of a struct as the lowercase `0x` hex clients send. */
export function encodePayloadHex<K extends StructKind>(kind: K, struct: StructTypes[K]): string {
  return toHex(encodePayload(kind, struct));
}
