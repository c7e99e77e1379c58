/**
 * The signed structs of protocol.md section 2 (layouts of research 7.3): one field list per
 * struct drives decoding, encoding, the EIP-712 type string and the typehash. A payload is the
 * discriminator byte followed by one 32-byte ABI word per field, in field order, so
 * `hashStruct = keccak256(typeHash || payload[1:])` is computed from the received bytes.
 *
 * @module
 */
import { keccak_256 } from '@noble/hashes/sha3.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';
import { type Rejection, reject } from '../errors.js';
import { bytesToHex0x, hexToBytesStrict } from './hex.js';

/** Word types used by the signed structs (all static). */
export type FieldType = 'address' | 'uint8' | 'uint32' | 'uint64' | 'uint256' | 'bool' | 'bytes16';

/** Which signing scheme and domain a struct uses. */
export type StructDomain = 'vault' | 'token' | 'personal';

/** A struct definition. */
export interface StructDef {
  readonly discriminator: number;
  readonly name: string;
  readonly domain: StructDomain;
  readonly fields: readonly (readonly [string, FieldType])[];
  /** Mask of the defined bits of a `flags` field (others must be zero). */
  readonly flagBits: number;
  /** `Name(type field,...)`. */
  readonly typeString: string;
  /** keccak256 of the type string (unused for personal_sign structs). */
  readonly typeHash: Uint8Array;
  /** Payload length in bytes: 1 + 32 x fields. */
  readonly length: number;
}

function def(
  discriminator: number,
  name: string,
  domain: StructDomain,
  fields: readonly (readonly [string, FieldType])[],
  flagBits = 0,
): StructDef {
  const typeString = `${name}(${fields.map(([n, t]) => `${t} ${n}`).join(',')})`;
  return {
    discriminator,
    name,
    domain,
    fields,
    flagBits,
    typeString,
    typeHash: keccak_256(utf8ToBytes(typeString)),
    length: 1 + 32 * fields.length,
  };
}

/** Discriminators (protocol.md section 2). */
export const Discriminator = {
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
} as const;

/** Every struct, by discriminator. */
export const STRUCTS: ReadonlyMap<number, StructDef> = new Map(
  [
    def(
      0x01,
      'Order',
      'vault',
      [
        ['account', 'address'],
        ['market', 'uint32'],
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
        ['nonce', 'uint64'],
        ['deadline', 'uint64'],
      ],
      0b1111,
    ),
    def(0x02, 'Cancel', 'vault', [
      ['account', 'address'],
      ['market', 'uint32'],
      ['orderId', 'uint64'],
      ['cloid', 'bytes16'],
      ['nonce', 'uint64'],
      ['deadline', 'uint64'],
    ]),
    def(
      0x03,
      'Withdrawal',
      'vault',
      [
        ['owner', 'address'],
        ['amount', 'uint256'],
        ['market', 'uint32'],
        ['flags', 'uint32'],
        ['nonce', 'uint64'],
        ['deadline', 'uint64'],
      ],
      0b1,
    ),
    def(
      0x04,
      'UpdateLeverage',
      'vault',
      [
        ['account', 'address'],
        ['market', 'uint32'],
        ['leverage', 'uint32'],
        ['flags', 'uint32'],
        ['nonce', 'uint64'],
        ['deadline', 'uint64'],
      ],
      0b1,
    ),
    def(0x05, 'Permit', 'token', [
      ['owner', 'address'],
      ['spender', 'address'],
      ['value', 'uint256'],
      ['nonce', 'uint256'],
      ['deadline', 'uint256'],
    ]),
    def(0x06, 'Replace', 'vault', [
      ['account', 'address'],
      ['market', 'uint32'],
      ['orderId', 'uint64'],
      ['origCloid', 'bytes16'],
      ['price', 'uint256'],
      ['triggerPrice', 'uint256'],
      ['quantity', 'uint256'],
      ['cloid', 'bytes16'],
      ['nonce', 'uint64'],
      ['deadline', 'uint64'],
    ]),
    def(
      0x07,
      'Deposit',
      'vault',
      [
        ['owner', 'address'],
        ['amount', 'uint256'],
        ['market', 'uint32'],
        ['flags', 'uint32'],
        ['nonce', 'uint64'],
        ['deadline', 'uint64'],
      ],
      0b1,
    ),
    def(
      0x08,
      'MarginTransfer',
      'vault',
      [
        ['owner', 'address'],
        ['amount', 'uint256'],
        ['market', 'uint32'],
        ['flags', 'uint32'],
        ['nonce', 'uint64'],
        ['deadline', 'uint64'],
      ],
      0b1,
    ),
    def(0x09, 'Authenticate', 'personal', [
      ['account', 'address'],
      ['nonce', 'uint64'],
      ['deadline', 'uint64'],
    ]),
    def(0x0a, 'CancelAll', 'vault', [
      ['account', 'address'],
      ['market', 'uint32'],
      ['nonce', 'uint64'],
      ['deadline', 'uint64'],
    ]),
    def(0x0b, 'ClaimLiquidation', 'vault', [
      ['account', 'address'],
      ['auctionId', 'uint64'],
      ['quantity', 'uint256'],
      ['maxPrice', 'uint256'],
      ['nonce', 'uint64'],
      ['deadline', 'uint64'],
    ]),
  ].map((d) => [d.discriminator, d] as const),
);

/** A decoded field value: addresses and bytes16 as lowercase hex, integers as bigint. */
export type FieldValue = string | bigint | boolean;

/** A decoded payload: the struct and its field values by name. */
export interface DecodedStruct {
  readonly def: StructDef;
  readonly values: Readonly<Record<string, FieldValue>>;
  /** The payload bytes (discriminator first). */
  readonly bytes: Uint8Array;
}

const BITS: Record<Exclude<FieldType, 'address' | 'bool' | 'bytes16'>, number> = {
  uint8: 8,
  uint32: 32,
  uint64: 64,
  uint256: 256,
};

function wordToBigint(word: Uint8Array): bigint {
  let v = 0n;
  for (let i = 0; i < word.length; i++) v = (v << 8n) | BigInt(word[i] as number);
  return v;
}

/** Why a word is not canonical for its type. */
interface WordError {
  readonly error: string;
}

/** Decodes one word, or explains why it is not canonical for its type. */
function decodeWord(type: FieldType, word: Uint8Array): FieldValue | WordError {
  if (type === 'bytes16') {
    for (let i = 16; i < 32; i++)
      if (word[i] !== 0) return { error: 'bytes16 word has non-zero low 16 bytes' };
    return bytesToHex0x(word.subarray(0, 16));
  }
  const v = wordToBigint(word);
  if (type === 'address') {
    if (v >> 160n !== 0n) return { error: 'address word has non-zero high 12 bytes' };
    return bytesToHex0x(word.subarray(12));
  }
  if (type === 'bool') {
    if (v > 1n) return { error: `bool word is ${v}, not 0 or 1` };
    return v === 1n;
  }
  const bits = BITS[type];
  if (bits < 256 && v >> BigInt(bits) !== 0n)
    return { error: `${type} word overflows ${bits} bits` };
  return v;
}

/** Result of {@link decodePayload}. */
export type DecodeResult = { ok: true; struct: DecodedStruct } | { ok: false; error: Rejection };

/**
 * Decodes and validates a payload: hex, known discriminator (optionally one of `allowed`), exact
 * length, canonical words and zero unused flag bits. Every failure is 4000 and names the check.
 */
export function decodePayload(payloadHex: unknown, allowed?: readonly number[]): DecodeResult {
  const fail = (detail: string): DecodeResult => ({
    ok: false,
    error: reject('INVALID_REQUEST', detail),
  });
  const bytes = hexToBytesStrict(payloadHex);
  if (typeof bytes === 'string') return fail(`payload ${bytes}`);
  if (bytes.length === 0) return fail('payload is empty');
  const d = bytes[0] as number;
  const sdef = STRUCTS.get(d);
  if (sdef === undefined)
    return fail(`unknown payload discriminator 0x${d.toString(16).padStart(2, '0')}`);
  if (allowed !== undefined && !allowed.includes(d)) {
    return fail(
      `payload discriminator 0x${d.toString(16).padStart(2, '0')} (${sdef.name}) is not accepted here; expected ${allowed.map((a) => `0x${a.toString(16).padStart(2, '0')}`).join(' or ')}`,
    );
  }
  if (bytes.length !== sdef.length) {
    return fail(`bad payload length: ${sdef.name} is ${sdef.length} bytes, got ${bytes.length}`);
  }
  const values: Record<string, FieldValue> = Object.create(null);
  for (let i = 0; i < sdef.fields.length; i++) {
    const [name, type] = sdef.fields[i] as readonly [string, FieldType];
    const v = decodeWord(type, bytes.subarray(1 + 32 * i, 33 + 32 * i));
    if (typeof v === 'object') return fail(`word ${i + 1} (${name}): ${v.error}`);
    values[name] = v;
  }
  const flags = values.flags;
  if (typeof flags === 'bigint' && (flags & ~BigInt(sdef.flagBits)) !== 0n) {
    return fail(
      `word ${sdef.fields.findIndex(([n]) => n === 'flags') + 1} (flags): unused flag bits set (0x${flags.toString(16)})`,
    );
  }
  return { ok: true, struct: { def: sdef, values, bytes } };
}

function encodeWord(type: FieldType, value: FieldValue): Uint8Array {
  const word = new Uint8Array(32);
  if (type === 'bytes16' || type === 'address') {
    const b = hexToBytesStrict(value);
    const size = type === 'bytes16' ? 16 : 20;
    if (typeof b === 'string' || b.length !== size)
      throw new TypeError(`${type} value must be ${size} bytes of hex`);
    word.set(b, type === 'bytes16' ? 0 : 12);
    return word;
  }
  let v = typeof value === 'boolean' ? (value ? 1n : 0n) : BigInt(value);
  if (v < 0n) throw new RangeError(`${type} value is negative`);
  const bits = type === 'bool' ? 1 : BITS[type];
  if (v >> BigInt(bits) !== 0n) throw new RangeError(`${type} value overflows`);
  for (let i = 31; i >= 0 && v > 0n; i--) {
    word[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return word;
}

/** Encodes struct values (integers may be given as number or bigint) into payload bytes. */
export function encodePayload(
  discriminator: number,
  values: Readonly<Record<string, FieldValue | number>>,
): Uint8Array {
  const sdef = STRUCTS.get(discriminator);
  if (sdef === undefined) throw new RangeError(`unknown discriminator ${discriminator}`);
  const out = new Uint8Array(sdef.length);
  out[0] = discriminator;
  sdef.fields.forEach(([name, type], i) => {
    const v = values[name];
    if (v === undefined) throw new TypeError(`missing field ${name}`);
    out.set(encodeWord(type, typeof v === 'number' ? BigInt(v) : v), 1 + 32 * i);
  });
  return out;
}

/** `keccak256(typeHash || payload[1:])`: the EIP-712 hashStruct of a decoded payload. */
export function structHash(struct: DecodedStruct): Uint8Array {
  const h = keccak_256.create();
  h.update(struct.def.typeHash);
  h.update(struct.bytes.subarray(1));
  return h.digest();
}
