/**
 * Risk-engine properties over random markets, price shocks and many accounts: conservation
 * (pools, fee pool and insurance fund, exactly), no scope left liquidatable outside a live
 * auction, no negative equity in any scope after any command (the solvency guard of order fills;
 * the exceptions are a scope in its own live auction and a venue shortfall: a liquidation whose
 * loss exceeded the fund and what ADL could transfer), an insurance fund that never goes
 * negative and pays a deficit before ADL passes any loss beyond the mark to counterparties
 * (rule 7.5), funding summing to zero up to its documented residue, claim reservations matching
 * live claims, isolated liquidation leaving every other pool alone, and a bust equal to the
 * history without that trade. Runs are moderate by default; FC_NUM_RUNS raises them.
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type Account,
  type EngineEvent,
  type EngineState,
  type Instrument,
  isLiquidatable,
  liveAuctions,
  type MarginMode,
  nextPosition,
  notionalScale,
  type Outcome,
  type PositionSnapshot,
  scopeInAuction,
  scopeRisk,
  type TradeRecord,
  tradeRecords,
  valuationPrice,
} from '../src/index.js';
import {
  BTC_SETTINGS,
  ETH_SETTINGS,
  TestVenue,
  totalCollateral,
  usd,
} from '../src/testing/index.js';
import {
  BASE,
  HOUR,
  type MarketParams,
  marketArb,
  N_TRADERS,
  priceText,
  runStep,
  type Step,
  SYMS,
  setup,
  stepArb,
  TRADERS,
} from './risk-fuzz.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 40);
/** Cases the main property once failed on, run first every time. */
const regressions = (
  JSON.parse(
    readFileSync(new URL('./vectors/risk-prop-regressions.json', import.meta.url), 'utf8'),
  ) as { cases: [MarketParams[], number[], Step[]][] }
).cases;
/** FC_SEED and FC_PATH (from a failure's report) replay that one case of the main property. */
const replay =
  process.env.FC_SEED === undefined
    ? {}
    : { seed: Number(process.env.FC_SEED), path: process.env.FC_PATH ?? '', endOnFailure: true };
const outcome = (events: readonly EngineEvent[]): Outcome =>
  events.find((e): e is Outcome => e.type === 'outcome')!;

/**
 * What `checkRisk` needs from the state before the command: marks, the insurance fund, and the
 * live auctions (one may end in the command, finishing its liquidation).
 */
interface Before {
  readonly marks: Map<number, bigint>;
  readonly fund: bigint;
  readonly auctions: Map<number, { readonly liquidationId: number; readonly scope: string }>;
}

/** A margin scope's key: `account|market`, market 0 for the cross scope. */
const scopeKey = (account: string, mode: MarginMode, market: number): string =>
  `${account}|${mode === 'Cross' ? 0 : market}`;

function before(state: EngineState): Before {
  const marks = new Map<number, bigint>();
  state.markets.forEach((m, id) => {
    const mark = valuationPrice(m);
    if (mark !== null) marks.set(id, mark);
  });
  const auctions: Before['auctions'] = new Map();
  state.auctions.forEach((a) => {
    auctions.set(a.auctionId, {
      liquidationId: a.liquidationId,
      scope: scopeKey(a.account, a.mode, a.market),
    });
  });
  return { marks, fund: state.insuranceFund, auctions };
}

/** One ADL fill may cost its counterparty this much beyond the mark: sub-micro rounding only. */
const ADL_ROUNDING = 2n;

/**
 * Scopes a liquidation left with a deficit nothing could pay (the venue's shortfall), by
 * {@link scopeKey}, with the equity it was left at. One map per run.
 */
type Shortfalls = Map<string, bigint>;

/** Whether the scope of a {@link scopeKey} holds no position. */
function scopeIsFlat(state: EngineState, key: string): boolean {
  let flat = true;
  state.accounts.forEach((a) => {
    for (const s of scopesOf(a)) {
      const mode = s === 0 ? 'Cross' : 'Isolated';
      if (scopeKey(a.address, mode, s) !== key) continue;
      flat = !a.positions.some((p) => p.mode === mode && (mode === 'Cross' || p.market === s));
    }
  });
  return flat;
}

/** Every margin scope of an account: cross (0) and each isolated pool or position's market. */
function scopesOf(a: Account): number[] {
  const scopes = new Set<number>([0]);
  for (const pool of a.isolated) scopes.add(pool.market);
  for (const p of a.positions) if (p.mode === 'Isolated') scopes.add(p.market);
  return [...scopes];
}

/** The checks that hold after every command, beyond TestVenue's invariants. */
function checkRisk(
  state: EngineState,
  events: readonly EngineEvent[],
  shortfalls: Shortfalls,
  prior: Before,
): void {
  // Conservation, exactly: every pool, the fee pool and the insurance fund.
  expect(totalCollateral(state)).toBe(state.totalDeposits - state.totalWithdrawals);
  // The insurance fund never goes negative.
  expect(state.insuranceFund).toBeGreaterThanOrEqual(0n);
  // No scope below maintenance margin unless its auction is running.
  const reserves = new Map<string, bigint>();
  state.auctions.forEach((a) => {
    for (const c of a.claims)
      reserves.set(c.claimant, (reserves.get(c.claimant) ?? 0n) + c.reserve);
  });
  state.accounts.forEach((a) => {
    expect(a.claimReserve).toBe(reserves.get(a.address) ?? 0n);
    const scopes = new Set(a.positions.map((p) => (p.mode === 'Cross' ? 0 : p.market)));
    for (const s of scopes) {
      const mode = s === 0 ? 'Cross' : 'Isolated';
      if (scopeInAuction(state, a.address, mode, s)) continue;
      const r = scopeRisk(state, a, mode, s);
      if (isLiquidatable(r)) {
        throw new Error(
          `${a.address} ${mode} ${s} left liquidatable: ${r.equity} < ${r.maintenance}`,
        );
      }
      expect(r.equity).toBeGreaterThanOrEqual(0n);
    }
  });
  // The insurance fund, followed through the command's events: every change is reported, it
  // never goes below zero, and while it holds anything no ADL fill costs its counterparty more
  // than rounding beyond the mark (the fund pays the deficit first, rule 7.5).
  // The fund when each liquidation of the command was done (a liquidation runs to its end
  // before the next one starts), and the scope of each: one that started in the command, or
  // whose auction ended in it, or that filled in it.
  const fundAfter = new Map<number, bigint>();
  const liquidated = new Map<number, string>();
  // Scopes left owing what neither the fund nor the fee pool could pay (`backstop` events).
  const debtNow = new Set<string>();
  {
    let fund = prior.fund;
    let current: number | undefined;
    const marks = new Map(prior.marks);
    const working = (id: number, scope: string): void => {
      if (current !== undefined && current !== id) fundAfter.set(current, fund);
      current = id;
      liquidated.set(id, scope);
    };
    // Funding due after an auction's end runs after it in the same command (due work runs in
    // time order): the liquidation was done before funding paid its residue into the fund.
    const settled = (): void => {
      if (current !== undefined) fundAfter.set(current, fund);
      current = undefined;
    };
    for (const e of events) {
      if (e.type === 'fundingSettled' || (e.type === 'executionReport' && e.kind === 'Funding'))
        settled();
      if (e.type === 'liquidationStarted') {
        working(e.liquidationId, scopeKey(e.account, e.marginMode, e.market));
      }
      if (e.type === 'executionReport' && e.kind === 'Liquidation') {
        working(e.liquidationId, scopeKey(e.account, e.marginMode, e.market));
      }
      if (e.type === 'auction' && e.auction.status === 'Ended') {
        const a = prior.auctions.get(e.auction.auctionId);
        if (a !== undefined) working(a.liquidationId, a.scope);
      }
      if (e.type === 'markChanged') marks.set(e.market, e.mark);
      if (e.type === 'insurance') {
        expect(e.balance).toBe(fund + e.delta);
        expect(e.balance).toBeGreaterThanOrEqual(0n);
        if (e.reason === 'Deficit') expect(e.delta).toBeLessThan(0n);
        else if (e.reason === 'Transfer') {
          // The operator's move: either way, never zero, the fee pool taking the other side.
          expect(e.delta).not.toBe(0n);
          seen.transfers!++;
        } else expect(e.delta).toBeGreaterThan(0n);
        fund = e.balance;
      }
      if (e.type === 'backstop') {
        // The fee pool pays only after the fund is empty, never more than it holds, and a debt
        // is left only when it is empty too. It is below zero only after a bust refunded fees
        // that a payout had already taken out (docs/risk-engine.md); it then pays nothing.
        expect(fund).toBe(0n);
        expect(e.amount).toBeGreaterThanOrEqual(0n);
        if (e.feePool < 0n) expect(e.amount).toBe(0n);
        expect(e.debt).toBeGreaterThanOrEqual(0n);
        if (e.debt > 0n) {
          expect(e.feePool <= 0n).toBe(true);
          debtNow.add(scopeKey(e.account, e.marginMode, e.market));
          seen.debts!++;
        }
        if (e.amount > 0n) seen.backstops!++;
      }
      if (e.type === 'executionReport' && e.kind === 'ADL') {
        const f = e.fill;
        const scale = notionalScale(state.markets.get(f.market)!.spec);
        const atMark = f.quantity * marks.get(f.market)!;
        // Counterparty's cost beyond closing at the mark, micro-units x scale.
        const cost = f.side === 'Buy' ? f.quote * scale - atMark : atMark - f.quote * scale;
        if (cost > ADL_ROUNDING * scale && fund > 0n) {
          throw new Error(
            `ADL cost ${e.account} ${cost / scale} micro-units beyond the mark while the insurance fund held ${fund}`,
          );
        }
      }
    }
    if (current !== undefined) fundAfter.set(current, fund);
    expect(fund).toBe(state.insuranceFund);
  }
  for (const e of events) {
    if (e.type === 'fundingSettled') {
      const s = e.settlement;
      const paid = s.payments.reduce((t, p) => t + p.payment, 0n);
      // Payments sum to zero up to the residue: payers round up, receivers down.
      expect(paid + s.residue).toBe(0n);
      expect(s.residue).toBeGreaterThanOrEqual(0n);
      expect(s.residue).toBeLessThanOrEqual(BigInt(s.payments.length));
    }
  }
  // No negative equity anywhere after any command: every scope of every account, flat or not,
  // traded, liquidated or deleveraged (the solvency guard keeps order fills from leaving one
  // below zero, docs/risk-engine.md; ADL never leaves a counterparty negative). Two exceptions:
  // - a scope whose own liquidation auction is still running;
  // - the venue's shortfall: a liquidated scope whose loss was larger than everything that could
  //   pay it. Its liquidation was done in this command with the insurance fund empty (having
  //   paid before any ADL fill went beyond the mark, checked above), ADL could transfer no
  //   more (counterparties capped at their equity, or a short's buy-back at the price floor),
  //   and, once the scope is flat, the fee pool, the last resort, was empty too (its `backstop`
  //   event reports the debt). It may stay negative afterwards only exactly as its liquidation
  //   left it.
  const shortNow = new Set<string>();
  for (const [id, scope] of liquidated) {
    if (fundAfter.get(id) !== 0n) continue;
    if (debtNow.has(scope) || !scopeIsFlat(state, scope)) shortNow.add(scope);
  }
  // A bust can leave a flat scope owing what the fund and the fee pool could not pay (funding
  // paid on the busted position is not reversed): a debt reported in this command's backstop.
  for (const scope of debtNow) if (scopeIsFlat(state, scope)) shortNow.add(scope);
  state.accounts.forEach((a) => {
    for (const s of scopesOf(a)) {
      const mode = s === 0 ? 'Cross' : 'Isolated';
      const key = scopeKey(a.address, mode, s);
      const equity = scopeRisk(state, a, mode, s).equity;
      if (equity >= 0n) {
        shortfalls.delete(key);
        continue;
      }
      if (scopeInAuction(state, a.address, mode, s)) continue;
      if (shortNow.has(key)) {
        seen.shortfalls!++;
        shortfalls.set(key, equity);
        continue;
      }
      if (shortfalls.get(key) === equity) continue;
      throw new Error(`${a.address} ${mode} ${s} left at negative equity ${equity}`);
    }
  });
}

/** What the random runs exercised (checked at the end so the properties are not vacuous). */
const seen: Record<string, number> = {
  trades: 0,
  rejects: 0,
  liquidations: 0,
  market: 0,
  auctions: 0,
  claims: 0,
  adl: 0,
  funding: 0,
  busts: 0,
  deficits: 0,
  backstops: 0,
  debts: 0,
  shortfalls: 0,
  transfers: 0,
  payouts: 0,
};

function count(events: readonly EngineEvent[]): void {
  for (const e of events) {
    if (e.type === 'liquidationStarted') seen.liquidations!++;
    if (e.type === 'trade') seen.trades!++;
    if (e.type === 'outcome' && !e.ok) seen[`rej${e.code}`] = (seen[`rej${e.code}`] ?? 0) + 1;
    if (e.type === 'auction' && e.auction.status === 'Live' && e.auction.remaining > 0n)
      seen.auctions!++;
    if (e.type === 'fundingSettled') seen.funding!++;
    if (e.type === 'tradeBusted') seen.busts!++;
    if (e.type === 'outcome' && e.ok && e.kind === 'feePayout') seen.payouts!++;
    if (e.type === 'insurance' && e.reason === 'Deficit') seen.deficits!++;
    if (e.type === 'executionReport') {
      if (e.kind === 'ADL') seen.adl!++;
      if (e.kind === 'LiquidationClaim') seen.claims!++;
      if (e.kind === 'Liquidation' && e.method === 'Market') seen.market!++;
    }
  }
}

describe('risk properties over random markets, price shocks and many accounts', () => {
  afterAll(() => {
    if (process.env.FC_STATS !== undefined) console.log(seen);
    if (runs >= 20) {
      expect(seen.liquidations).toBeGreaterThan(0);
      expect(seen.adl).toBeGreaterThan(0);
      expect(seen.funding).toBeGreaterThan(0);
      // The insurance fund paid deficits (rule 7.5), so its invariants are not vacuous.
      expect(seen.deficits).toBeGreaterThan(0);
      expect(seen.transfers).toBeGreaterThan(0);
      expect(seen.payouts).toBeGreaterThan(0);
    }
  });

  it('conservation, no scope left liquidatable, no negative equity in any scope, funding residue', () => {
    fc.assert(
      fc.property(
        fc.array(marketArb, { minLength: 2, maxLength: 2 }),
        fc.array(fc.integer({ min: 200, max: 20_000 }), {
          minLength: N_TRADERS,
          maxLength: N_TRADERS,
        }),
        fc.array(stepArb, { minLength: 30, maxLength: 120, size: 'max' }),
        (params, funds, steps) => {
          const v = setup(params, funds);
          const shortfalls: Shortfalls = new Map();
          for (const s of steps) {
            const prior = before(v.state);
            const events = runStep(v, s);
            count(events);
            checkRisk(v.state, events, shortfalls, prior);
          }
          // Let every auction end and a funding hour pass; the checks still hold.
          const prior = before(v.state);
          const last = v.advance(2 * HOUR);
          count(last);
          checkRisk(v.state, last, shortfalls, prior);
          // Auctions started by that tick (funding can trigger liquidations) end 30 s later.
          for (let i = 0; i < 5 && liveAuctions(v.state).length > 0; i++) {
            const p = before(v.state);
            const more = v.advance(31_000);
            count(more);
            checkRisk(v.state, more, shortfalls, p);
          }
          expect(liveAuctions(v.state)).toEqual([]);
        },
      ),
      { numRuns: runs, examples: regressions, ...replay },
    );
  });

  it('an isolated liquidation leaves the cross pool and every other isolated pool unchanged', () => {
    fc.assert(
      fc.property(
        fc.array(marketArb, { minLength: 2, maxLength: 2 }),
        fc.array(fc.integer({ min: 200, max: 50_000 }), {
          minLength: N_TRADERS,
          maxLength: N_TRADERS,
        }),
        fc.array(stepArb, { minLength: 10, maxLength: 60, size: 'max' }),
        fc.nat(N_TRADERS - 1),
        fc.nat(1),
        fc.integer({ min: -40, max: 40 }),
        (params, funds, steps, w, m, pct) => {
          const v = setup(params, funds);
          for (const s of steps) runStep(v, s);
          v.advance(2 * HOUR);
          // No auction left running (funding at that tick can start one; it ends 30 s later).
          for (let i = 0; i < 5 && liveAuctions(v.state).length > 0; i++) v.advance(31_000);
          const who = TRADERS[w]!;
          const before = v.state.accounts.get(who)!;
          const isoScope = before.positions.some(
            (p) => p.mode === 'Isolated' && p.market === m + 1,
          );
          if (!isoScope) return;
          const others = (s: EngineState) => {
            const a = s.accounts.get(who)!;
            return {
              cross: a.crossCash,
              crossPositions: a.positions.filter((p) => p.mode === 'Cross').map((p) => p.size),
              pools: a.isolated.filter((p) => p.market !== m + 1),
            };
          };
          const snapshot = others(v.state);
          const crossHealthy = !isLiquidatable(scopeRisk(v.state, before, 'Cross', 0));
          // Forced liquidation of the isolated scope; then possibly a shock that liquidates it.
          const events = v.run({
            type: 'liquidate',
            account: who,
            mode: 'Isolated',
            market: m + 1,
            force: true,
          });
          expect(outcome(events).ok).toBe(true);
          if (crossHealthy) expect(others(v.state)).toEqual(snapshot);
          for (const e of events) {
            if (e.type === 'executionReport' && e.account === who && e.kind === 'Liquidation') {
              expect(e.marginMode).toBe('Isolated');
              expect(e.market).toBe(m + 1);
            }
          }
          void pct;
        },
      ),
      { numRuns: runs },
    );
  });
});

/** Replays the non-busted trades of the log from scratch: cash, fees and positions. */
function ledgerFromTrades(
  trades: readonly TradeRecord[],
  deposits: Map<string, bigint>,
  specOf: (m: number) => Instrument,
): { cash: Map<string, bigint>; fees: bigint; positions: Map<string, PositionSnapshot> } {
  const cash = new Map(deposits);
  const positions = new Map<string, PositionSnapshot>();
  let fees = 0n;
  const flat: PositionSnapshot = {
    size: 0n,
    entryNotional: 0n,
    entryQty: 0n,
    openedTime: 0,
    realizedPnl: 0n,
    fundingSinceOpen: 0n,
  };
  for (const t of trades) {
    if (t.busted) continue;
    for (const l of t.legs) {
      const pool = `${l.account}|${l.mode === 'Cross' ? 0 : t.market}`;
      cash.set(pool, (cash.get(pool) ?? 0n) + (l.signedQty > 0n ? -t.quote : t.quote) - l.fee);
      fees += l.fee;
      const key = `${l.account}|${t.market}|${l.mode}`;
      positions.set(
        key,
        nextPosition(specOf(t.market), positions.get(key) ?? flat, l.signedQty, t.price, t.time),
      );
    }
  }
  return { cash, fees, positions };
}

/** The venue's cash, fee pool and positions equal a replay of its non-busted trades. */
function expectLedgerOf(v: TestVenue, deposits: Map<string, bigint>): void {
  const trades = tradeRecords(v.state);
  const want = ledgerFromTrades(trades, deposits, (m) => v.state.markets.get(m)!.spec);
  expect(v.state.feePool).toBe(want.fees);
  v.state.accounts.forEach((a) => {
    expect(a.crossCash).toBe(want.cash.get(`${a.address}|0`) ?? 0n);
    for (const pool of a.isolated) {
      expect(pool.cash).toBe(want.cash.get(`${a.address}|${pool.market}`) ?? 0n);
    }
    for (const p of a.positions) {
      const w = want.positions.get(`${a.address}|${p.market}|${p.mode}`)!;
      expect([p.size, p.entryNotional, p.entryQty, p.realizedPnl, p.openedTime]).toEqual([
        w.size,
        w.entryNotional,
        w.entryQty,
        w.realizedPnl,
        w.openedTime,
      ]);
    }
  });
  for (const [key, w] of want.positions) {
    if (w.size === 0n) continue;
    const [addr, m, mode] = key.split('|');
    const p = v.state.accounts
      .get(addr!)!
      .positions.find((x) => x.market === Number(m) && x.mode === mode);
    expect(p?.size).toBe(w.size);
  }
}

describe('trade busts', () => {
  it('after busting trades the state equals the history without them (positions, cash, fees)', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.record({
            w: fc.nat(N_TRADERS - 1),
            m: fc.nat(1),
            buy: fc.boolean(),
            off: fc.integer({ min: -5, max: 5 }),
            lots: fc.integer({ min: 1, max: 300 }),
            iso: fc.boolean(),
          }),
          { minLength: 5, maxLength: 60 },
        ),
        fc.array(fc.nat(), { minLength: 1, maxLength: 6 }),
        (orders, picks) => {
          const v = new TestVenue({ settings: { tradeRetentionMs: 100 * HOUR } });
          v.list({
            ...BTC_SETTINGS,
            lotSize: '0.001',
            quantityDecimals: 3,
            openInterestCap: '100000',
          });
          v.list({ ...ETH_SETTINGS, openInterestCap: '1000000' });
          const deposits = new Map<string, bigint>();
          for (const w of TRADERS) {
            v.open(w);
            v.fund(w, '1000000');
            v.fund(w, '100000', 'BTC-PERP');
            v.fund(w, '100000', 'ETH-PERP');
            deposits.set(`${w}|0`, usd('1000000'));
            deposits.set(`${w}|1`, usd('100000'));
            deposits.set(`${w}|2`, usd('100000'));
          }
          v.oracle({ 'BTC-PERP': '50000', 'ETH-PERP': '3000' });
          for (const o of orders) {
            v.place(TRADERS[o.w]!, SYMS[o.m]!, {
              side: o.buy ? 'Buy' : 'Sell',
              qty: (o.lots / 1000).toFixed(3),
              price: priceText(o.m, BASE[o.m]! * (1 + o.off / 1000)),
              isolated: o.iso,
            });
          }
          // Before any bust the positions come from the live ledger alone: replaying the trades
          // with `nextPosition` must give them, or the reference below would share its mistakes.
          expectLedgerOf(v, deposits);
          const ids = v.state.trades.keys();
          for (const p of picks) {
            if (ids.length === 0) break;
            const id = ids[p % ids.length]!;
            const events = v.run({ type: 'bustTrade', tradeId: id, reason: 'test' });
            const o = outcome(events);
            if (v.state.trades.get(id)!.busted && o.ok) {
              const busts = events.filter(
                (e) => e.type === 'executionReport' && e.kind === 'TradeBust',
              );
              expect(busts.length).toBe(2);
              expect(events.some((e) => e.type === 'tradeBusted' && e.tradeId === id)).toBe(true);
            }
          }
          expectLedgerOf(v, deposits);
        },
      ),
      { numRuns: runs },
    );
  });
});
