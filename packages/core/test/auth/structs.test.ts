/**
 * Struct codecs: type strings and typehashes as research 7.3 / protocol.md section 2, every
 * Appendix A payload reproduced byte for byte by the encoder and decoded back to its message,
 * and every non-canonical payload refused with 4000 naming the check.
 */
import { readFileSync } from 'node:fs';
import { keccak256, toBytes } from 'viem';
import { describe, expect, it } from 'vitest';
import {
  DISCRIMINATOR,
  decodePayload,
  encodePayload,
  encodePayloadHex,
  ORDER_FLAGS,
  STRUCT_DEFS,
  type StructKind,
  structDefOf,
  structHash,
} from '../../src/auth/index.js';
import { A, bytes, hex, structFromMessage, VECTOR_KINDS, withByte, withWord } from './fixtures.js';

const TYPE_STRINGS: Record<Exclude<StructKind, 'Authenticate'>, string> = {
  Order:
    'Order(address account,uint32 market,bool isBuy,uint8 orderType,uint8 timeInForce,uint256 price,uint256 triggerPrice,uint256 quantity,uint32 flags,uint64 expiry,bytes16 cloid,bytes16 parentCloid,uint64 nonce,uint64 deadline)',
  Cancel:
    'Cancel(address account,uint32 market,uint64 orderId,bytes16 cloid,uint64 nonce,uint64 deadline)',
  Withdrawal:
    'Withdrawal(address owner,uint256 amount,uint32 market,uint32 flags,uint64 nonce,uint64 deadline)',
  UpdateLeverage:
    'UpdateLeverage(address account,uint32 market,uint32 leverage,uint32 flags,uint64 nonce,uint64 deadline)',
  Permit: 'Permit(address owner,address spender,uint256 value,uint256 nonce,uint256 deadline)',
  Replace:
    'Replace(address account,uint32 market,uint64 orderId,bytes16 origCloid,uint256 price,uint256 triggerPrice,uint256 quantity,bytes16 cloid,uint64 nonce,uint64 deadline)',
  Deposit:
    'Deposit(address owner,uint256 amount,uint32 market,uint32 flags,uint64 nonce,uint64 deadline)',
  MarginTransfer:
    'MarginTransfer(address owner,uint256 amount,uint32 market,uint32 flags,uint64 nonce,uint64 deadline)',
  CancelAll: 'CancelAll(address account,uint32 market,uint64 nonce,uint64 deadline)',
  ClaimLiquidation:
    'ClaimLiquidation(address account,uint64 auctionId,uint256 quantity,uint256 maxPrice,uint64 nonce,uint64 deadline)',
};

// Research 7.3 (published there); CancelAll and ClaimLiquidation are not, so viem's keccak of the
// protocol.md type string is the reference for those two.
const TYPE_HASHES: Record<Exclude<StructKind, 'Authenticate'>, string> = {
  Order: '0x5786afc8045b889d14c36b9e80f38326c9104dd9b9f8e346ae1a4d2e10ba1b41',
  Cancel: '0xfc789d0cf90b16b3286b19725386f7544ee2ccd0b0d78788dcb576e5675a7009',
  Replace: '0x1ba093d16c53354d4c22e047628f98bd8586b5092fcbc177e6795a3f8d259cb1',
  Withdrawal: '0xd82da20c57597051ee7aa54de52cf2a9b1ad8246385c7451a70d393abeea5b7c',
  UpdateLeverage: '0x68e1dfed4305d7e668f449fc18fe40cc2e7c19d2954326e26a4ef63b2fb691b9',
  Permit: '0x6e71edae12b1b97f4d1f60370fef10105fa2faae0126114a169c64845d6126c9',
  Deposit: '0x46b207ddb65c65c87ed5410df78ae0671d1de8b4c25a7e6e587bb5218ab62947',
  MarginTransfer: '0xe2e7b287a7257d1509e6cf944a5b2ac721e66f94df91e94e2270853f6e0b3192',
  CancelAll: keccak256(toBytes(TYPE_STRINGS.CancelAll)),
  ClaimLiquidation: keccak256(toBytes(TYPE_STRINGS.ClaimLiquidation)),
};

const LENGTHS: Record<StructKind, number> = {
  Order: 449,
  Cancel: 193,
  Withdrawal: 193,
  UpdateLeverage: 193,
  Permit: 161,
  Replace: 321,
  Deposit: 193,
  MarginTransfer: 193,
  Authenticate: 97,
  CancelAll: 129,
  ClaimLiquidation: 193,
};

const ORDER = A.structs.Order!.payload;

function refusal(payload: unknown) {
  const r = decodePayload(payload);
  if (r.ok) throw new Error('expected a refusal');
  return r.error;
}

describe('struct table', () => {
  it('has the eleven discriminators of protocol.md section 2, 0x00 reserved', () => {
    expect(DISCRIMINATOR).toEqual({
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
    });
    expect(structDefOf(0)).toBeUndefined();
    expect(structDefOf(0x0c)).toBeUndefined();
    for (const [kind, d] of Object.entries(DISCRIMINATOR)) expect(structDefOf(d)?.kind).toBe(kind);
  });

  it.each(Object.keys(TYPE_STRINGS) as (keyof typeof TYPE_STRINGS)[])(
    '%s: type string and typehash as published',
    (kind) => {
      const def = STRUCT_DEFS[kind];
      expect(def.typeString).toBe(TYPE_STRINGS[kind]);
      expect(hex(def.typeHash!)).toBe(TYPE_HASHES[kind]);
    },
  );

  it('Authenticate is personal_sign: no EIP-712 type', () => {
    expect(STRUCT_DEFS.Authenticate.scheme).toBe('personal');
    expect(STRUCT_DEFS.Authenticate.typeString).toBeUndefined();
    expect(STRUCT_DEFS.Authenticate.typeHash).toBeUndefined();
    expect(() => structHash(bytes(A.authenticate.payload))).toThrow(RangeError);
  });

  it('Permit signs under the token domain, the rest under the vault domain', () => {
    for (const def of Object.values(STRUCT_DEFS)) {
      const scheme =
        def.kind === 'Permit' ? 'token' : def.kind === 'Authenticate' ? 'personal' : 'vault';
      expect(def.scheme, def.kind).toBe(scheme);
    }
  });

  it.each(Object.entries(LENGTHS))('%s payloads are %i bytes', (kind, length) => {
    expect(STRUCT_DEFS[kind as StructKind].length).toBe(length);
  });

  it('the signer field is owner for the token-moving structs, account otherwise', () => {
    const owners = Object.values(STRUCT_DEFS)
      .filter((d) => d.signerField === 'owner')
      .map((d) => d.kind);
    expect(owners.sort()).toEqual(['Deposit', 'MarginTransfer', 'Permit', 'Withdrawal']);
  });
});

describe('the struct table of docs/getting-started.md', () => {
  // Clients sign from that table (the spec is not shipped): every row's discriminator, type
  // string and domain must be the code's, and every struct must have its row.
  const guide = readFileSync(
    new URL('../../../../docs/getting-started.md', import.meta.url),
    'utf8',
  );
  const rows = [
    ...guide.matchAll(/^\| `(\w+)` +\| `(0x[0-9a-f]{2})` +\| ([^|]+?) +\| ([^|]+?) +\|/gm),
  ];

  it('lists every struct once, in discriminator order', () => {
    expect(rows.map((r) => r[1])).toEqual(Object.keys(DISCRIMINATOR));
  });

  it.each(rows.map((r) => [r[1], r[2], r[3], r[4]] as const))(
    '%s: discriminator %s, type string and domain',
    (kind, discriminator, typeString, domain) => {
      const def = STRUCT_DEFS[kind as StructKind];
      expect(Number(discriminator)).toBe(def.discriminator);
      if (def.scheme === 'personal') {
        expect(domain).toBe('none (personal_sign)');
        expect(typeString).toMatch(/^none: `personal_sign`/);
      } else {
        expect(domain).toBe(def.scheme);
        expect(typeString).toBe(`\`${def.typeString}\``);
      }
    },
  );
});

describe('Appendix A payloads', () => {
  it.each(VECTOR_KINDS)('%s: encode(message) is the vector payload, byte for byte', (kind) => {
    const v = A.structs[kind]!;
    expect(encodePayloadHex(kind, structFromMessage(kind, v.message))).toBe(v.payload);
  });

  it.each(VECTOR_KINDS)('%s: decode(payload) is the vector message', (kind) => {
    const v = A.structs[kind]!;
    const r = decodePayload(v.payload);
    expect(r).toEqual({ ok: true, value: { kind, struct: structFromMessage(kind, v.message) } });
  });

  it.each(VECTOR_KINDS)('%s: structHash(payload) = keccak(typeHash || payload[1:])', (kind) => {
    const v = A.structs[kind]!;
    expect(hex(structHash(bytes(v.payload)))).toBe(v.structHash);
  });

  it('Authenticate: encode and decode the 97-byte payload', () => {
    const struct = {
      account: A.signer.toLowerCase(),
      nonce: 1767225600000n,
      deadline: 1767225900n,
    };
    expect(encodePayloadHex('Authenticate', struct)).toBe(A.authenticate.payload);
    expect(decodePayload(A.authenticate.payload)).toEqual({
      ok: true,
      value: { kind: 'Authenticate', struct },
    });
  });

  it('decoded values: lowercase addresses and bytes16, numbers for uint8/uint32, bigints above', () => {
    const r = decodePayload(ORDER);
    if (!r.ok || r.value.kind !== 'Order') throw new Error('Order expected');
    const o = r.value.struct;
    expect(o.account).toBe('0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266');
    expect(typeof o.market).toBe('number');
    expect(typeof o.orderType).toBe('number');
    expect(typeof o.flags).toBe('number');
    expect(o.price).toBe(65000500000000000000000n);
    expect(o.nonce).toBe(1767225600000n);
    expect(o.cloid).toBe('0x0000000000000000000000000000002a');
  });
});

describe('decoding refuses malformed payloads with 4000', () => {
  it.each([
    ['a non-string', 42, 'payload must be a 0x-prefixed hex string'],
    ['missing 0x', ORDER.slice(2), 'payload must start with 0x'],
    ['odd-length hex', `${ORDER}0`, 'payload has an odd number of hex digits'],
    ['a non-hex digit', `${ORDER.slice(0, -2)}zz`, 'payload has a non-hex character at offset 898'],
    ['the empty payload', '0x', 'payload is empty'],
    ['discriminator 0x00', `0x00${ORDER.slice(4)}`, 'payload discriminator 0x00 is reserved'],
    ['discriminator 0x0c', `0x0c${ORDER.slice(4)}`, 'unknown payload discriminator 0x0c'],
    ['discriminator 0xff', `0xff${ORDER.slice(4)}`, 'unknown payload discriminator 0xff'],
    ['a truncated payload', ORDER.slice(0, -2), 'bad payload length: expected 449 bytes, got 448'],
    ['a padded payload', `${ORDER}00`, 'bad payload length: expected 449 bytes, got 450'],
    ['the discriminator alone', '0x01', 'bad payload length: expected 449 bytes, got 1'],
  ])('%s', (_, payload, message) => {
    expect(refusal(payload)).toEqual({ code: 4000, message: `INVALID_REQUEST: ${message}` });
  });

  it('a dirty address word (non-zero high bytes)', () => {
    expect(refusal(withByte(ORDER, 1, 1)).message).toBe(
      'INVALID_REQUEST: Order.account (word 1): address word must have 12 zero high bytes',
    );
    expect(refusal(withByte(ORDER, 12, 0x80)).code).toBe(4000);
  });

  it('a bool word of 2, and a bool with a dirty high byte', () => {
    expect(refusal(withWord(ORDER, 3, 2n)).message).toBe(
      'INVALID_REQUEST: Order.isBuy (word 3): bool word must be 0 or 1',
    );
    expect(refusal(withByte(ORDER, 1 + 64, 1)).message).toContain('Order.isBuy (word 3)');
  });

  it('uint overflows name the field and the width', () => {
    expect(refusal(withWord(ORDER, 2, 1n << 32n)).message).toBe(
      'INVALID_REQUEST: Order.market (word 2): uint32 overflow: value does not fit 32 bits',
    );
    expect(refusal(withWord(ORDER, 4, 256n)).message).toContain('Order.orderType (word 4): uint8');
    expect(refusal(withWord(ORDER, 13, 1n << 64n)).message).toContain(
      'Order.nonce (word 13): uint64',
    );
  });

  it('the widest values of every integer type decode exactly', () => {
    let p = withWord(ORDER, 2, (1n << 32n) - 1n);
    p = withWord(p, 4, 255n);
    p = withWord(p, 6, (1n << 256n) - 1n);
    p = withWord(p, 13, (1n << 64n) - 1n);
    const r = decodePayload(p);
    if (!r.ok || r.value.kind !== 'Order') throw new Error('Order expected');
    expect(r.value.struct.market).toBe(4294967295);
    expect(r.value.struct.orderType).toBe(255);
    expect(r.value.struct.price).toBe((1n << 256n) - 1n);
    expect(r.value.struct.nonce).toBe(18446744073709551615n);
  });

  it('a bytes16 word with a non-zero low byte', () => {
    expect(refusal(withByte(ORDER, 1 + 32 * 10 + 31, 1)).message).toBe(
      'INVALID_REQUEST: Order.cloid (word 11): bytes16 word must have 16 zero low bytes (left-aligned)',
    );
    // The first low byte (byte 16 of the word) counts too: a 17-byte value is not a bytes16.
    expect(refusal(withByte(ORDER, 1 + 32 * 10 + 16, 1)).message).toBe(
      'INVALID_REQUEST: Order.cloid (word 11): bytes16 word must have 16 zero low bytes (left-aligned)',
    );
  });

  it('Order: flag bits 0-3 are defined, bit 4 and bit 31 are refused', () => {
    const all =
      ORDER_FLAGS.isolated | ORDER_FLAGS.reduceOnly | ORDER_FLAGS.postOnly | ORDER_FLAGS.managed;
    expect(decodePayload(withWord(ORDER, 9, BigInt(all))).ok).toBe(true);
    expect(refusal(withWord(ORDER, 9, 0x10n)).message).toBe(
      'INVALID_REQUEST: Order.flags: unused flag bits set (0x10; defined bits 0xf)',
    );
    expect(refusal(withWord(ORDER, 9, 0x8000000fn)).message).toContain('(0x80000000;');
  });

  it.each(['Withdrawal', 'Deposit', 'MarginTransfer', 'UpdateLeverage'] as const)(
    '%s: only flags bit 0 is defined',
    (kind) => {
      const p = A.structs[kind]!.payload;
      expect(decodePayload(withWord(p, 4, 1n)).ok).toBe(true);
      expect(decodePayload(withWord(p, 4, 0n)).ok).toBe(true);
      expect(refusal(withWord(p, 4, 2n)).message).toBe(
        `INVALID_REQUEST: ${kind}.flags: unused flag bits set (0x2; defined bits 0x1)`,
      );
    },
  );

  it('refuses a payload this endpoint does not accept, before the length check', () => {
    const w = A.structs.Withdrawal!.payload;
    const r = decodePayload(`${w}00`, { discriminator: DISCRIMINATOR.Deposit });
    expect(r).toEqual({
      ok: false,
      error: {
        code: 4000,
        message:
          'INVALID_REQUEST: payload 0x03 (Withdrawal) is not accepted here; expected 0x07 (Deposit)',
      },
    });
    expect(decodePayload(w, { discriminator: [0x02, 0x03] }).ok).toBe(true);
  });
});

describe('encoding', () => {
  const order = structFromMessage('Order', A.structs.Order!.message);

  it('accepts checksummed addresses and normalises nothing else', () => {
    expect(encodePayloadHex('Order', { ...order, account: A.signer })).toBe(ORDER);
  });

  it.each([
    [
      'a short address',
      { account: '0x1234' },
      'Order.account: must be 0x followed by 40 hex digits',
    ],
    ['a uint32 overflow', { market: 2 ** 32 }, 'Order.market: uint32 out of range: 4294967296'],
    ['a negative uint', { price: -1n }, 'Order.price: uint256 out of range: -1'],
    ['an unsafe number', { market: 2 ** 53 }, 'Order.market: must be a bigint or a safe integer'],
    ['a uint64 overflow', { nonce: 1n << 64n }, 'Order.nonce: uint64 out of range'],
    ['a short bytes16', { cloid: '0x2a' }, 'Order.cloid: must be 0x followed by 32 hex digits'],
    ['an unused flag bit', { flags: 16 }, 'Order.flags: only bits 0xf are defined'],
  ])('throws RangeError for %s', (_, patch, message) => {
    expect(() => encodePayload('Order', { ...order, ...patch } as typeof order)).toThrow(message);
  });

  it('throws for a non-boolean bool', () => {
    expect(() => encodePayload('Order', { ...order, isBuy: 1 as unknown as boolean })).toThrow(
      'Order.isBuy: must be a boolean',
    );
  });
});
