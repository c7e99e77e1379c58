/**
 * The command fuzzer of the robustness property (`robustness.prop.test.ts`), shared with the
 * other properties that want the richest command sequences (`execution-reports.prop.test.ts`).
 *
 * Random sequences over every command a user or the operator can send: orders of every type,
 * time in force and flag (reduce-only, post-only, managed TP/SL with parentCloid, isolated, bits
 * no struct defines), cancels by id and by cloid, replaces, cancel-all, deposits and withdrawals
 * with their chain settlements (success and failure), margin transfers, leverage updates, oracle
 * prices (none for a while, big jumps, one raw unit), re-listings with changed settings, pause and
 * resume, liquidations (forced or not), auction claims, busts of any trade id (system fills
 * included), funding settlement, insurance transfers, fee payouts, the working-order cap (raised,
 * lowered below what accounts hold, refused), referral codes, authenticate, and ticks that jump
 * time across funding, GTD/DAY expiry, auction ends and pruning. Parameters mix realistic values
 * near the market with edge values: 0, one raw unit, u256 maxima, unknown accounts, markets,
 * orders, trades and auctions, and a market with no mark.
 *
 * `setup` lists the markets, funds the traders and seeds a book; `Driver.step` runs one step (one
 * or more commands), checking the reduce-only invariant and {@link checkExtra} after each command.
 */
import fc from 'fast-check';
import {
  buildInstrument,
  type EngineEvent,
  type EngineState,
  type InstrumentSettings,
  type MarginMode,
  type Market,
  OrderFlags,
  type OrderRequest,
  type Outcome,
  type RequestAuth,
} from '../src/index.js';
import {
  BTC_SETTINGS,
  type CommandInput,
  cloid,
  ETH_SETTINGS,
  replacer,
  TestVenue,
  type TestVenueOptions,
  wallet,
} from '../src/testing/index.js';
import { checkReduceOnlyInvariant } from './reduce-only-invariant.js';

/** With LOG_STATS set, counts of outcomes and events are printed after the run. */
export const stats = process.env.LOG_STATS ? new Map<string, number>() : undefined;
const count = (key: string): void => {
  if (stats) stats.set(key, (stats.get(key) ?? 0) + 1);
};
export const HOUR = 3_600_000;
export const DAY = 24 * HOUR;
const U256_MAX = 2n ** 256n - 1n;
const U64_MAX = 2n ** 64n - 1n;
const PRICE = 10n ** 18n;

/** Wallets: 0..4 funded traders, 5 opened but empty, 6 never opened; 7 is not an address. */
export const W = [...Array.from({ length: 7 }, (_, i) => wallet(0x500 + i)), 'not-a-wallet'];
export const FUNDED = 5;
/** Market ids: 1..3 listed at setup, 4 listed only by a setInstrument step; the rest unknown. */
const MARKETS = [1, 2, 3, 4, 0, 9, 0xffffffff];
const BASE: Record<number, bigint> = {
  1: 50_000n * PRICE,
  2: 3_000n * PRICE,
  3: 2n * PRICE,
  4: 100n * PRICE,
};
const SYMBOLS: Record<number, string> = { 1: 'BTC-PERP', 2: 'ETH-PERP', 3: 'DUST-PERP', 4: 'NEW' };
export const CLOIDS = [cloid(1), cloid(2), cloid(3), cloid(0xabc)];

// ---------------------------------------------------------------------------------------------
// Abstract parameters, resolved against the venue's state when the step runs.

/** A price: a few ticks around the market's reference price, or an edge value. */
export type PriceArg =
  | { k: 'near'; off: number }
  | { k: 'pct'; pct: number }
  | { k: 'raw'; v: bigint }
  | { k: 'offgrid'; off: number };
export const priceArb: fc.Arbitrary<PriceArg> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      k: fc.constant('near' as const),
      off: fc.integer({ min: -30, max: 30 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constant('pct' as const),
      pct: fc.integer({ min: -100, max: 900 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('raw' as const),
      v: fc.constantFrom(0n, 1n, 2n, 10n ** 12n, PRICE, 10n ** 30n, 10n ** 40n, U64_MAX, U256_MAX),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('offgrid' as const),
      off: fc.integer({ min: -3, max: 3 }),
    }),
  },
);

/** A quantity: a number of lots (mostly small), or an edge value. */
export type QtyArg =
  | { k: 'lots'; n: number }
  | { k: 'raw'; v: bigint }
  | { k: 'bigLots'; n: bigint };
export const qtyArb: fc.Arbitrary<QtyArg> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({ k: fc.constant('lots' as const), n: fc.integer({ min: 1, max: 40 }) }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ k: fc.constant('lots' as const), n: fc.integer({ min: 0, max: 5000 }) }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('raw' as const),
      v: fc.constantFrom(0n, 1n, 7n, 10n ** 18n, U64_MAX, U256_MAX),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('bigLots' as const),
      n: fc.constantFrom(10n ** 6n, 10n ** 12n, 10n ** 24n, 2n ** 200n),
    }),
  },
);

/** A collateral amount in micro-units. */
const amountArb: fc.Arbitrary<bigint> = fc.oneof(
  { weight: 8, arbitrary: fc.integer({ min: 1, max: 200_000 }).map((n) => BigInt(n) * 1_000_000n) },
  { weight: 2, arbitrary: fc.bigInt({ min: 1n, max: 10n ** 12n }) },
  { weight: 1, arbitrary: fc.constantFrom(0n, 1n, -1n, 10n ** 30n, U256_MAX) },
);

/** Signed-request freshness: none (trusted path), fresh, stale, replayed, or odd deadlines. */
type AuthArg =
  | 'none'
  | 'fresh'
  | 'old'
  | 'future'
  | 'replay'
  | 'deadlinePast'
  | 'deadlineFar'
  | 'huge';
const authArb: fc.Arbitrary<AuthArg> = fc.oneof(
  { weight: 10, arbitrary: fc.constant('none' as const) },
  { weight: 4, arbitrary: fc.constant('fresh' as const) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'old' as const,
      'future' as const,
      'replay' as const,
      'deadlinePast' as const,
      'deadlineFar' as const,
      'huge' as const,
    ),
  },
);

/** Picks a target among known ids (working orders, trades, auctions, pending commands) or not. */
type Pick = { k: 'known'; i: number } | { k: 'raw'; v: bigint };
const pickArb: fc.Arbitrary<Pick> = fc.oneof(
  { weight: 8, arbitrary: fc.record({ k: fc.constant('known' as const), i: fc.nat() }) },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('raw' as const),
      v: fc.constantFrom(0n, 1n, 2n, 1000n, 2n ** 53n - 1n, 2n ** 53n, U64_MAX),
    }),
  },
);

const walletArb = fc.oneof(
  { weight: 10, arbitrary: fc.nat(FUNDED - 1) },
  { weight: 1, arbitrary: fc.nat(W.length - 1) },
);
const marketArb = fc.oneof(
  { weight: 10, arbitrary: fc.constantFrom(1, 1, 1, 2, 3) },
  { weight: 1, arbitrary: fc.constantFrom(...MARKETS) },
);
const cloidArb = fc.oneof(
  { weight: 6, arbitrary: fc.constant(null) },
  { weight: 4, arbitrary: fc.constantFrom(...CLOIDS) },
  {
    weight: 1,
    arbitrary: fc.constantFrom('0x1', 'not a cloid', `0x${'A'.repeat(32)}`, `0x${'0'.repeat(32)}`),
  },
);

/** Instrument settings an operator may send (anything `buildInstrument` accepts or refuses). */
export const settingsArb = (id: number): fc.Arbitrary<InstrumentSettings> =>
  fc
    .record({
      symbolSame: fc.boolean(),
      decimalsSame: fc.constantFrom(true, true, true, false),
      tickSize: fc.constantFrom('0.5', '0.01', '1', '0.000000000000000001', '1000', '0.25'),
      lotSize: fc.constantFrom('0.001', '0.01', '1', '5'),
      maxLeverage: fc.constantFrom(1, 3, 20, 50, 100, 1000),
      defaultLeverage: fc.option(fc.constantFrom(1, 2, 10), { nil: undefined }),
      mmr: fc.option(fc.constantFrom('0.001', '0.5', '0.999999999999999999', '0.03'), {
        nil: undefined,
      }),
      tiers: fc.option(
        fc.constantFrom(
          [{ notionalFloor: '1000', maxLeverage: 1 }],
          [
            { notionalFloor: '100', maxLeverage: 2 },
            { notionalFloor: '100000', maxLeverage: 1 },
          ],
        ),
        { nil: undefined },
      ),
      oiCap: fc.constantFrom('0', '0.001', '1000', '1000000000'),
      minNotional: fc.option(fc.constantFrom('0', '5', '1000000'), { nil: undefined }),
      fees: fc.constantFrom(
        ['0', '0'] as const,
        ['0.00045', '0.00015'] as const,
        ['0.001', '-0.001'] as const,
        ['2', '1'] as const,
        ['0', '0.5'] as const,
      ),
      funding: fc.record({
        intervalMs: fc.constantFrom(HOUR, HOUR, 900_000, 8 * HOUR, DAY),
        interestRate8h: fc.constantFrom('0', '0.0001', '1'),
        premiumClamp: fc.constantFrom('0', '0.0005', '5'),
        capPerHour: fc.constantFrom('0', '0.04', '100'),
        impactNotional: fc.constantFrom('0', '0.000001', '500', '20000'),
      }),
      liquidation: fc.record({
        partialThreshold: fc.constantFrom('0', '100', '100000'),
        auctionDurationMs: fc.constantFrom(1, 1000, 30_000, 10 * DAY),
        feeRate: fc.constantFrom('0', '0.005', '1', '3'),
      }),
    })
    .map((s) => {
      const base = id === 1 ? BTC_SETTINGS : id === 2 ? ETH_SETTINGS : undefined;
      const decimals = base?.quantityDecimals ?? (id === 3 ? 0 : 2);
      return {
        id,
        symbol: s.symbolSame ? (SYMBOLS[id] ?? `M${id}`) : 'OTHER',
        tickSize: s.tickSize,
        lotSize: decimals === 0 ? (s.lotSize.includes('.') ? '1' : s.lotSize) : s.lotSize,
        quantityDecimals: s.decimalsSame ? decimals : decimals === 0 ? 1 : 0,
        maxLeverage: s.maxLeverage,
        defaultLeverage: s.defaultLeverage,
        maintenanceMarginRate: s.mmr,
        marginTiers: s.tiers,
        openInterestCap: s.oiCap,
        minNotional: s.minNotional,
        makerFeeRate: s.fees[1],
        takerFeeRate: s.fees[0],
        funding: s.funding,
        liquidation: s.liquidation,
      };
    });

// ---------------------------------------------------------------------------------------------
// Steps.

export type Step =
  | {
      k: 'order';
      /** Make the fields consistent (most orders are accepted) instead of wild. */
      sane: boolean;
      w: number;
      m: number;
      buy: boolean;
      type: number;
      tif: number;
      price: PriceArg;
      trigger: PriceArg;
      qty: QtyArg;
      flags: number;
      expiry: number;
      cloid: string | null;
      parent: 'none' | 'own' | 'other' | string;
      auth: AuthArg;
    }
  | {
      k: 'cancel';
      w: number;
      m: number | null;
      by: 'id' | 'cloid' | 'both' | 'neither';
      pick: Pick;
      cloid: string | null;
      auth: AuthArg;
    }
  | {
      k: 'replace';
      w: number;
      m: number | null;
      by: 'id' | 'cloid' | 'both' | 'neither';
      pick: Pick;
      price: PriceArg;
      trigger: PriceArg | 'keep' | 'zero';
      qty: QtyArg | 'keep' | 'plus' | 'minus';
      cloid: string | null;
      auth: AuthArg;
    }
  | { k: 'cancelAll'; w: number; m: number; auth: AuthArg }
  | {
      k: 'deposit';
      w: number;
      amount: bigint;
      iso: boolean;
      m: number;
      settle: 'ok' | 'fail' | 'later';
      auth: AuthArg;
    }
  | { k: 'settle'; deposit: boolean; pick: Pick; success: boolean }
  | {
      k: 'withdraw';
      w: number;
      amount: bigint | 'all';
      iso: boolean;
      m: number;
      settle: 'ok' | 'fail' | 'later';
      auth: AuthArg;
    }
  | { k: 'transfer'; w: number; amount: bigint; toIso: boolean; m: number; auth: AuthArg }
  | { k: 'leverage'; w: number; m: number; iso: boolean; lev: number; auth: AuthArg }
  | { k: 'oracle'; entries: { m: number; price: PriceArg }[] }
  | {
      k: 'take';
      w: number;
      m: number;
      buy: boolean;
      lots: number;
      iso: boolean;
      reduceOnly: boolean;
      tif: number;
      slip: number;
    }
  | { k: 'quote'; m: number; spread: number; lots: number; iso: boolean }
  | {
      k: 'close';
      pick: number;
      type: number;
      managed: boolean;
      frac: number;
      off: number;
      tif: number;
      withParent: boolean;
    }
  | { k: 'relist'; m: number; settings: InstrumentSettings }
  | {
      k: 'bracket';
      w: number;
      m: number;
      buy: boolean;
      off: number;
      lots: number;
      iso: boolean;
      cl: number;
      children: { type: number; trig: number; limit: number | null }[];
    }
  | { k: 'liquidateHolder'; pick: number; force: boolean }
  | { k: 'list'; m: number; settings: InstrumentSettings }
  | { k: 'status'; m: number; paused: boolean }
  | { k: 'liquidate'; w: number; iso: boolean; m: number; force: boolean }
  | {
      k: 'claim';
      w: number;
      pick: Pick;
      qty: QtyArg | 'all';
      maxPrice: PriceArg | 'any';
      auth: AuthArg;
    }
  | { k: 'bust'; pick: Pick }
  | { k: 'funding'; m: number | null }
  | { k: 'insurance'; toFund: boolean; amount: bigint | 'all' }
  | { k: 'payout'; w: number; amount: bigint | 'all' }
  | { k: 'venueSettings'; cap: number }
  | {
      k: 'referral';
      op: 'create' | 'revoke' | 'apply';
      code: string;
      w: number;
      attributed: boolean;
      maxUses: number;
      nonce: number;
    }
  | { k: 'authenticate'; w: number; nonce: AuthArg }
  | { k: 'open'; w: number }
  | { k: 'tick'; ms: number }
  | { k: 'declareRules'; version: number; replayed: number | undefined };

const byArb = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom('id' as const, 'id' as const, 'cloid' as const) },
  { weight: 1, arbitrary: fc.constantFrom('both' as const, 'neither' as const) },
);
const settleArb = fc.constantFrom('ok' as const, 'ok' as const, 'fail' as const, 'later' as const);
const codeArb = fc.constantFrom('A', 'CODE1', 'X-2', 'bad code', '');

export const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 30,
    arbitrary: fc.record({
      k: fc.constant('order' as const),
      sane: fc.constantFrom(true, true, true, true, false),
      w: walletArb,
      m: marketArb,
      buy: fc.boolean(),
      type: fc.oneof(
        { weight: 12, arbitrary: fc.constantFrom(0, 0, 0, 1, 2, 3) },
        { weight: 1, arbitrary: fc.constantFrom(4, 255) },
      ),
      tif: fc.oneof(
        { weight: 12, arbitrary: fc.constantFrom(0, 0, 0, 1, 2, 3, 4) },
        { weight: 1, arbitrary: fc.constantFrom(5, 255) },
      ),
      price: priceArb,
      trigger: priceArb,
      qty: qtyArb,
      flags: fc.oneof(
        { weight: 12, arbitrary: fc.nat(15) },
        { weight: 1, arbitrary: fc.constantFrom(16, 0x80000000, 0xffffffff) },
      ),
      expiry: fc.constantFrom(0, 1, 60, 3600, 86_400 * 3, -5, -100_000, 10 ** 12),
      cloid: cloidArb,
      parent: fc.oneof(
        { weight: 4, arbitrary: fc.constant('none') },
        { weight: 3, arbitrary: fc.constantFrom('own', 'other') },
        { weight: 2, arbitrary: fc.constantFrom(...CLOIDS, 'garbage') },
      ),
      auth: authArb,
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      k: fc.constant('cancel' as const),
      w: walletArb,
      m: fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: marketArb }),
      by: byArb,
      pick: pickArb,
      cloid: cloidArb,
      auth: authArb,
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      k: fc.constant('replace' as const),
      w: walletArb,
      m: fc.oneof({ weight: 6, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: marketArb }),
      by: byArb,
      pick: pickArb,
      price: priceArb,
      trigger: fc.oneof(
        priceArb,
        fc.constantFrom('keep' as const, 'keep' as const, 'zero' as const),
      ),
      qty: fc.oneof(qtyArb, fc.constantFrom('keep' as const, 'plus' as const, 'minus' as const)),
      cloid: cloidArb,
      auth: authArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('cancelAll' as const),
      w: walletArb,
      m: fc.constantFrom(0, ...MARKETS),
      auth: authArb,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constant('deposit' as const),
      w: walletArb,
      amount: amountArb,
      iso: fc.boolean(),
      m: fc.constantFrom(0, ...MARKETS),
      settle: settleArb,
      auth: authArb,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('settle' as const),
      deposit: fc.boolean(),
      pick: pickArb,
      success: fc.boolean(),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constant('withdraw' as const),
      w: walletArb,
      amount: fc.oneof(amountArb, fc.constant('all' as const)),
      iso: fc.boolean(),
      m: fc.constantFrom(0, ...MARKETS),
      settle: settleArb,
      auth: authArb,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constant('transfer' as const),
      w: walletArb,
      amount: amountArb,
      toIso: fc.boolean(),
      m: marketArb,
      auth: authArb,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constant('leverage' as const),
      w: walletArb,
      m: marketArb,
      iso: fc.boolean(),
      lev: fc.oneof(
        { weight: 6, arbitrary: fc.integer({ min: 1, max: 100 }).map((x) => x * 100) },
        { weight: 1, arbitrary: fc.constantFrom(0, 1, 99, 150, 100_000, 2 ** 32 - 1, -100, 1.5) },
      ),
      auth: authArb,
    }),
  },
  {
    weight: 9,
    arbitrary: fc.record({
      k: fc.constant('oracle' as const),
      entries: fc.array(
        fc.record({
          m: fc.oneof(
            { weight: 20, arbitrary: fc.constantFrom(1, 1, 1, 2, 3, 4) },
            { weight: 1, arbitrary: fc.constantFrom(...MARKETS) },
          ),
          price: fc.oneof(
            {
              weight: 10,
              arbitrary: fc.record({
                k: fc.constant('pct' as const),
                pct: fc.integer({ min: -8, max: 8 }),
              }),
            },
            { weight: 2, arbitrary: priceArb },
          ),
        }),
        { minLength: 0, maxLength: 3 },
      ),
    }),
  },
  {
    // Mostly one entry per market; a duplicate now and then.
    weight: 6,
    arbitrary: fc.record({
      k: fc.constant('oracle' as const),
      entries: fc.uniqueArray(
        fc.record({
          m: fc.constantFrom(1, 1, 1, 2, 3, 4),
          price: fc.oneof(
            {
              weight: 6,
              arbitrary: fc.record({
                k: fc.constant('pct' as const),
                pct: fc.integer({ min: -8, max: 8 }),
              }),
            },
            // A shock: a crash or a squeeze.
            {
              weight: 1,
              arbitrary: fc.record({
                k: fc.constant('pct' as const),
                pct: fc.integer({ min: -60, max: 150 }),
              }),
            },
          ),
        }),
        { minLength: 1, maxLength: 2, selector: (e) => e.m },
      ),
    }),
  },
  {
    weight: 8,
    arbitrary: fc.record({
      k: fc.constant('take' as const),
      w: fc.nat(FUNDED - 1),
      m: fc.constantFrom(1, 1, 1, 2, 3, 4),
      buy: fc.boolean(),
      lots: fc.oneof(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1, max: 3000 })),
      iso: fc.boolean(),
      reduceOnly: fc.constantFrom(false, false, false, true),
      tif: fc.constantFrom(0, 2, 2, 3),
      slip: fc.integer({ min: 0, max: 20 }),
    }),
  },
  {
    // A holder closes: reduce-only limit, stop-loss or take-profit (managed or not).
    weight: 6,
    arbitrary: fc.record({
      k: fc.constant('close' as const),
      pick: fc.nat(),
      type: fc.constantFrom(0, 0, 2, 3),
      managed: fc.boolean(),
      frac: fc.integer({ min: 1, max: 120 }),
      off: fc.integer({ min: -10, max: 30 }),
      tif: fc.constantFrom(0, 0, 1, 2, 4),
      withParent: fc.constantFrom(false, false, true),
    }),
  },
  {
    // An entry order with a cloid and managed TP/SL children attached to it by parentCloid.
    weight: 4,
    arbitrary: fc.record({
      k: fc.constant('bracket' as const),
      w: fc.nat(FUNDED - 1),
      m: fc.constantFrom(1, 1, 2, 3, 4),
      buy: fc.boolean(),
      off: fc.integer({ min: -3, max: 10 }),
      lots: fc.oneof(fc.integer({ min: 1, max: 30 }), fc.integer({ min: 1, max: 500 })),
      iso: fc.boolean(),
      cl: fc.nat(CLOIDS.length - 1),
      children: fc.array(
        fc.record({
          type: fc.constantFrom(2, 3),
          trig: fc.integer({ min: 1, max: 40 }),
          limit: fc.option(fc.integer({ min: -20, max: 20 })),
        }),
        { minLength: 1, maxLength: 2 },
      ),
    }),
  },
  {
    // Every holder of orders cancels them, then the operator re-lists with a new grid.
    weight: 1,
    arbitrary: fc
      .constantFrom(1, 2, 3)
      .chain((m) => settingsArb(m).map((settings) => ({ k: 'relist' as const, m, settings }))),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('liquidateHolder' as const),
      pick: fc.nat(),
      force: fc.boolean(),
    }),
  },
  {
    weight: 5,
    arbitrary: fc.record({
      k: fc.constant('quote' as const),
      m: fc.constantFrom(1, 1, 2, 3, 4),
      spread: fc.integer({ min: 1, max: 30 }),
      lots: fc.integer({ min: 1, max: 4000 }),
      iso: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc
      .integer({ min: 1, max: 4 })
      .chain((m) => settingsArb(m).map((settings) => ({ k: 'list' as const, m, settings }))),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('status' as const),
      m: fc.constantFrom(...MARKETS),
      paused: fc.boolean(),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('liquidate' as const),
      w: walletArb,
      iso: fc.boolean(),
      m: fc.constantFrom(0, ...MARKETS),
      force: fc.boolean(),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      k: fc.constant('claim' as const),
      w: walletArb,
      pick: pickArb,
      qty: fc.oneof(qtyArb, fc.constant('all' as const)),
      maxPrice: fc.oneof(priceArb, fc.constant('any' as const)),
      auth: authArb,
    }),
  },
  { weight: 2, arbitrary: fc.record({ k: fc.constant('bust' as const), pick: pickArb }) },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('funding' as const),
      m: fc.option(fc.constantFrom(0, ...MARKETS)),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('insurance' as const),
      toFund: fc.boolean(),
      amount: fc.oneof(amountArb, fc.constant('all' as const)),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('payout' as const),
      w: fc.nat(W.length - 1),
      amount: fc.oneof(amountArb, fc.constant('all' as const)),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('venueSettings' as const),
      // Caps the busy accounts reach, the default, and values the engine refuses.
      cap: fc.constantFrom(1, 3, 10, 1_000, 0, -1, 1.5),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('referral' as const),
      op: fc.constantFrom('create' as const, 'revoke' as const, 'apply' as const, 'apply' as const),
      code: codeArb,
      w: fc.nat(W.length - 1),
      attributed: fc.boolean(),
      maxUses: fc.constantFrom(1, 2, 100, 0, -1, 1.5),
      nonce: fc.nat(5),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('authenticate' as const),
      w: fc.nat(W.length - 1),
      nonce: authArb,
    }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('open' as const), w: fc.nat(W.length - 1) }) },
  {
    weight: 5,
    arbitrary: fc.record({
      k: fc.constant('tick' as const),
      ms: fc.oneof(
        { weight: 6, arbitrary: fc.constantFrom(0, 1, 500, 1000, 15_000, 31_000) },
        { weight: 3, arbitrary: fc.constantFrom(HOUR, HOUR + 1, 3 * HOUR, DAY, 2 * DAY + 7) },
        { weight: 1, arbitrary: fc.constantFrom(7 * DAY, 30 * DAY, 400 * DAY) },
      ),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('declareRules' as const),
      version: fc.constantFrom(-1, 0, 1, 2, 1.5, 2 ** 53),
      replayed: fc.constantFrom(undefined, 0, 3, 1_000_000, -1, 0.5),
    }),
  },
);

// ---------------------------------------------------------------------------------------------
// The interpreter.

/**
 * What later commands divide by or rely on, beyond `checkInvariants`: positive marks, positions
 * with an entry (the realized PnL divides by the entry quantity), claim reservations equal to
 * the live claims, an insurance fund never below zero.
 */
export function checkExtra(state: EngineState): void {
  state.markets.forEach((m, id) => {
    if (m.prices.mark !== null && m.prices.mark <= 0n) {
      throw new Error(`market ${id}: mark ${m.prices.mark} is not positive`);
    }
  });
  const reserved = new Map<string, bigint>();
  state.auctions.forEach((a) => {
    for (const c of a.claims)
      reserved.set(c.claimant, (reserved.get(c.claimant) ?? 0n) + c.reserve);
  });
  state.accounts.forEach((a) => {
    for (const p of a.positions) {
      if (p.entryQty <= 0n || p.entryNotional <= 0n) {
        throw new Error(`${a.address} ${p.market}/${p.mode}: position without an entry`);
      }
    }
    if (a.claimReserve !== (reserved.get(a.address) ?? 0n)) {
      throw new Error(`${a.address}: claim reserve ${a.claimReserve} != live claims`);
    }
  });
  // The fee pool may go below zero: a bust refunds a fee the operator may already have paid out.
  if (state.insuranceFund < 0n)
    throw new Error(`insurance fund below zero: ${state.insuranceFund}`);
}

export class Driver {
  readonly v: TestVenue;
  /** Nonces used so far (for replays). */
  private readonly used: { w: string; nonce: bigint }[] = [];
  /** Command ids of deposits and withdrawals, pending or not. */
  readonly commandIds: { deposit: boolean; id: number }[] = [];
  readonly tradeIds: number[] = [];
  readonly auctionIds: number[] = [];
  readonly orderIds: number[] = [];
  private fresh = 0;

  /** `makeVenue` builds the venue (a subclass may watch every command's events). */
  constructor(
    settings: VenueOptions,
    makeVenue: (options: TestVenueOptions) => TestVenue = (options) => new TestVenue(options),
  ) {
    this.v = makeVenue({ settings });
  }

  market(id: number): Market | undefined {
    return this.v.state.markets.get(id);
  }

  /** Reference price of a market: mark, else last trade, else the base. */
  ref(id: number): bigint {
    const m = this.market(id);
    return m?.prices.mark ?? m?.lastTrade ?? BASE[id] ?? PRICE;
  }

  tick(id: number): bigint {
    return this.market(id)?.spec.tickSize ?? 1n;
  }

  lot(id: number): bigint {
    return this.market(id)?.spec.lotSize ?? 1n;
  }

  price(id: number, p: PriceArg): bigint {
    const tick = this.tick(id);
    const ref = this.ref(id);
    const onGrid = (x: bigint): bigint => (x / tick) * tick;
    switch (p.k) {
      case 'near': {
        const x = onGrid(ref) + BigInt(p.off) * tick * (tick < PRICE / 100n ? 100n : 10n);
        return x > 0n ? x : tick;
      }
      case 'pct': {
        const x = onGrid((ref * BigInt(100 + p.pct)) / 100n);
        return x > 0n ? x : 0n;
      }
      case 'raw':
        return p.v;
      case 'offgrid':
        return onGrid(ref) + BigInt(p.off) + (tick > 1n ? 1n : 0n);
    }
  }

  qty(id: number, q: QtyArg): bigint {
    switch (q.k) {
      case 'lots':
        return BigInt(q.n) * this.lot(id);
      case 'raw':
        return q.v;
      case 'bigLots':
        return q.n * this.lot(id);
    }
  }

  auth(w: string, a: AuthArg): RequestAuth | undefined {
    const now = BigInt(this.v.time + 1);
    const deadline = now / 1000n + 60n;
    let nonce: bigint;
    switch (a) {
      case 'none':
        return undefined;
      case 'fresh':
        nonce = now + BigInt(this.used.length);
        break;
      case 'old':
        nonce = now - 400_000n;
        break;
      case 'future':
        nonce = now + 400_000n;
        break;
      case 'replay': {
        const prev = this.used.filter((u) => u.w === w).at(-1);
        nonce = prev?.nonce ?? now;
        break;
      }
      case 'deadlinePast':
        return { nonce: now, deadline: now / 1000n - 1n };
      case 'deadlineFar':
        return { nonce: now + 1n, deadline: now / 1000n + 7200n };
      case 'huge':
        return { nonce: U64_MAX, deadline: U64_MAX };
    }
    this.used.push({ w, nonce });
    return { nonce, deadline };
  }

  pick<T, R>(list: readonly T[], p: Pick, raw: (v: bigint) => R): T | R {
    if (p.k === 'raw' || list.length === 0) return raw(p.k === 'raw' ? p.v : 1n);
    return list[p.i % list.length]!;
  }

  /** Every open position: account, market, mode and size. */
  positions(): { account: string; market: number; mode: MarginMode; size: bigint }[] {
    const out: { account: string; market: number; mode: MarginMode; size: bigint }[] = [];
    for (const w of W) {
      const a = this.v.state.accounts.get(w);
      for (const p of a?.positions ?? [])
        out.push({ account: w, market: p.market, mode: p.mode, size: p.size });
    }
    return out;
  }

  /** Working order ids, and ids that were working once. */
  orderTargets(): number[] {
    return [...this.v.state.orders.keys(), ...this.orderIds.slice(-20)];
  }

  run(input: CommandInput): EngineEvent[] {
    const events = this.v.run(input);
    for (const e of events) {
      if (e.type === 'trade') this.tradeIds.push(e.tradeId);
    }
    for (const id of this.v.state.orders.keys())
      if (!this.orderIds.includes(id)) this.orderIds.push(id);
    for (const t of this.v.state.trades.keys())
      if (!this.tradeIds.includes(t)) this.tradeIds.push(t);
    for (const a of this.v.state.auctions.keys())
      if (!this.auctionIds.includes(a)) this.auctionIds.push(a);
    const o = events.find((e): e is Outcome => e.type === 'outcome');
    if (stats) {
      const what = `${this.kind}/${input.type}`;
      count(o?.ok ? `${what} ok` : `${what} ${o?.code} ${o?.message.slice(0, 140)}`);
      for (const e of events) {
        if (e.type === 'executionReport') count(`report ${e.kind}`);
        else if (e.type !== 'outcome') count(`event ${e.type}`);
      }
    }
    if (o?.ok && o.kind === 'command')
      this.commandIds.push({ deposit: input.type === 'deposit', id: o.commandId });
    checkReduceOnlyInvariant(this.v.state);
    checkExtra(this.v.state);
    return events;
  }

  outcome(events: readonly EngineEvent[]): Outcome {
    return events.find((e): e is Outcome => e.type === 'outcome')!;
  }

  settleLast(events: EngineEvent[], deposit: boolean, how: 'ok' | 'fail' | 'later'): void {
    const o = this.outcome(events);
    if (!o.ok || o.kind !== 'command' || how === 'later') return;
    this.run({
      type: deposit ? 'settleDeposit' : 'settleWithdrawal',
      commandId: o.commandId,
      success: how === 'ok',
      ...(how === 'fail' ? { reason: 'reverted' } : { txHash: `0x${'1'.repeat(64)}` }),
    });
  }

  /** Consistent fields: flags the type allows, expiry for GTD only, triggers on the right side. */
  sane(order: OrderRequest, s: Extract<Step, { k: 'order' }>): OrderRequest {
    const type = s.type % 4;
    const tif = s.tif % 5;
    const stop = type >= 2;
    const flagChoices = [
      0,
      0,
      0,
      0,
      OrderFlags.ISOLATED,
      OrderFlags.REDUCE_ONLY,
      OrderFlags.POST_ONLY,
    ];
    let flags = flagChoices[s.flags % flagChoices.length]!;
    if (stop && s.flags % 3 === 0) flags = OrderFlags.MANAGED;
    if (stop && s.flags % 5 === 1) flags = OrderFlags.REDUCE_ONLY;
    if (flags === OrderFlags.POST_ONLY && (type !== 0 || tif === 2 || tif === 3)) flags = 0;
    flags |= s.flags & OrderFlags.ISOLATED;
    const nowS = Math.floor((this.v.time + 1) / 1000);
    const ref = this.ref(s.m);
    const tick = this.tick(s.m);
    const off = BigInt(Math.abs(s.trigger.k === 'near' ? s.trigger.off : 3) + 1) * tick;
    // Buy stops (StopLimit, StopLoss) fire above the mark, buy take-profits below; sells mirrored.
    const above = (type === 3) !== s.buy;
    const trigger = type === 0 ? 0n : above ? (ref / tick) * tick + off : (ref / tick) * tick - off;
    return {
      ...order,
      orderType: type,
      timeInForce: tif,
      flags,
      price: stop && s.price.k !== 'near' ? 0n : order.price,
      triggerPrice: type === 0 ? 0n : trigger > 0n ? trigger : tick,
      expiry: tif === 1 ? BigInt(nowS + 1 + (Math.abs(s.expiry) % 7200)) : 0n,
      parentCloid: flags === OrderFlags.MANAGED && s.parent !== 'none' ? order.parentCloid : null,
    };
  }

  /** The kind of the step being run (statistics). */
  private kind = '';

  step(s: Step): void {
    const v = this.v;
    this.kind = s.k;
    switch (s.k) {
      case 'order': {
        const w = W[s.w]!;
        const working = v.state.orders.entries().map(([, o]) => o);
        const parentOf = (mine: boolean): string | null => {
          const c = working.find((o) => (o.account === w) === mine && o.cloid !== null);
          return c?.cloid ?? CLOIDS[0]!;
        };
        const parent =
          s.parent === 'none'
            ? null
            : s.parent === 'own'
              ? parentOf(true)
              : s.parent === 'other'
                ? parentOf(false)
                : s.parent === 'garbage'
                  ? 'zz'
                  : s.parent;
        const nowS = Math.floor((v.time + 1) / 1000);
        let order: OrderRequest = {
          market: s.m,
          isBuy: s.buy,
          orderType: s.type,
          timeInForce: s.tif,
          price: s.type >= 2 && s.price.k === 'raw' ? 0n : this.price(s.m, s.price),
          triggerPrice: s.type === 0 && s.trigger.k !== 'raw' ? 0n : this.price(s.m, s.trigger),
          quantity: this.qty(s.m, s.qty),
          flags: s.flags,
          expiry:
            s.expiry === 0
              ? 0n
              : s.expiry === 10 ** 12
                ? U64_MAX
                : BigInt(Math.max(0, nowS + s.expiry)),
          cloid: s.cloid,
          parentCloid: parent,
        };
        if (s.sane) order = this.sane(order, s);
        this.run({ type: 'placeOrder', account: w, order, auth: this.auth(w, s.auth) });
        return;
      }
      case 'cancel': {
        const w = W[s.w]!;
        const id = this.pick(this.orderTargets(), s.pick, (x) => x);
        const order = typeof id === 'number' ? v.state.orders.get(id) : undefined;
        const market = s.m ?? order?.market ?? 1;
        const orderId = s.by === 'cloid' || s.by === 'neither' ? 0n : BigInt(id);
        const c =
          s.by === 'id' || s.by === 'neither' ? null : (order?.cloid ?? s.cloid ?? CLOIDS[0]!);
        this.run({
          type: 'cancelOrder',
          account: s.m === null && order ? order.account : w,
          market,
          orderId,
          cloid: c,
          auth: this.auth(w, s.auth),
        });
        return;
      }
      case 'replace': {
        const w = W[s.w]!;
        const id = this.pick(this.orderTargets(), s.pick, (x) => x);
        const order = typeof id === 'number' ? v.state.orders.get(id) : undefined;
        const market = s.m ?? order?.market ?? 1;
        const orderId = s.by === 'cloid' || s.by === 'neither' ? 0n : BigInt(id);
        const origCloid =
          s.by === 'id' || s.by === 'neither' ? null : (order?.cloid ?? s.cloid ?? CLOIDS[0]!);
        const quantity =
          s.qty === 'keep'
            ? (order?.quantity ?? 1n)
            : s.qty === 'plus'
              ? (order?.quantity ?? 0n) + this.lot(market)
              : s.qty === 'minus'
                ? (order?.quantity ?? 0n) - this.lot(market)
                : this.qty(market, s.qty);
        // A working (triggered or Limit) order keeps its trigger price, mostly.
        const t = s.trigger;
        const keep =
          order !== undefined && order.ordStatus !== 'Untriggered' && t !== 'zero' && t !== 'keep';
        const triggerPrice =
          t === 'keep' || (keep && t.k === 'near')
            ? (order?.triggerPrice ?? 0n)
            : t === 'zero'
              ? 0n
              : this.price(market, t);
        this.run({
          type: 'replaceOrder',
          account: s.m === null && order ? order.account : w,
          market,
          orderId,
          origCloid,
          price: this.price(market, s.price),
          triggerPrice,
          quantity,
          cloid: s.cloid,
          auth: this.auth(w, s.auth),
        });
        return;
      }
      case 'cancelAll': {
        const w = W[s.w]!;
        this.run({ type: 'cancelAll', account: w, market: s.m, auth: this.auth(w, s.auth) });
        return;
      }
      case 'deposit': {
        const w = W[s.w]!;
        const target = {
          mode: (s.iso ? 'Isolated' : 'Cross') as MarginMode,
          market: s.iso ? s.m : s.m === 9 ? 9 : 0,
        };
        const events = this.run({
          type: 'deposit',
          account: w,
          amount: s.amount,
          target,
          auth: this.auth(w, s.auth),
        });
        this.settleLast(events, true, s.settle);
        return;
      }
      case 'settle': {
        const pending = v.state.pending
          .values()
          .filter((p) => (p.kind === 'deposit') === s.deposit);
        const id = this.pick(
          pending.length > 0 ? pending.map((p) => p.commandId) : this.commandIds.map((c) => c.id),
          s.pick,
          (x) => (x <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(x) : -1),
        );
        this.run({
          type: s.deposit ? 'settleDeposit' : 'settleWithdrawal',
          commandId: id,
          success: s.success,
        });
        return;
      }
      case 'withdraw': {
        const w = W[s.w]!;
        const account = v.state.accounts.get(w);
        const amount =
          s.amount === 'all'
            ? s.iso
              ? (account?.isolated.find((p) => p.market === s.m)?.cash ?? 1n)
              : (account?.crossCash ?? 1n)
            : s.amount;
        const target = {
          mode: (s.iso ? 'Isolated' : 'Cross') as MarginMode,
          market: s.iso ? s.m : s.m === 9 ? 9 : 0,
        };
        const events = this.run({
          type: 'withdraw',
          account: w,
          amount,
          target,
          auth: this.auth(w, s.auth),
        });
        this.settleLast(events, false, s.settle);
        return;
      }
      case 'transfer': {
        const w = W[s.w]!;
        this.run({
          type: 'transferMargin',
          account: w,
          amount: s.amount,
          market: s.m,
          direction: s.toIso ? 'crossToIsolated' : 'isolatedToCross',
          auth: this.auth(w, s.auth),
        });
        return;
      }
      case 'leverage': {
        const w = W[s.w]!;
        this.run({
          type: 'updateLeverage',
          account: w,
          market: s.m,
          mode: s.iso ? 'Isolated' : 'Cross',
          leverage: s.lev,
          auth: this.auth(w, s.auth),
        });
        return;
      }
      case 'take': {
        // A taker that crosses: the best opposite price (or the reference) plus some slippage.
        const w = W[s.w]!;
        const m = this.market(s.m);
        const best = s.buy ? m?.asks.at(-1)?.price : m?.bids.at(-1)?.price;
        const tick = this.tick(s.m);
        const base = ((best ?? this.ref(s.m)) / tick) * tick;
        const slip = BigInt(s.slip) * tick * (tick < PRICE / 100n ? 100n : 1n);
        const price = s.buy ? base + slip : base - slip > 0n ? base - slip : tick;
        const flags =
          (s.iso ? OrderFlags.ISOLATED : 0) | (s.reduceOnly ? OrderFlags.REDUCE_ONLY : 0);
        this.run({
          type: 'placeOrder',
          account: w,
          order: {
            market: s.m,
            isBuy: s.buy,
            orderType: 0,
            timeInForce: s.tif,
            price,
            triggerPrice: 0n,
            quantity: BigInt(s.lots) * this.lot(s.m),
            flags,
            expiry: 0n,
            cloid: null,
            parentCloid: null,
          },
        });
        return;
      }
      case 'close': {
        const holders = this.positions();
        if (holders.length === 0) return;
        const h = holders[s.pick % holders.length]!;
        const m = h.market;
        const tick = this.tick(m);
        const lot = this.lot(m);
        const abs = h.size < 0n ? -h.size : h.size;
        let qty = ((abs * BigInt(s.frac)) / 100n / lot) * lot;
        if (qty <= 0n) qty = lot;
        const buy = h.size < 0n;
        const ref = (this.ref(m) / tick) * tick;
        const scaled = BigInt(s.off) * tick * (tick < PRICE / 100n ? 100n : 10n);
        const stop = s.type >= 2;
        // Buy stop-losses fire above the mark, buy take-profits below; sells mirrored.
        const above = (s.type === 3) !== buy;
        const trig = above
          ? ref + (scaled < 0n ? -scaled : scaled) + tick
          : ref - (scaled < 0n ? -scaled : scaled) - tick;
        const limit = buy ? ref + scaled : ref - scaled;
        const parent = s.withParent
          ? (this.v.state.orders
              .entries()
              .find(([, o]) => o.account === h.account && o.cloid !== null)?.[1].cloid ?? null)
          : null;
        const nowS = Math.floor((this.v.time + 1) / 1000);
        this.run({
          type: 'placeOrder',
          account: h.account,
          order: {
            market: m,
            isBuy: buy,
            orderType: s.type,
            timeInForce: stop ? (s.tif === 2 ? 2 : 0) : s.tif,
            price: stop
              ? s.off % 2 === 0
                ? 0n
                : limit > 0n
                  ? limit
                  : tick
              : limit > 0n
                ? limit
                : tick,
            triggerPrice: stop ? (trig > 0n ? trig : tick) : 0n,
            quantity: qty,
            flags:
              (h.mode === 'Isolated' ? OrderFlags.ISOLATED : 0) |
              (stop && s.managed ? OrderFlags.MANAGED : OrderFlags.REDUCE_ONLY),
            expiry: !stop && s.tif === 1 ? BigInt(nowS + 30 + s.frac * 60) : 0n,
            cloid: s.frac % 4 === 0 ? CLOIDS[s.frac % CLOIDS.length]! : null,
            parentCloid: stop && s.managed ? parent : null,
          },
        });
        return;
      }
      case 'bracket': {
        const w = W[s.w]!;
        const tick = this.tick(s.m);
        const unit = tick * (tick < PRICE / 100n ? 100n : 10n);
        const ref = (this.ref(s.m) / tick) * tick;
        // The entry rests on its own side (a positive offset) or crosses (a negative one).
        const entry = s.buy ? ref - BigInt(s.off) * unit : ref + BigInt(s.off) * unit;
        const flags = s.iso ? OrderFlags.ISOLATED : 0;
        // A fresh cloid most of the time (a cloid stays reserved for 24 h after acceptance).
        const parent = s.cl === 0 ? CLOIDS[0]! : cloid(0x1000 + this.fresh++);
        this.run({
          type: 'placeOrder',
          account: w,
          order: {
            market: s.m,
            isBuy: s.buy,
            orderType: 0,
            timeInForce: 0,
            price: entry > 0n ? entry : tick,
            triggerPrice: 0n,
            quantity: BigInt(s.lots) * this.lot(s.m),
            flags,
            expiry: 0n,
            cloid: parent,
            parentCloid: null,
          },
        });
        for (const c of s.children) {
          // A child closes the entry: a stop-loss fires against it, a take-profit with it.
          const above = (c.type === 3) === s.buy;
          const trig = above ? ref + BigInt(c.trig) * unit : ref - BigInt(c.trig) * unit;
          const limit = c.limit === null ? 0n : trig + BigInt(c.limit) * unit;
          this.run({
            type: 'placeOrder',
            account: w,
            order: {
              market: s.m,
              isBuy: !s.buy,
              orderType: c.type,
              timeInForce: 0,
              price: limit > 0n ? limit : 0n,
              triggerPrice: trig > 0n ? trig : tick,
              quantity: BigInt(s.lots) * this.lot(s.m),
              flags: flags | OrderFlags.MANAGED,
              expiry: 0n,
              cloid: null,
              parentCloid: parent,
            },
          });
        }
        return;
      }
      case 'relist': {
        for (const w of W.slice(0, FUNDED + 1)) {
          if (this.v.state.accounts.get(w)?.orders.size)
            this.run({ type: 'cancelAll', account: w, market: s.m });
        }
        const built = buildInstrument({
          ...s.settings,
          symbol: SYMBOLS[s.m]!,
          quantityDecimals: this.market(s.m)!.spec.quantityDecimals,
        });
        if (built.ok) this.run({ type: 'setInstrument', instrument: built.instrument });
        return;
      }
      case 'liquidateHolder': {
        const holders = this.positions();
        if (holders.length === 0) return;
        const h = holders[s.pick % holders.length]!;
        this.run({
          type: 'liquidate',
          account: h.account,
          mode: h.mode,
          market: h.mode === 'Cross' ? 0 : h.market,
          force: s.force,
        });
        return;
      }
      case 'quote': {
        // The two makers quote around the reference price.
        const tick = this.tick(s.m);
        const ref = (this.ref(s.m) / tick) * tick;
        const gap = BigInt(s.spread) * tick * (tick < PRICE / 100n ? 100n : 1n);
        for (const [i, w] of W.slice(3, 5).entries()) {
          const price = i === 0 ? ref - gap : ref + gap;
          if (price <= 0n) continue;
          this.run({
            type: 'placeOrder',
            account: w,
            order: {
              market: s.m,
              isBuy: i === 0,
              orderType: 0,
              timeInForce: 0,
              price,
              triggerPrice: 0n,
              quantity: BigInt(s.lots) * this.lot(s.m),
              flags: s.iso ? OrderFlags.ISOLATED : 0,
              expiry: 0n,
              cloid: null,
              parentCloid: null,
            },
          });
        }
        return;
      }
      case 'oracle': {
        const prices = s.entries.map((e) => {
          // Oracle prices need no tick grid: scale the reference itself.
          const ref = this.ref(e.m);
          const price =
            e.price.k === 'pct'
              ? (ref * BigInt(100 + e.price.pct)) / 100n
              : this.price(e.m, e.price);
          return { market: e.m, price };
        });
        this.run({ type: 'oracle', prices });
        return;
      }
      case 'list': {
        const built = buildInstrument(s.settings);
        if (!built.ok) return; // the admin route answers 400; nothing reaches the engine
        this.run({ type: 'setInstrument', instrument: built.instrument });
        return;
      }
      case 'status':
        this.run({ type: 'setMarketStatus', market: s.m, status: s.paused ? 'Paused' : 'Active' });
        return;
      case 'liquidate':
        this.run({
          type: 'liquidate',
          account: W[s.w]!,
          mode: s.iso ? 'Isolated' : 'Cross',
          market: s.iso ? s.m : 0,
          force: s.force,
        });
        return;
      case 'claim': {
        const w = W[s.w]!;
        const live = v.state.auctions.keys();
        // Mostly a claim on a live auction; with none live, only now and then a refused one.
        if (live.length === 0 && s.pick.k === 'known' && s.pick.i % 8 !== 0) return;
        const auctionId = this.pick(live.length > 0 ? live : this.auctionIds, s.pick, (x) =>
          x <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(x) : Number.MAX_SAFE_INTEGER,
        );
        const auction = v.state.auctions.get(auctionId);
        const market = auction?.market ?? 1;
        const quantity = s.qty === 'all' ? (auction?.remaining ?? 1n) : this.qty(market, s.qty);
        const maxPrice =
          s.maxPrice === 'any'
            ? auction?.side === 'Sell'
              ? 0n
              : U256_MAX
            : this.price(market, s.maxPrice);
        this.run({
          type: 'claimLiquidation',
          account: w,
          auctionId,
          quantity,
          maxPrice,
          auth: this.auth(w, s.auth),
        });
        return;
      }
      case 'bust': {
        const id = this.pick(this.tradeIds, s.pick, (x) =>
          x <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(x) : 0,
        );
        this.run({ type: 'bustTrade', tradeId: id, reason: 'fuzz' });
        return;
      }
      case 'funding':
        this.run({ type: 'settleFunding', ...(s.m === null ? {} : { market: s.m }) });
        return;
      case 'insurance': {
        const amount =
          s.amount === 'all' ? (s.toFund ? v.state.feePool : v.state.insuranceFund) : s.amount;
        this.run({
          type: 'insuranceTransfer',
          direction: s.toFund ? 'ToInsuranceFund' : 'ToFeePool',
          amount,
        });
        return;
      }
      case 'payout': {
        const amount = s.amount === 'all' ? v.state.feePool : s.amount;
        this.run({ type: 'feePayout', account: W[s.w]!, amount });
        return;
      }
      case 'venueSettings':
        this.run({ type: 'setVenueSettings', maxWorkingOrdersPerAccount: s.cap });
        return;
      case 'referral': {
        const w = W[s.w]!;
        if (s.op === 'create') {
          this.run({
            type: 'createReferralCode',
            code: s.code === '' ? undefined : s.code,
            kind: s.attributed ? 'attributed' : 'system',
            ...(s.attributed ? { owner: w } : {}),
            maxUses: s.maxUses,
          });
        } else if (s.op === 'revoke') {
          this.run({ type: 'revokeReferralCode', code: s.code });
        } else {
          this.run({
            type: 'applyReferral',
            wallet: w,
            code: s.code === '' ? (v.state.referralCodes.keys()[0] ?? 'A') : s.code,
            nonce: `nonce-${s.nonce}-abc`,
            timestamp: v.time + 1 + (s.nonce === 5 ? 400_000 : 0),
          });
        }
        return;
      }
      case 'authenticate': {
        const w = W[s.w]!;
        const a = this.auth(w, s.nonce === 'none' ? 'fresh' : s.nonce);
        this.run({ type: 'authenticate', account: w, nonce: a?.nonce ?? 0n });
        return;
      }
      case 'open':
        this.run({ type: 'openAccount', account: W[s.w]! });
        return;
      case 'tick':
        this.run({ type: 'tick', time: v.time + s.ms });
        return;
      case 'declareRules':
        this.run({
          type: 'declareRules',
          time: v.time + 1,
          version: s.version,
          replayed: s.replayed,
        });
        return;
    }
  }
}

export type VenueOptions = {
  tradeRetentionMs: number;
  maxRetainedTrades: number;
  cloidRetentionMs: number;
};
export const venueSettingsArb: fc.Arbitrary<VenueOptions> = fc.record({
  tradeRetentionMs: fc.constantFrom(HOUR, 60_000, 100 * HOUR),
  maxRetainedTrades: fc.constantFrom(100_000, 5, 1),
  cloidRetentionMs: fc.constantFrom(DAY, 1000),
});

export function setup(
  settings: VenueOptions,
  dust: InstrumentSettings,
  funds: number,
  makeVenue?: (options: TestVenueOptions) => TestVenue,
): Driver {
  const d = new Driver(settings, makeVenue);
  const v = d.v;
  v.list({
    ...BTC_SETTINGS,
    maxLeverage: 50,
    defaultLeverage: 20,
    openInterestCap: '1000000',
    funding: { impactNotional: '500' },
    liquidation: { partialThreshold: '2000', auctionDurationMs: 30_000 },
  });
  // ETH has no oracle price until an oracle step gives it one (a venue without a price feed).
  v.list({ ...ETH_SETTINGS, openInterestCap: '1000000' });
  // DUST is listed with random settings (a raw-unit tick, 0 decimals, caps and fees at edges).
  const dustSpec = { ...dust, symbol: 'DUST-PERP', quantityDecimals: 0 };
  v.list(
    buildInstrument(dustSpec).ok
      ? dustSpec
      : {
          id: 3,
          symbol: 'DUST-PERP',
          tickSize: '0.0001',
          lotSize: '1',
          quantityDecimals: 0,
          maxLeverage: 10,
          openInterestCap: '100000000',
        },
  );
  for (const [i, w] of W.slice(0, FUNDED).entries()) {
    v.open(w);
    v.fund(w, String(funds * (i + 1)));
    v.fund(w, String(funds), 'BTC-PERP');
  }
  v.open(W[FUNDED]!);
  // Invite codes: wallets 0..2 have app access, so signed requests of the others meet the gate.
  v.expectOk(v.run({ type: 'createReferralCode', code: 'SEED', kind: 'system', maxUses: 3 }));
  for (const w of W.slice(0, 3)) {
    v.expectOk(
      v.run({
        type: 'applyReferral',
        wallet: w,
        code: 'SEED',
        nonce: `seed-nonce-${w.slice(-4)}`,
        timestamp: v.time + 1,
      }),
    );
  }
  v.oracle({ 'BTC-PERP': '50000', 'DUST-PERP': '2' });
  // Resting liquidity on both sides of BTC, so crossing orders and liquidations have a book.
  for (const [i, w] of W.slice(3, 5).entries()) {
    for (let k = 1; k <= 5; k++) {
      v.place(w, 'BTC-PERP', {
        side: i === 0 ? 'Buy' : 'Sell',
        qty: String(k / 10),
        price: String(50_000 + (i === 0 ? -k * 10 : k * 10)),
      });
    }
  }
  return d;
}

export function describeFailure(d: Driver): string {
  return JSON.stringify(d.v.log.slice(-5), replacer);
}
