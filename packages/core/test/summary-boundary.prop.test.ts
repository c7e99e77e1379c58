/**
 * The account summary's money figures are the engine's own limits, exactly (engine-rules 4 and
 * 9), after every step of the risk fuzz (liquidations, auctions and claims, ADL, funding, busts),
 * with and without margin tiers:
 *
 * - withdrawing exactly `withdrawable` from cross, or moving exactly an isolated position's
 *   `transferable` to cross, is accepted and starts no liquidation; one micro-unit more is refused
 *   with 4100 (a scope whose auction runs shows 0 and refuses even one micro-unit);
 * - `marginSummary` adds up: account value and margin used are the cross figures plus every
 *   isolated `marginUsed`, raw USD the cross cash plus every isolated pool;
 * - a displayed `liquidationPx` is never on the wrong side of the mark: a long's at or below it,
 *   a short's at or above it, since every scope outside an auction is healthy after a command,
 *   also after the operator lists a market again with new maintenance tiers (checked here too).
 *
 * Each probe runs on the state of the step and is then thrown away (the reducer is pure).
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import {
  accountSummary,
  type EngineEvent,
  isLiquidatable,
  type Outcome,
  parseDecimal,
  scopeInAuction,
  scopeRisk,
} from '../src/index.js';
import { BTC_SETTINGS, ETH_SETTINGS, type TestVenue } from '../src/testing/index.js';
import {
  type MarketParams,
  marketArb,
  N_TRADERS,
  runStep,
  type Step,
  SYMS,
  setup,
  stepArb,
  TRADERS,
} from './risk-fuzz.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 60);
/** The fuzz's steps, with more small auction claims: their reservations stay until the end. */
type Listing = 'plain' | 'tiered' | 'lowered';
type ProbeStep = Step | { k: 'relist'; listing: Listing };
const steps: fc.Arbitrary<ProbeStep> = fc.oneof(
  { weight: 8, arbitrary: stepArb },
  // The operator lists the markets again with or without margin tiers (maintenance moves).
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('relist' as const),
      listing: fc.constantFrom<Listing>('plain', 'tiered', 'lowered'),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('claim' as const),
      w: fc.nat(N_TRADERS - 1),
      frac: fc.integer({ min: 1, max: 30 }),
    }),
  },
);
const seen = { withdrawals: 0, transfers: 0, auctions: 0, reserved: 0, liquidationPx: 0 };

function decimal(text: string, decimals: number): bigint {
  const r = parseDecimal(text, decimals, true);
  if (!r.ok) throw new Error(`not a decimal at ${decimals} places: ${text}`);
  return r.value;
}

const micro = (text: string): bigint => decimal(text, 6);

function outcome(events: readonly EngineEvent[]): Outcome {
  return events.find((e): e is Outcome => e.type === 'outcome')!;
}

/**
 * Lists the two markets again as `setup` did (`plain`), with two low margin tiers (maintenance
 * up to five times the base rate) and a default leverage that fits the last one (`tiered`), or
 * with a quarter of the maximum leverage (`lowered`: maintenance four times the base rate).
 */
function relist(v: TestVenue, params: readonly MarketParams[], listing: Listing): void {
  const tiered = listing === 'tiered';
  [BTC_SETTINGS, ETH_SETTINGS].forEach((base, i) => {
    const p = params[i]!;
    const tiers = [
      { notionalFloor: '1000', maxLeverage: Math.floor(p.maxLev / 2) },
      { notionalFloor: '10000', maxLeverage: Math.floor(p.maxLev / 5) },
    ];
    v.list({
      ...base,
      lotSize: '0.001',
      quantityDecimals: 3,
      maxLeverage: listing === 'lowered' ? Math.floor(p.maxLev / 4) : p.maxLev,
      defaultLeverage: tiered
        ? Math.floor(p.maxLev / 5)
        : listing === 'lowered'
          ? Math.floor(p.maxLev / 4)
          : p.maxLev,
      openInterestCap: '1000000',
      makerFeeRate: p.fees[1],
      takerFeeRate: p.fees[0],
      funding: { impactNotional: '500' },
      liquidation: {
        partialThreshold: p.threshold,
        auctionDurationMs: p.auctionMs,
        feeRate: p.liqFee,
      },
      marginTiers: tiered ? tiers : null,
    });
  });
}

/** Runs `probe` on the current state and puts the state back. */
function trial(v: TestVenue, probe: () => void): void {
  const state = v.state;
  try {
    probe();
  } finally {
    v.state = state;
  }
}

/** After every command, no scope is below maintenance margin outside its auction. */
function checkHealth(v: TestVenue): void {
  v.state.accounts.forEach((a) => {
    const scopes = new Set(a.positions.map((p) => (p.mode === 'Cross' ? 0 : p.market)));
    for (const s of scopes) {
      const mode = s === 0 ? 'Cross' : 'Isolated';
      if (scopeInAuction(v.state, a.address, mode, s)) continue;
      const r = scopeRisk(v.state, a, mode, s);
      if (isLiquidatable(r)) {
        throw new Error(
          `${a.address} ${mode} ${s} left liquidatable: ${r.equity} < ${r.maintenance}`,
        );
      }
    }
  });
}

function checkSummaries(v: TestVenue): void {
  for (const w of TRADERS) {
    const s = accountSummary(v.state, w, v.time)!;
    let isoMarginUsed = 0n;
    let isoCash = 0n;
    const account = v.state.accounts.get(w)!;
    for (const pool of account.isolated) isoCash += pool.cash;
    for (const p of s.assetPositions) {
      const market = SYMS.indexOf(p.instrument as (typeof SYMS)[number]) + 1;
      if (p.marginMode === 'Isolated') isoMarginUsed += micro(p.marginUsed);
      if (p.liquidationPx !== null && p.szi !== '0') {
        const scope = p.marginMode === 'Cross' ? 0 : market;
        if (!scopeInAuction(v.state, w, p.marginMode, scope)) {
          const liq = decimal(p.liquidationPx, 18);
          const mark = v.state.markets.get(market)!.prices.mark!;
          // Half-even at 18 decimals: one raw unit of display rounding either way.
          if (p.szi.startsWith('-')) expect(liq).toBeGreaterThanOrEqual(mark - 1n);
          else expect(liq).toBeLessThanOrEqual(mark + 1n);
          seen.liquidationPx++;
        }
      }
    }
    expect(micro(s.marginSummary.accountValue)).toBe(
      micro(s.crossMarginSummary.accountValue) + isoMarginUsed,
    );
    expect(micro(s.marginSummary.totalMarginUsed)).toBe(
      micro(s.crossMarginSummary.totalMarginUsed) + isoMarginUsed,
    );
    expect(micro(s.marginSummary.totalRawUsd)).toBe(account.crossCash + isoCash);
    expect(micro(s.crossMarginSummary.totalRawUsd)).toBe(account.crossCash);

    const cross = { mode: 'Cross' as const, market: 0 };
    if (account.claimReserve > 0n) seen.reserved++;
    const withdrawable = micro(s.withdrawable);
    if (scopeInAuction(v.state, w, 'Cross', 0)) {
      expect(withdrawable).toBe(0n);
      trial(v, () => {
        const o = outcome(v.run({ type: 'withdraw', account: w, amount: 1n, target: cross }));
        expect(o).toMatchObject({ ok: false, code: 4100 });
      });
      seen.auctions++;
    } else if (withdrawable > 0n) {
      trial(v, () => {
        const events = v.run({ type: 'withdraw', account: w, amount: withdrawable, target: cross });
        expect(outcome(events).ok).toBe(true);
        expect(events.filter((e) => e.type === 'liquidationStarted')).toEqual([]);
      });
      trial(v, () => {
        const events = v.run({
          type: 'withdraw',
          account: w,
          amount: withdrawable + 1n,
          target: cross,
        });
        expect(outcome(events)).toMatchObject({ ok: false, code: 4100 });
      });
      seen.withdrawals++;
    }
    for (const p of s.assetPositions) {
      if (p.marginMode !== 'Isolated') continue;
      const market = SYMS.indexOf(p.instrument as (typeof SYMS)[number]) + 1;
      const transferable = micro(p.transferable!);
      const move = (amount: bigint) =>
        v.run({
          type: 'transferMargin',
          account: w,
          market,
          amount,
          direction: 'isolatedToCross',
        });
      if (scopeInAuction(v.state, w, 'Isolated', market)) {
        expect(transferable).toBe(0n);
        trial(v, () => expect(outcome(move(1n))).toMatchObject({ ok: false, code: 4100 }));
        seen.auctions++;
      } else if (transferable > 0n) {
        trial(v, () => {
          const events = move(transferable);
          expect(outcome(events).ok).toBe(true);
          expect(events.filter((e) => e.type === 'liquidationStarted')).toEqual([]);
        });
        trial(v, () =>
          expect(outcome(move(transferable + 1n))).toMatchObject({ ok: false, code: 4100 }),
        );
        seen.transfers++;
      }
    }
  }
}

describe('account summary figures at their limits', () => {
  afterAll(() => {
    if (process.env.FC_STATS !== undefined) console.log(seen);
    if (runs >= 20) {
      expect(seen.withdrawals).toBeGreaterThan(0);
      expect(seen.transfers).toBeGreaterThan(0);
      expect(seen.liquidationPx).toBeGreaterThan(0);
    }
  });

  it('withdrawable and transferable are exactly what may leave; the summary adds up', () => {
    fc.assert(
      fc.property(
        fc.array(marketArb, { minLength: 2, maxLength: 2 }),
        fc.array(fc.integer({ min: 200, max: 20_000 }), {
          minLength: N_TRADERS,
          maxLength: N_TRADERS,
        }),
        fc.array(steps, { minLength: 20, maxLength: 60, size: 'max' }),
        fc.boolean(),
        (params, funds, steps, tiered) => {
          const v = setup(params, funds);
          if (tiered) relist(v, params, 'tiered');
          for (const s of steps) {
            if (s.k === 'relist') relist(v, params, s.listing);
            else runStep(v, s);
            checkHealth(v);
            checkSummaries(v);
          }
        },
      ),
      { numRuns: runs },
    );
  });
});
