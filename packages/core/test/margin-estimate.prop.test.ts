/**
 * The float filters of margin decisions (src/margin/estimate.ts) may only say "surely allowed"
 * or "surely healthy" when the exact bigint figures say so too. Random scopes over random
 * instruments (tick and lot sizes, decimals, leverage, margin tiers, maker rebates), positions,
 * pools, resting-order totals and claim reservations, at magnitudes from dust to far beyond
 * 2^53, each also moved to within a few micro-units of the decision's boundary (where the
 * filter must give up) and to comfortably inside it (where it should decide).
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { newMarket } from '../src/engine/records.js';
import {
  type Account,
  availableToOpen,
  buildInstrument,
  createEngineState,
  type EngineState,
  type Instrument,
  type IsolatedPool,
  type LeverageSetting,
  type MarginMode,
  type Market,
  measureScope,
  type OrderTotals,
  PMap,
  type Position,
} from '../src/index.js';
import {
  estimateAfterFill,
  estimateScope,
  holdSurelyFits,
  surelyCovered,
  surelyHealthy,
  surelySolvent,
} from '../src/margin/estimate.js';
import { feeAmount, quoteAmount } from '../src/margin/ledger.js';
import { holdIncrease } from '../src/margin/scope.js';
import { fillEquityDelta, scopeEquity } from '../src/orders/solvency.js';
import { newEdit } from '../src/persistent/edit.js';
import { IdList } from '../src/persistent/id-list.js';
import { isLiquidatable, scopeRisk } from '../src/risk/health.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 1000);

interface Case {
  readonly state: EngineState;
  readonly account: Account;
  readonly specs: readonly Instrument[];
  readonly mode: MarginMode;
  readonly market: number;
  readonly buy: boolean;
  readonly qty: bigint;
  readonly price: bigint;
}

const decimalOf = (units: bigint, decimals: number): string => {
  const s = units.toString().padStart(decimals + 1, '0');
  return decimals === 0 ? s : `${s.slice(0, -decimals)}.${s.slice(-decimals)}`;
};

const specArb = (id: number) =>
  fc
    .record({
      tickExp: fc.integer({ min: 4, max: 18 }),
      tickMant: fc.constantFrom(1n, 5n, 25n),
      qd: fc.integer({ min: 0, max: 8 }),
      lotUnits: fc.constantFrom(1n, 5n, 100n),
      maxLev: fc.integer({ min: 1, max: 100 }),
      tiers: fc.array(
        fc.record({ floor: fc.bigInt({ min: 1n, max: 10n ** 9n }), cut: fc.nat(3) }),
        { maxLength: 2 },
      ),
      maker: fc.constantFrom('-0.0001', '0', '0.00015', '0.0002'),
      taker: fc.constantFrom('0.00045', '0.001', '0.0002'),
    })
    .map((r) => {
      let floor = 0n;
      let lev = r.maxLev;
      const marginTiers: { notionalFloor: string; maxLeverage: number }[] = [];
      for (const t of r.tiers) {
        floor += t.floor;
        lev = Math.max(1, lev - t.cut);
        marginTiers.push({ notionalFloor: String(floor), maxLeverage: lev });
      }
      const built = buildInstrument({
        id,
        symbol: `M${id}-PERP`,
        tickSize: decimalOf(r.tickMant * 10n ** BigInt(18 - r.tickExp), 18),
        lotSize: decimalOf(r.lotUnits, r.qd),
        quantityDecimals: r.qd,
        maxLeverage: r.maxLev,
        marginTiers,
        openInterestCap: '1000000000000',
        makerFeeRate: r.maker,
        takerFeeRate: r.taker,
      });
      if (!built.ok) throw new Error(built.error);
      return built.instrument;
    });

/** A bigint whose magnitude ranges from dust to about 2^80. */
const wide = (positive = false) =>
  fc
    .tuple(fc.bigInt({ min: 0n, max: 999n }), fc.integer({ min: 0, max: 21 }), fc.boolean())
    .map(([m, e, neg]) => (positive || !neg ? 1n : -1n) * (m + 1n) * 10n ** BigInt(e));

const caseArb: fc.Arbitrary<Case> = fc.tuple(specArb(1), specArb(2), specArb(3)).chain((specs) =>
  fc
    .record({
      marks: fc.tuple(
        ...specs.map((s) => fc.bigInt({ min: 1n, max: 10n ** 8n }).map((t) => t * s.tickSize)),
      ),
      lastOnly: fc.array(fc.boolean(), { minLength: 3, maxLength: 3 }),
      crossCash: wide(),
      isolated: fc.array(fc.tuple(fc.integer({ min: 1, max: 3 }), wide()), { maxLength: 3 }),
      positions: fc.array(
        fc.record({
          m: fc.integer({ min: 0, max: 2 }),
          iso: fc.boolean(),
          lots: wide(),
        }),
        { maxLength: 4 },
      ),
      totals: fc.array(
        fc.record({
          m: fc.integer({ min: 0, max: 2 }),
          iso: fc.boolean(),
          buy: wide(true),
          sell: fc.oneof(fc.constant(0n), wide(true)),
        }),
        { maxLength: 3 },
      ),
      leverage: fc.array(
        fc.record({ m: fc.integer({ min: 0, max: 2 }), iso: fc.boolean(), pct: fc.nat(100) }),
        { maxLength: 3 },
      ),
      claimReserve: fc.oneof(fc.constant(0n), wide(true)),
      iso: fc.boolean(),
      m: fc.integer({ min: 0, max: 2 }),
      buy: fc.boolean(),
      qtyLots: wide(true),
      priceTicks: fc.bigInt({ min: 1n, max: 10n ** 8n }),
    })
    .map((r): Case => {
      const edit = newEdit();
      let markets = PMap.empty<number, Market>();
      specs.forEach((spec, i) => {
        const mark = r.marks[i] as bigint;
        const market: Market = {
          ...newMarket(edit, spec),
          prices: {
            index: mark,
            indexTime: 0,
            mark: r.lastOnly[i] ? null : mark,
            markTime: 0,
            basisEmaNum: 0n,
            basisEmaDen: 0n,
            basisEmaTime: 0,
          },
          lastTrade: mark,
        };
        markets = markets.set(edit, spec.id, market);
      });
      const positions: Position[] = [];
      for (const p of r.positions) {
        const spec = specs[p.m] as Instrument;
        const mode: MarginMode = p.iso ? 'Isolated' : 'Cross';
        if (positions.some((q) => q.market === spec.id && q.mode === mode)) continue;
        positions.push({
          market: spec.id,
          mode,
          size: p.lots * spec.lotSize,
          entryNotional: 0n,
          entryQty: 0n,
          openedTime: 0,
          realizedPnl: 0n,
          fundingSinceOpen: 0n,
        });
      }
      const orderTotals: OrderTotals[] = [];
      for (const t of r.totals) {
        const spec = specs[t.m] as Instrument;
        const mode: MarginMode = t.iso ? 'Isolated' : 'Cross';
        if (orderTotals.some((q) => q.market === spec.id && q.mode === mode)) continue;
        // Notionals in raw x raw units, as leaves x price sums are.
        orderTotals.push({
          market: spec.id,
          mode,
          buyQty: spec.lotSize,
          buyNotional: t.buy * spec.lotSize * spec.tickSize,
          sellQty: t.sell === 0n ? 0n : spec.lotSize,
          sellNotional: t.sell * spec.lotSize * spec.tickSize,
          buyMaxLeaves: spec.lotSize,
          sellMaxLeaves: t.sell === 0n ? 0n : spec.lotSize,
          guardedCount: 0,
        });
      }
      const leverage: LeverageSetting[] = [];
      for (const l of r.leverage) {
        const spec = specs[l.m] as Instrument;
        const mode: MarginMode = l.iso ? 'Isolated' : 'Cross';
        if (leverage.some((q) => q.market === spec.id && q.mode === mode)) continue;
        const x100 = 100 + Math.floor(((spec.maxLeverage - 100) * l.pct) / 100);
        leverage.push({ market: spec.id, mode, leverage: x100 });
      }
      const isolated: IsolatedPool[] = [];
      for (const [m, cash] of r.isolated) {
        if (!isolated.some((q) => q.market === m)) isolated.push({ market: m, cash });
      }
      const account: Account = {
        edit: null,
        address: '0x00000000000000000000000000000000000000aa',
        createdTime: 0,
        reportSeq: 0,
        crossCash: r.crossCash,
        isolated,
        positions,
        leverage,
        orderTotals,
        orders: IdList.empty(),
        claimReserve: r.claimReserve,
      };
      const spec = specs[r.m] as Instrument;
      return {
        state: { ...createEngineState(), markets },
        account,
        specs,
        mode: r.iso ? 'Isolated' : 'Cross',
        market: spec.id,
        buy: r.buy,
        qty: r.qtyLots * spec.lotSize,
        price: r.priceTicks * spec.tickSize,
      };
    }),
);

/** The case with its scope's pool cash moved by `delta`. */
function withCash(c: Case, delta: bigint): Case {
  const a = c.account;
  if (c.mode === 'Cross') return { ...c, account: { ...a, crossCash: a.crossCash + delta } };
  const pools = a.isolated.filter((p) => p.market !== c.market);
  const cash = a.isolated.find((p) => p.market === c.market)?.cash ?? 0n;
  return {
    ...c,
    account: { ...a, isolated: [...pools, { market: c.market, cash: cash + delta }] },
  };
}

const specOf = (c: Case) => c.specs.find((s) => s.id === c.market) as Instrument;
const scopeMarket = (c: Case) => (c.mode === 'Cross' ? 0 : c.market);

// The exact figures each filter stands in for, as the engine computes them.
const exact = {
  /** checkHold: available-to-open after the order rests (less the cross claim reservations). */
  hold(c: Case): bigint {
    const spec = specOf(c);
    const increase = holdIncrease(c.state, c.account, spec, c.mode, {
      orderId: 1 << 30,
      buy: c.buy,
      leaves: c.qty,
      price: c.price,
    });
    const before = measureScope(c.state, c.account, c.mode, c.market, undefined, true);
    const reserve = c.mode === 'Cross' ? c.account.claimReserve : 0n;
    return availableToOpen(before) - reserve - increase;
  },
  /** makerMarginAllows, increasing: equity less initial margin after the fill (holds left out). */
  covered(c: Case, rate: bigint): bigint {
    const spec = specOf(c);
    const signed = c.buy ? c.qty : -c.qty;
    const quote = quoteAmount(spec, c.qty, c.price);
    const fee = feeAmount(spec, c.qty, c.price, rate);
    const m = measureScope(
      c.state,
      c.account,
      c.mode,
      c.market,
      {
        market: c.market,
        price: c.price,
        sizeDelta: signed,
        cashDelta: (signed > 0n ? -quote : quote) - fee,
        buyQtyDelta: 0n,
        buyNotionalDelta: 0n,
        sellQtyDelta: 0n,
        sellNotionalDelta: 0n,
      },
      true,
    );
    return m.equity - m.initialMargin - (c.mode === 'Cross' ? c.account.claimReserve : 0n);
  },
  /** The solvency guard: equity after the fill at the mark. */
  solvent(c: Case, rate: bigint): bigint {
    const spec = specOf(c);
    const market = c.state.markets.get(c.market)!;
    const mark = market.prices.mark ?? market.lastTrade!;
    const size = c.account.positions.find((p) => p.market === c.market && p.mode === c.mode);
    const d = fillEquityDelta(spec, size?.size ?? 0n, c.buy, c.qty, c.price, mark, rate);
    return scopeEquity(c.state, c.account, c.mode, c.market) + d;
  },
};

/** The filters' estimate of the scope after the case's fill at fee rate `rate`. */
const afterFill = (c: Case, rate: bigint) =>
  estimateAfterFill(c.state, c.account, c.mode, specOf(c), c.buy, c.qty, c.price, rate);

const counts = { decided: 0, undecided: 0 };

/** The filter must not be sure where the exact figure is negative. */
function agrees(sure: boolean, exactFigure: bigint, what: string): void {
  if (sure) {
    counts.decided++;
    if (exactFigure < 0n) throw new Error(`${what}: the filter was sure, exact ${exactFigure}`);
  } else counts.undecided++;
}

/** Runs `check` on the case, then with the scope's cash moved to `near` of the boundary. */
function aroundBoundary(
  c: Case,
  figure: (c: Case) => bigint,
  check: (c: Case, exactFigure: bigint) => void,
  near: readonly bigint[],
): void {
  const f = figure(c);
  check(c, f);
  for (const d of near) {
    const moved = withCash(c, d - f);
    // Every figure here is the pool's cash plus terms that do not depend on it.
    const g = figure(moved);
    expect(g).toBe(d);
    check(moved, g);
  }
}

const NEAR = [-3n, -1n, 0n, 1n, 3n, 10n ** 9n];

afterAll(() => {
  console.log(`margin estimate: ${counts.decided} decided, ${counts.undecided} left to exact`);
});

describe('float filters of margin decisions (margin/estimate.ts)', () => {
  it('holdSurelyFits only where checkHold would accept', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        aroundBoundary(
          c,
          exact.hold,
          (k, e) =>
            agrees(
              holdSurelyFits(k.state, k.account, specOf(k), k.mode, k.qty, k.price),
              e,
              'hold',
            ),
          NEAR,
        );
      }),
      { numRuns: runs },
    );
  });

  it('surelyCovered after a fill only where the exact equity less initial margin (less claim reservations) is not negative', () => {
    fc.assert(
      fc.property(caseArb, fc.boolean(), (c, maker) => {
        const rate = maker ? specOf(c).makerFeeRate : specOf(c).takerFeeRate;
        aroundBoundary(
          c,
          (k) => exact.covered(k, rate),
          (k, e) =>
            agrees(
              surelyCovered(afterFill(k, rate), k.mode === 'Cross' ? k.account.claimReserve : 0n),
              e,
              'covered',
            ),
          NEAR,
        );
      }),
      { numRuns: runs },
    );
  });

  it('surelySolvent after a fill only where the exact equity at the mark is not negative', () => {
    fc.assert(
      fc.property(caseArb, fc.boolean(), (c, maker) => {
        const market = c.state.markets.get(c.market)!;
        // The guard acts only once the market has a mark.
        if (market.prices.mark === null) return;
        const rate = maker ? specOf(c).makerFeeRate : specOf(c).takerFeeRate;
        aroundBoundary(
          c,
          (k) => exact.solvent(k, rate),
          (k, e) => agrees(surelySolvent(afterFill(k, rate)), e, 'solvent'),
          NEAR,
        );
      }),
      { numRuns: runs },
    );
  });

  it('surelyHealthy only where the exact scope is not liquidatable', () => {
    fc.assert(
      fc.property(caseArb, (c) => {
        const figure = (k: Case) => {
          const r = scopeRisk(k.state, k.account, k.mode, scopeMarket(k));
          return r.equity - r.maintenance;
        };
        aroundBoundary(
          c,
          figure,
          (k) => {
            const r = scopeRisk(k.state, k.account, k.mode, scopeMarket(k));
            const est = estimateScope(k.state, k.account, k.mode, scopeMarket(k), undefined, {
              maintenance: true,
              holds: false,
            });
            if (surelyHealthy(est)) {
              counts.decided++;
              if (isLiquidatable(r)) throw new Error('healthy by estimate, liquidatable exactly');
            } else counts.undecided++;
          },
          NEAR,
        );
      }),
      { numRuns: runs },
    );
  });

  it('decides the comfortable cases: with room far beyond its error bound it is sure', () => {
    let sure = 0;
    let cases = 0;
    let all = 0;
    fc.assert(
      fc.property(caseArb, (c) => {
        all++;
        const roomy = withCash(c, 10n ** 30n - exact.hold(c));
        // 10^30 micro-units of room dwarf the error bound when the scope's figures and the
        // order's notional stay below 10^24 (the bound grows with them: far larger ones may
        // rightly leave the decision to the exact code).
        const e = estimateScope(roomy.state, roomy.account, roomy.mode, roomy.market);
        const order = (Number(roomy.qty) * Number(roomy.price)) / 1e12;
        if (e.error > 1e24 || order > 1e24) return;
        cases++;
        if (
          holdSurelyFits(
            roomy.state,
            roomy.account,
            specOf(roomy),
            roomy.mode,
            roomy.qty,
            roomy.price,
          )
        )
          sure++;
      }),
      { numRuns: Math.max(50, runs / 10) },
    );
    expect(sure).toBe(cases);
    // Most generated cases are of such magnitudes: the check is not vacuous.
    expect(cases * 4).toBeGreaterThan(all);
  });
});
