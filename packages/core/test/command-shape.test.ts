/**
 * Commands built from JSON or by JavaScript are checked against their declared field kinds
 * before the reducer touches the state: a malformed one is refused with 4000 naming the field,
 * and changes nothing (the same state object comes back, no housekeeping runs).
 */
import { describe, expect, it } from 'vitest';
import {
  buildInstrument,
  type Command,
  commandShapeProblem,
  createEngineState,
  type EngineEvent,
  reduce,
  stateHash,
} from '../src/index.js';
import { BTC_SETTINGS, T0, TestVenue, wallet } from '../src/testing/index.js';

const A = wallet(1);
const AUTH = { nonce: BigInt(T0), deadline: BigInt(T0 / 1000 + 60) };
const instrument = (() => {
  const r = buildInstrument(BTC_SETTINGS);
  if (!r.ok) throw new Error(r.error);
  return r.instrument;
})();

/** One well-formed command of every type (whether the engine accepts it is another matter). */
const SAMPLES: readonly Command[] = [
  {
    type: 'placeOrder',
    time: T0,
    account: A,
    order: {
      market: 1,
      isBuy: true,
      orderType: 0,
      timeInForce: 0,
      price: 65_000n * 10n ** 18n,
      triggerPrice: 0n,
      quantity: 10_000n,
      flags: 0,
      expiry: 0n,
      cloid: null,
      parentCloid: null,
    },
    auth: AUTH,
  },
  { type: 'cancelOrder', time: T0, account: A, market: 1, orderId: 1n, cloid: null },
  {
    type: 'replaceOrder',
    time: T0,
    account: A,
    market: 1,
    orderId: 1n,
    origCloid: null,
    price: 1n,
    triggerPrice: 0n,
    quantity: 1n,
    cloid: null,
  },
  { type: 'cancelAll', time: T0, account: A, market: 0 },
  { type: 'oracle', time: T0, prices: [{ market: 1, price: 65_000n * 10n ** 18n }] },
  { type: 'setInstrument', time: T0, instrument },
  { type: 'setMarketStatus', time: T0, market: 1, status: 'Paused' },
  { type: 'openAccount', time: T0, account: A },
  { type: 'deposit', time: T0, account: A, amount: 1n, target: { mode: 'Cross', market: 0 } },
  { type: 'settleDeposit', time: T0, commandId: 1, success: true, txHash: '0x01' },
  { type: 'settleWithdrawal', time: T0, commandId: 1, success: false, reason: 'no' },
  { type: 'withdraw', time: T0, account: A, amount: 1n, target: { mode: 'Isolated', market: 1 } },
  {
    type: 'transferMargin',
    time: T0,
    account: A,
    amount: 1n,
    market: 1,
    direction: 'crossToIsolated',
  },
  { type: 'updateLeverage', time: T0, account: A, market: 1, mode: 'Cross', leverage: 500 },
  { type: 'createReferralCode', time: T0, kind: 'system', maxUses: 10, code: 'ABCDEFG' },
  { type: 'revokeReferralCode', time: T0, code: 'ABCDEFG' },
  {
    type: 'applyReferral',
    time: T0,
    wallet: A,
    code: 'ABCDEFG',
    nonce: 'nonce-123',
    timestamp: T0,
  },
  { type: 'authenticate', time: T0, account: A, nonce: BigInt(T0) },
  { type: 'tick', time: T0 },
  { type: 'settleFunding', time: T0, market: 1 },
  { type: 'liquidate', time: T0, account: A, mode: 'Cross', market: 0, force: true },
  { type: 'claimLiquidation', time: T0, account: A, auctionId: 1, quantity: 1n, maxPrice: 1n },
  { type: 'bustTrade', time: T0, tradeId: 1, reason: 'test' },
  { type: 'insuranceTransfer', time: T0, direction: 'ToFeePool', amount: 1n },
  { type: 'feePayout', time: T0, account: A, amount: 1n },
  { type: 'setVenueSettings', time: T0, maxWorkingOrdersPerAccount: 1_000 },
];

/** A value of a different kind than `value`. */
function wrongKind(value: unknown): unknown {
  if (typeof value === 'bigint') return Number(value);
  if (typeof value === 'number') return BigInt(value);
  if (typeof value === 'string') return 7;
  if (typeof value === 'boolean') return 'true';
  if (value === null) return 0;
  if (Array.isArray(value)) return {};
  return 'object';
}

/** Every field path of a command below its `type` and `time`, nested objects included. */
function paths(value: Record<string, unknown>, prefix: string[] = []): string[][] {
  const out: string[][] = [];
  for (const [k, v] of Object.entries(value)) {
    if (prefix.length === 0 && (k === 'type' || k === 'time')) continue;
    const path = [...prefix, k];
    out.push(path);
    if (Array.isArray(v)) {
      v.forEach((item, i) => {
        out.push(...paths(item as Record<string, unknown>, [...path, String(i)]));
      });
    } else if (typeof v === 'object' && v !== null) {
      out.push(...paths(v as Record<string, unknown>, path));
    }
  }
  return out;
}

function withField(command: Command, path: string[], value: unknown): Command {
  const copy = structuredClone(command) as unknown as Record<string, unknown>;
  let at: Record<string, unknown> = copy;
  for (const k of path.slice(0, -1)) at = at[k] as Record<string, unknown>;
  at[path[path.length - 1] as string] = value;
  return copy as unknown as Command;
}

function refusal(events: readonly EngineEvent[]) {
  expect(events).toHaveLength(1);
  const [e] = events;
  if (e?.type !== 'outcome' || e.ok) throw new Error(`expected a refusal, got ${e?.type}`);
  return e;
}

describe('command shape', () => {
  it('has one sample per command type, and every sample is well formed', () => {
    const types = new Set(SAMPLES.map((c) => c.type));
    expect(types.size).toBe(SAMPLES.length);
    expect(types.size).toBe(26);
    for (const c of SAMPLES) expect(commandShapeProblem(c)).toBeUndefined();
  });

  it('refuses a field of the wrong kind anywhere in any command, and changes nothing', () => {
    // A state with an expiry due: a malformed command must not run due work either.
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    v.open(A);
    v.fund(A, '100000');
    v.oracle({ 'BTC-PERP': '65000' });
    v.expectOk(
      v.place(A, 'BTC-PERP', {
        side: 'Buy',
        qty: '0.1',
        price: '60000',
        tif: 'GTD',
        expiry: Math.floor(v.state.time / 1000) + 60,
      }),
    );
    const state = v.state;
    const hash = stateHash(state);
    let checked = 0;
    for (const sample of SAMPLES) {
      const later = { ...sample, time: state.time + 3_600_000 } as Command;
      for (const path of paths(later as unknown as Record<string, unknown>)) {
        const at = path.reduce<unknown>(
          (o, k) => (o as Record<string, unknown>)[k],
          later as unknown as Record<string, unknown>,
        );
        const bad = withField(later, path, wrongKind(at));
        const r = reduce(state, bad);
        const e = refusal(r.events);
        expect(e.code).toBe(4000);
        expect(e.message).toContain(`${sample.type}.${path[0]}`);
        expect(r.state).toBe(state);
        checked++;
      }
    }
    expect(stateHash(state)).toBe(hash);
    expect(checked).toBeGreaterThan(100);
  });

  it('an int field takes only safe integers, a nullable field only null or its kind', () => {
    const s = createEngineState({}, T0);
    let ints = 0;
    let nullables = 0;
    for (const sample of SAMPLES) {
      for (const path of paths(sample as unknown as Record<string, unknown>)) {
        const at = path.reduce<unknown>(
          (o, k) => (o as Record<string, unknown>)[k],
          sample as unknown as Record<string, unknown>,
        );
        const field = `${sample.type}.${path.join('.')}`.replace(/\.(\d+)\./g, '[$1].');
        if (typeof at === 'number') {
          // A fraction or an unsafe integer is a number, but not an int.
          for (const bad of [0.5, 2 ** 53]) {
            const e = refusal(reduce(s, withField(sample, path, bad)).events);
            expect(e.message).toBe(`INVALID_REQUEST: ${field} must be a safe integer, not ${bad}`);
          }
          ints++;
        }
        if (at === null) {
          // Nullable is not optional: a missing cloid is refused like a wrong one.
          const e = refusal(reduce(s, withField(sample, path, undefined)).events);
          expect(e.message).toMatch(
            new RegExp(`^INVALID_REQUEST: ${field} must be a \\w+, not undefined$`),
          );
          nullables++;
        }
      }
    }
    expect(ints).toBeGreaterThan(20);
    expect(nullables).toBe(5);
  });

  it('auth is absent or a nonce and deadline, never null; a nested object is not an array', () => {
    const s = createEngineState({}, T0);
    const cancel = { ...SAMPLES[1], auth: null } as unknown as Command;
    expect(refusal(reduce(s, cancel).events).message).toBe(
      'INVALID_REQUEST: cancelOrder.auth must be an object, not null',
    );
    const place = { ...SAMPLES[0], auth: null } as unknown as Command;
    expect(refusal(reduce(s, place).events).message).toBe(
      'INVALID_REQUEST: placeOrder.auth must be an object, not null',
    );
    const deposit = { ...SAMPLES[8], target: ['Cross', 0] } as unknown as Command;
    expect(refusal(reduce(s, deposit).events).message).toBe(
      'INVALID_REQUEST: deposit.target must be an object, not an array',
    );
  });

  it('names the field and the kind it got', () => {
    const s = createEngineState({}, T0);
    const oracle = {
      type: 'oracle',
      time: T0,
      prices: [{ market: 1, price: 65000 }],
    } as unknown as Command;
    expect(refusal(reduce(s, oracle).events).message).toBe(
      'INVALID_REQUEST: oracle.prices[0].price must be a bigint, not a number',
    );
    const deposit = {
      type: 'deposit',
      time: T0,
      account: A,
      amount: 5,
      target: { mode: 'Cross', market: 0 },
    } as unknown as Command;
    expect(refusal(reduce(s, deposit).events).message).toBe(
      'INVALID_REQUEST: deposit.amount must be a bigint, not a number',
    );
    const mode = { ...SAMPLES[13], mode: 'cross' } as unknown as Command;
    expect(refusal(reduce(s, mode).events).message).toBe(
      'INVALID_REQUEST: updateLeverage.mode must be one of Cross, Isolated',
    );
  });

  it('refuses an unknown type and a command that is not an object', () => {
    const s = createEngineState({}, T0);
    for (const [command, message] of [
      [{ type: 'teleport', time: T0 }, 'INVALID_REQUEST: unknown command type "teleport"'],
      [{ time: T0 }, 'INVALID_REQUEST: unknown command type undefined'],
      [{ type: 1n, time: T0 }, 'INVALID_REQUEST: unknown command type a bigint'],
      [{ type: 'toString', time: T0 }, 'INVALID_REQUEST: unknown command type "toString"'],
      [null, 'INVALID_REQUEST: a command must be an object, not null'],
    ] as const) {
      const r = reduce(s, command as unknown as Command);
      expect(refusal(r.events).message).toBe(message);
      expect(r.state).toBe(s);
    }
  });
});
