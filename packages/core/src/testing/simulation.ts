/**
 * A seeded market simulation for the risk engine: market makers quoting around an index, leveraged
 * takers (cross and isolated) building positions, a crash of the index over a few minutes, a
 * claimant buying liquidation auctions, funding hours. Fully deterministic: the same options
 * give the same command log, event stream and state hash (the PRNG is seeded, time is
 * simulated). Used by `bench/simulate.mjs` and, in a short version, by the test suite.
 *
 * @module
 */
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import type { EngineEvent } from '../engine/events.js';
import { canonicalText, stateHash } from '../engine/state-hash.js';
import { solvencyReport } from '../risk/health.js';
import { liveAuctions } from '../risk/liquidation.js';
import { px, wallet } from './builders.js';
import { checkInvariants } from './invariants.js';
import { T0, TestVenue } from './venue.js';

/** Options of {@link runSimulation}. */
export interface SimulationOptions {
  /** Seed of the PRNG (an integer): the same options give the same run. */
  readonly seed: number;
  /** Leveraged takers (an integer, at least 1). */
  readonly takers: number;
  /** Simulated minutes; one step per second. */
  readonly minutes: number;
  /** Minute the crash starts, and how many minutes it takes (0: the index steps down at once). */
  readonly crashStart: number;
  readonly crashMinutes: number;
  /** Fall of the index over the crash, percent, below 100 (a negative value is a rise). */
  readonly crashPercent: number;
  /** Check every invariant after every command (slow); otherwise once a simulated minute. */
  readonly checkEveryCommand?: boolean;
}

/** What a run produced. */
export interface SimulationResult {
  /** `stateHash` of the venue at the end. */
  readonly stateHash: string;
  /**
   * keccak-256 over the canonical text of every command's events, in order: the listings,
   * accounts and deposits of the setup included (`venue.history`, one entry per command).
   */
  readonly eventsHash: string;
  /** Commands run, the setup included (`venue.log.length`). */
  readonly commands: number;
  /** Book prints (`trade` events). */
  readonly trades: number;
  /** Liquidations started (`liquidationStarted` events). */
  readonly liquidations: number;
  /** Liquidation fills against the resting book (`Liquidation` reports, method `Market`). */
  readonly marketSteps: number;
  /** Liquidation auctions that were live at some step. */
  readonly auctions: number;
  /** Auction claims settled (`LiquidationClaim` reports with status `Settled`). */
  readonly claims: number;
  /** ADL fills (the counterparties' `ADL` reports). */
  readonly adlFills: number;
  /** Funding payments (`Funding` reports, one per position and settlement). */
  readonly fundingPayments: number;
  /** Deficits the insurance fund paid (`insurance` events with reason `Deficit`). */
  readonly deficits: number;
  /** Deficits the fee pool paid after the insurance fund (`backstop` events with an amount). */
  readonly backstops: number;
  /** Debt left on liquidated scopes at the end (what fund, ADL and fee pool could not pay). */
  readonly debt: bigint;
  /** Insurance fund at the end of every simulated minute, micro-units. */
  readonly insurancePath: readonly bigint[];
  /** The venue itself: its state, command log (`log`) and events per command (`history`). */
  readonly venue: TestVenue;
}

/** mulberry32: a small seeded PRNG (deterministic; no ambient randomness). */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const MARKETS = [
  { id: 1, symbol: 'BTC-PERP', base: 60000, tick: 0.5, digits: 1, qd: 3, lot: 0.001 },
  { id: 2, symbol: 'ETH-PERP', base: 3000, tick: 0.05, digits: 2, qd: 3, lot: 0.001 },
] as const;

/** Throws a `RangeError` naming the first option a run cannot use. */
function checkOptions(o: SimulationOptions): void {
  const bad = (name: string, rule: string, value: unknown): never => {
    throw new RangeError(`runSimulation: ${name} must be ${rule}, got ${String(value)}`);
  };
  if (!Number.isInteger(o.seed)) bad('seed', 'an integer', o.seed);
  if (!Number.isInteger(o.takers) || o.takers < 1) bad('takers', 'an integer >= 1', o.takers);
  for (const name of ['minutes', 'crashStart', 'crashMinutes'] as const) {
    const value = o[name];
    if (!Number.isFinite(value) || value < 0) bad(name, 'a finite number >= 0', value);
  }
  // A fall of 100 % or more takes the index to zero or below: no price, no order size.
  if (!Number.isFinite(o.crashPercent) || o.crashPercent >= 100) {
    bad('crashPercent', 'a finite number below 100', o.crashPercent);
  }
}

/**
 * Runs the scenario. Throws a `RangeError` naming the option for options it cannot run (a
 * fractional or zero number of takers, a negative or non-finite duration, a fall of 100 %).
 */
export function runSimulation(o: SimulationOptions): SimulationResult {
  checkOptions(o);
  const rand = prng(o.seed);
  // Start 3 minutes before an hour so funding settles during the run.
  const start = T0 + 57 * 60_000;
  const v = new TestVenue({ time: start, checkInvariants: o.checkEveryCommand ?? false });
  const stats = {
    trades: 0,
    liquidations: 0,
    marketSteps: 0,
    auctions: 0,
    claims: 0,
    adlFills: 0,
    fundingPayments: 0,
    deficits: 0,
    backstops: 0,
  };
  // Statistics of the commands after the setup; the events hash covers every command (below).
  const record = (events: readonly EngineEvent[]): void => {
    for (const e of events) {
      if (e.type === 'trade') stats.trades++;
      else if (e.type === 'liquidationStarted') stats.liquidations++;
      else if (e.type === 'insurance' && e.reason === 'Deficit') stats.deficits++;
      else if (e.type === 'backstop' && e.amount > 0n) stats.backstops++;
      else if (e.type === 'executionReport') {
        if (e.kind === 'Liquidation' && e.method === 'Market') stats.marketSteps++;
        else if (e.kind === 'ADL') stats.adlFills++;
        else if (e.kind === 'LiquidationClaim' && e.status === 'Settled') stats.claims++;
        else if (e.kind === 'Funding') stats.fundingPayments++;
      }
    }
  };
  const run = (events: EngineEvent[]): EngineEvent[] => {
    record(events);
    return events;
  };
  const auctionIds = new Set<number>();

  for (const m of MARKETS) {
    v.list({
      id: m.id,
      symbol: m.symbol,
      tickSize: String(m.tick),
      lotSize: String(m.lot),
      quantityDecimals: m.qd,
      maxLeverage: 25,
      defaultLeverage: 20,
      openInterestCap: '100000000',
      funding: { impactNotional: '5000' },
      liquidation: { partialThreshold: '50000' },
    });
  }
  const makers = [wallet(0xa1), wallet(0xa2), wallet(0xa3)];
  const claimant = wallet(0xb1);
  const takers = Array.from({ length: o.takers }, (_, i) => wallet(0xc00 + i));
  for (const w of makers) {
    v.open(w);
    v.fund(w, '20000000');
  }
  v.open(claimant);
  v.fund(claimant, '5000000');
  for (const [i, w] of takers.entries()) {
    v.open(w);
    v.fund(w, String(2000 + Math.floor(rand() * 18000)));
    v.fund(w, String(500 + Math.floor(rand() * 3000)), MARKETS[i % 2]!.symbol);
    const lev = 5 + Math.floor(rand() * 21);
    for (const m of MARKETS) {
      for (const mode of ['Cross', 'Isolated'] as const) {
        run(v.run({ type: 'updateLeverage', account: w, market: m.id, mode, leverage: lev * 100 }));
      }
    }
  }
  const index: number[] = MARKETS.map((m) => m.base);
  const fmt = (mi: number, price: number): string => {
    const m = MARKETS[mi]!;
    const ticks = Math.max(1, Math.round(price / m.tick));
    return (ticks * m.tick).toFixed(m.digits);
  };
  const qtyText = (mi: number, notional: number): string => {
    const m = MARKETS[mi]!;
    const lots = Math.max(1, Math.round(notional / index[mi]! / m.lot));
    return (lots * m.lot).toFixed(m.qd);
  };
  const insurancePath: bigint[] = [];
  const steps = o.minutes * 60;
  // Setting up many takers takes a simulated millisecond per command: the steps start after it.
  const first = Math.max(start, v.time);
  for (let s = 0; s < steps; s++) {
    const t = first + (s + 1) * 1000;
    const minute = s / 60;
    // Index path: noise, then a linear crash, then a drift.
    for (let mi = 0; mi < MARKETS.length; mi++) {
      const base = MARKETS[mi]!.base;
      let level = 1;
      if (minute >= o.crashStart) {
        const f = o.crashMinutes === 0 ? 1 : Math.min(1, (minute - o.crashStart) / o.crashMinutes);
        level = 1 - (o.crashPercent / 100) * f;
      }
      const noise = 1 + (rand() - 0.5) * 0.002;
      index[mi] = base * level * noise;
    }
    run(
      v.run({
        type: 'oracle',
        time: t,
        prices: MARKETS.map((m, mi) => ({ market: m.id, price: px(fmt(mi, index[mi]!)) })),
      }),
    );
    // Makers requote every 5 s: five levels a side around the index. While the index falls
    // they quote a tenth of the size, ten times wider: the book thins out as it does in a crash.
    const crashing = minute >= o.crashStart && minute < o.crashStart + o.crashMinutes;
    if (s % 5 === 0) {
      for (const [k, w] of makers.entries()) {
        const mi = k % MARKETS.length;
        run(v.run({ type: 'cancelAll', account: w, market: MARKETS[mi]!.id }));
        for (let lvl = 1; lvl <= 5; lvl++) {
          const spread = (0.0005 * lvl + k * 0.0002) * (crashing ? 10 : 1);
          const size = qtyText(mi, (20000 + rand() * 60000) / (crashing ? 10 : 1));
          run(
            v.place(w, MARKETS[mi]!.symbol, {
              side: 'Buy',
              qty: size,
              price: fmt(mi, index[mi]! * (1 - spread)),
            }),
          );
          run(
            v.place(w, MARKETS[mi]!.symbol, {
              side: 'Sell',
              qty: size,
              price: fmt(mi, index[mi]! * (1 + spread)),
            }),
          );
        }
      }
    }
    // A few takers trade each second: mostly buying before the crash.
    const n = 1 + Math.floor(rand() * 3);
    for (let k = 0; k < n; k++) {
      const w = takers[Math.floor(rand() * takers.length)]!;
      const mi = Math.floor(rand() * MARKETS.length);
      const buy = rand() < (minute < o.crashStart ? 0.7 : 0.5);
      const notional = 1000 + rand() * 40000;
      run(
        v.place(w, MARKETS[mi]!.symbol, {
          side: buy ? 'Buy' : 'Sell',
          qty: qtyText(mi, notional),
          price: fmt(mi, index[mi]! * (buy ? 1.003 : 0.997)),
          tif: 'IOC',
          isolated: rand() < 0.3,
        }),
      );
    }
    // A backstop claimant takes half of any auction priced within 1% of the mark (in a falling
    // market the auction price trails the mark, so it accepts a small premium).
    for (const a of liveAuctions(v.state)) {
      if (!auctionIds.has(a.auctionId)) {
        auctionIds.add(a.auctionId);
        stats.auctions++;
      }
      const mark = v.state.markets.get(a.market)!.prices.mark!;
      const good = a.side === 'Buy' ? a.price * 100n <= mark * 101n : a.price * 100n >= mark * 99n;
      if (!good || a.remaining === 0n) continue;
      const lot = v.state.markets.get(a.market)!.spec.lotSize;
      const half = (a.remaining / 2n / lot) * lot;
      if (half === 0n) continue;
      run(
        v.run({
          type: 'claimLiquidation',
          account: claimant,
          auctionId: a.auctionId,
          quantity: half,
          maxPrice: a.price,
        }),
      );
    }
    if ((s + 1) % 60 === 0) {
      run(v.run({ type: 'tick', time: v.time + 1 }));
      insurancePath.push(v.state.insuranceFund);
      checkInvariants(v.state);
    }
  }
  // Let every auction end.
  run(v.advance(120_000));
  checkInvariants(v.state);
  const hash = keccak_256.create();
  for (const events of v.history) hash.update(utf8ToBytes(canonicalText(events)));
  return {
    stateHash: stateHash(v.state),
    eventsHash: `0x${bytesToHex(hash.digest())}`,
    commands: v.log.length,
    ...stats,
    debt: solvencyReport(v.state).totalDebt,
    insurancePath,
    venue: v,
  };
}
