/**
 * Margin properties over random command sequences with many accounts (issue: conservation, zero
 * sum, withdrawals never below initial margin, liquidation price exactness, rejected commands
 * change nothing). TestVenue checks every invariant of src/testing/invariants.ts after every
 * command; the properties below add what a single state cannot show.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  availableToOpen,
  canonicalText,
  type EngineEvent,
  type EngineState,
  liquidationPrice,
  maintenanceExact,
  measureScope,
  type Outcome,
  type Rational,
  radd,
  ratio,
  reduced,
  rmul,
  rsub,
} from '../src/index.js';
import {
  BTC_SETTINGS,
  ETH_SETTINGS,
  instrument,
  TestVenue,
  usd,
  wallet,
} from '../src/testing/index.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 1000);
const W = Array.from({ length: 8 }, (_, i) => wallet(0x100 + i));
const SYMS = ['BTC-PERP', 'ETH-PERP'] as const;
const BASE = [50000, 3000];
const TICK = [0.5, 0.01];

type Step =
  | {
      k: 'order';
      w: number;
      m: number;
      buy: boolean;
      off: number;
      qty: number;
      iso: boolean;
      ro: boolean;
      tif: number;
    }
  | { k: 'cancelAll'; w: number }
  | { k: 'oracle'; m: number; off: number }
  | { k: 'withdraw'; w: number; amount: number; iso: boolean; m: number }
  | { k: 'transfer'; w: number; amount: number; toIso: boolean; m: number }
  | { k: 'leverage'; w: number; m: number; lev: number; iso: boolean }
  | { k: 'deposit'; w: number; amount: number; iso: boolean; m: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      k: fc.constant('order' as const),
      w: fc.nat(7),
      m: fc.nat(1),
      buy: fc.boolean(),
      off: fc.integer({ min: -30, max: 30 }),
      qty: fc.oneof(fc.integer({ min: 1, max: 400 }), fc.integer({ min: 1, max: 20_000 })),
      iso: fc.boolean(),
      ro: fc.constantFrom(false, false, false, true),
      tif: fc.constantFrom(0, 0, 2),
    }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('cancelAll' as const), w: fc.nat(7) }) },
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constant('oracle' as const),
      m: fc.nat(1),
      off: fc.integer({ min: -400, max: 400 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('withdraw' as const),
      w: fc.nat(7),
      amount: fc.integer({ min: 1, max: 40_000 }),
      iso: fc.boolean(),
      m: fc.nat(1),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('transfer' as const),
      w: fc.nat(7),
      amount: fc.integer({ min: 1, max: 20_000 }),
      toIso: fc.boolean(),
      m: fc.nat(1),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('leverage' as const),
      w: fc.nat(7),
      m: fc.nat(1),
      lev: fc.integer({ min: 1, max: 45 }),
      iso: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('deposit' as const),
      w: fc.nat(7),
      amount: fc.integer({ min: 1, max: 20_000 }),
      iso: fc.boolean(),
      m: fc.nat(1),
    }),
  },
);

const outcome = (events: readonly EngineEvent[]): Outcome =>
  events.find((e): e is Outcome => e.type === 'outcome')!;

/** Everything economic: books, orders, pools, positions, leverage, fee and insurance pools. */
function economicState(s: EngineState): string {
  const accounts = s.accounts.values().map((a) => ({
    a: a.address,
    c: a.crossCash,
    i: a.isolated,
    p: a.positions,
    l: a.leverage,
    t: a.orderTotals,
  }));
  return canonicalText({
    m: s.markets,
    o: s.orders,
    accounts,
    f: s.feePool,
    ins: s.insuranceFund,
    d: s.totalDeposits,
    w: s.totalWithdrawals,
  });
}

function setup(): TestVenue {
  const v = new TestVenue();
  v.list({ ...BTC_SETTINGS, lotSize: '0.001', quantityDecimals: 3 });
  v.list(ETH_SETTINGS);
  for (const w of W) {
    v.open(w);
    v.fund(w, '50000');
  }
  // ETH has no mark until an oracle step: its first trades must be valued at their own price.
  v.oracle({ 'BTC-PERP': '50000' });
  return v;
}

function run(v: TestVenue, s: Step): void {
  const before = v.state;
  const beforeEconomy = economicState(before);
  let events: EngineEvent[];
  if (s.k === 'order') {
    const px = BASE[s.m]! + (s.buy ? s.off + 4 : s.off - 4) * TICK[s.m]! * 4;
    const mode = s.iso ? ('Isolated' as const) : ('Cross' as const);
    const available = (state: EngineState) => {
      const a = state.accounts.get(W[s.w]!)!;
      return availableToOpen(measureScope(state, a, mode, s.iso ? s.m + 1 : 0));
    };
    const availableBefore = available(before);
    events = v.place(W[s.w]!, SYMS[s.m]!, {
      side: s.buy ? 'Buy' : 'Sell',
      qty: (s.qty / 1000).toFixed(3),
      price: px.toFixed(2),
      isolated: s.iso,
      reduceOnly: s.ro,
      tif: (['GTC', 'GTD', 'IOC'] as const)[s.tif],
    });
    // An accepted order that only rests holds at most what was available to open (engine-rules
    // 5), whatever position it closes or flips.
    if (outcome(events).ok && !events.some((e) => e.type === 'trade')) {
      const least = availableBefore < 0n ? availableBefore : 0n;
      expect(available(v.state)).toBeGreaterThanOrEqual(least);
    }
  } else if (s.k === 'cancelAll') {
    events = v.run({ type: 'cancelAll', account: W[s.w]!, market: 0 });
  } else if (s.k === 'oracle') {
    events = v.oracle({ [SYMS[s.m]!]: (BASE[s.m]! + s.off * TICK[s.m]! * 10).toFixed(2) });
  } else if (s.k === 'withdraw') {
    const target = s.iso
      ? { mode: 'Isolated' as const, market: s.m + 1 }
      : { mode: 'Cross' as const, market: 0 };
    events = v.run({ type: 'withdraw', account: W[s.w]!, amount: usd(String(s.amount)), target });
    if (outcome(events).ok) {
      const m = measureScope(v.state, v.state.accounts.get(W[s.w]!)!, target.mode, target.market);
      // Never below initial margin plus holds, nor below 10% of the notional.
      expect(m.equity).toBeGreaterThanOrEqual(m.initialMargin + m.hold);
      expect(m.equity * 10n).toBeGreaterThanOrEqual(m.notional);
    }
  } else if (s.k === 'transfer') {
    events = v.run({
      type: 'transferMargin',
      account: W[s.w]!,
      market: s.m + 1,
      amount: usd(String(s.amount)),
      direction: s.toIso ? 'crossToIsolated' : 'isolatedToCross',
    });
    if (outcome(events).ok) {
      const source = s.toIso
        ? measureScope(v.state, v.state.accounts.get(W[s.w]!)!, 'Cross', 0)
        : measureScope(v.state, v.state.accounts.get(W[s.w]!)!, 'Isolated', s.m + 1);
      expect(availableToOpen(source)).toBeGreaterThanOrEqual(0n);
    }
  } else if (s.k === 'leverage') {
    events = v.run({
      type: 'updateLeverage',
      account: W[s.w]!,
      market: s.m + 1,
      mode: s.iso ? 'Isolated' : 'Cross',
      leverage: s.lev * 100,
    });
  } else {
    const target = s.iso
      ? { mode: 'Isolated' as const, market: s.m + 1 }
      : { mode: 'Cross' as const, market: 0 };
    const o = outcome(
      v.run({ type: 'deposit', account: W[s.w]!, amount: usd(String(s.amount)), target }),
    );
    events = v.run({
      type: 'settleDeposit',
      commandId: o.ok && o.kind === 'command' ? o.commandId : -1,
      success: true,
    });
  }
  const o = outcome(events);
  if (!o.ok) {
    // A refusal before admission changes nothing at all; a business refusal changes no balance,
    // position, order or book (only the nonce, the report stream and the command counter).
    if (!o.nonceConsumed && o.commandId === undefined) expect(v.state).toBe(before);
    else expect(economicState(v.state)).toBe(beforeEconomy);
  }
}

describe('margin properties over random sequences with many accounts', () => {
  it('conservation, zero sum and every other invariant hold after every command; refusals change nothing', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 10, maxLength: 60 }), (steps) => {
        const v = setup();
        for (const s of steps) run(v, s);
      }),
      { numRuns: runs },
    );
  });
});

/** Exact equity and maintenance of a scope with one market's mark replaced by `price`. */
function scopeAt(
  v: TestVenue,
  address: string,
  mode: 'Cross' | 'Isolated',
  market: number,
  price: Rational,
): { equity: Rational; mm: Rational } {
  const s = v.state;
  const a = s.accounts.get(address)!;
  let equity = ratio(
    mode === 'Cross' ? a.crossCash : (a.isolated.find((p) => p.market === market)?.cash ?? 0n),
    1_000_000n,
  );
  let mm = ratio(0n);
  for (const p of a.positions) {
    if (p.mode !== mode || (mode === 'Isolated' && p.market !== market)) continue;
    const m = s.markets.get(p.market)!;
    const mark = p.market === market ? price : ratio(m.prices.mark ?? m.lastTrade!, 10n ** 18n);
    equity = radd(equity, rmul(ratio(p.size, 10n ** BigInt(m.spec.quantityDecimals)), mark));
    mm = radd(mm, maintenanceExact(m.spec, p.size, mark));
  }
  return { equity, mm };
}

let liquidationChecks = 0;

describe('liquidation price', () => {
  afterAll(() => {
    // Guard against a vacuous property: the random markets must have produced positions.
    expect(liquidationChecks).toBeGreaterThan(50);
  });

  it("puts the scope's equity exactly at maintenance margin when plugged back", () => {
    fc.assert(
      fc.property(
        fc.array(
          stepArb.filter((s) => s.k === 'order' || s.k === 'oracle'),
          { minLength: 30, maxLength: 80 },
        ),
        fc.boolean(),
        (steps, tiered) => {
          const v = setup();
          if (tiered) {
            // A low second tier so positions here cross it.
            v.list({ ...ETH_SETTINGS, marginTiers: [{ notionalFloor: '20000', maxLeverage: 10 }] });
          }
          for (const s of steps) run(v, s);
          let checked = 0;
          v.state.accounts.forEach((a) => {
            for (const p of a.positions) {
              const liq = liquidationPrice(v.state, a, p);
              if (liq === null) continue;
              const { equity, mm } = scopeAt(v, a.address, p.mode, p.market, liq);
              expect(rsub(equity, mm).num).toBe(0n);
              checked++;
            }
          });
          liquidationChecks += checked;
        },
      ),
      { numRuns: Math.max(50, Math.floor(runs / 4)) },
    );
  });

  it('uses the tier that holds the notional at the liquidation price', () => {
    const spec = instrument({
      id: 1,
      symbol: 'X-PERP',
      tickSize: '1',
      lotSize: '1',
      quantityDecimals: 0,
      maxLeverage: 40,
      openInterestCap: '1000000000',
      marginTiers: [{ notionalFloor: '1000000', maxLeverage: 20 }],
    });
    // 30 units: MM is continuous, so solving with either tier lands on the same consistency check.
    const mmAt = (price: bigint) => maintenanceExact(spec, 30n, ratio(price));
    expect(reduced(mmAt(30_000n))).toEqual(ratio(11_250n)); // 900,000 x 1.25%
    expect(reduced(mmAt(40_000n))).toEqual(ratio(17_500n)); // 1,200,000 x 2.5% - 12,500
  });
});
