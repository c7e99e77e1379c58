/**
 * Execution reports reconstruct the engine's orders exactly. A client (a trading bot, a UI, the
 * WebSocket adapter's subscribers) keeps its picture of its own orders only from the reports, so
 * the report stream must be a complete and consistent log of every order's life.
 *
 * A {@link ReportMirror} is driven only by each command's events; after every command its
 * working orders must be the engine state's, field by field (the state is read for that
 * comparison only). The checks on each report are listed in `report-mirror.ts`.
 *
 * Three generators: the robustness fuzzer over every user and operator command
 * (`command-fuzz.ts`: orders of all types and flags, managed TP/SL, replaces, cancels,
 * liquidations, auctions, busts, ticks across expiry, ...), the book-only model commands
 * (`book-model.ts`), and the risk properties' markets and steps (`risk-fuzz.ts`: many small
 * accounts, price shocks, liquidations, auctions, claims and ADL, which the fuzzer seldom
 * reaches). `FC_NUM_RUNS` raises the run count, `FC_MAX_STEPS` the fuzzer's sequence length.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import type { EngineEvent } from '../src/index.js';
import {
  type CommandInput,
  replacer,
  TestVenue,
  type TestVenueOptions,
  wallet,
} from '../src/testing/index.js';
import { bookVenue, commands, newModel } from './book-model.js';
import { settingsArb, setup, stepArb, venueSettingsArb } from './command-fuzz.js';
import { ReportMirror } from './report-mirror.js';
import * as risk from './risk-fuzz.js';

/** About 15 s for the fuzzer's property at the default on two cores. */
const runs = Number(process.env.FC_NUM_RUNS ?? 300);
/** FC_NO_SHRINK reports the first failure as found (a quick look at a long sequence). */
const endOnFailure = process.env.FC_NO_SHRINK !== undefined;
/** FC_SEED and FC_PATH replay a failure fast-check printed. */
const replay = {
  ...(process.env.FC_SEED === undefined ? {} : { seed: Number(process.env.FC_SEED) }),
  ...(process.env.FC_PATH === undefined ? {} : { path: process.env.FC_PATH }),
};
const maxSteps = Number(process.env.FC_MAX_STEPS ?? 150);
const timeout = Math.max(60_000, (runs * maxSteps * 4) / 3);
/** With LOG_STATS set, the report kinds seen are printed after the runs. */
const stats = process.env.LOG_STATS ? new Map<string, number>() : undefined;

/** A test venue whose every command feeds the mirror, which is then compared with the state. */
class MirroredVenue extends TestVenue {
  readonly mirror = new ReportMirror();

  override run(input: CommandInput): EngineEvent[] {
    const events = super.run(input);
    try {
      this.mirror.apply(events);
      this.mirror.compare(this.state);
    } catch (e) {
      throw new Error(
        `${(e as Error).message}\ncommand #${this.log.length}: ${JSON.stringify(this.log.at(-1), replacer)}`,
      );
    }
    return events;
  }

  tally(): void {
    if (stats) for (const [k, n] of this.mirror.kinds) stats.set(k, (stats.get(k) ?? 0) + n);
  }
}

const mirrored = (options: TestVenueOptions): MirroredVenue => new MirroredVenue(options);

describe('execution reports reconstruct the engine orders', () => {
  it(
    'over every user and operator command',
    () => {
      const restated = { PositionChanged: 0, ParentFilled: 0 };
      fc.assert(
        fc.property(
          venueSettingsArb,
          settingsArb(3),
          fc.constantFrom(1_000, 50_000, 1_000_000),
          fc.array(stepArb, { minLength: 20, maxLength: maxSteps, size: 'max' }),
          (settings, dust, funds, steps) => {
            const d = setup(settings, dust, funds, mirrored);
            for (const s of steps) d.step(s);
            const v = d.v as MirroredVenue;
            v.tally();
            restated.PositionChanged += v.mirror.kinds.get('OrderReplaced:PositionChanged') ?? 0;
            restated.ParentFilled += v.mirror.kinds.get('OrderReplaced:ParentFilled') ?? 0;
          },
        ),
        { numRuns: runs, endOnFailure, ...replay },
      );
      // Not vacuous: the mirror checked the engine's re-sizing of managed TP/SL.
      if (runs >= 100 && process.env.FC_SEED === undefined) {
        expect(restated.PositionChanged).toBeGreaterThan(0);
        expect(restated.ParentFilled).toBeGreaterThan(0);
      }
    },
    timeout,
  );

  it('over the book-only model commands', () => {
    fc.assert(
      fc.property(fc.commands(commands, { maxCommands: 150, size: 'max' }), (cmds) => {
        const venue = bookVenue(mirrored);
        fc.modelRun(() => ({ model: newModel(), real: { venue } }), cmds);
        (venue as MirroredVenue).tally();
      }),
      { numRuns: runs, endOnFailure, ...replay },
    );
  });

  it('over the risk model: liquidations, auctions, claims, ADL, busts and funding', () => {
    const reached = { Liquidation: 0, TradeBust: 0 };
    const riskRuns = Math.max(1, Math.floor(runs / 3));
    fc.assert(
      fc.property(
        fc.array(risk.marketArb, { minLength: 2, maxLength: 2 }),
        fc.array(fc.integer({ min: 200, max: 20_000 }), {
          minLength: risk.N_TRADERS,
          maxLength: risk.N_TRADERS,
        }),
        fc.array(risk.stepArb, { minLength: 30, maxLength: 120, size: 'max' }),
        (params, funds, steps) => {
          const v = risk.setup(params, funds, mirrored) as MirroredVenue;
          for (const s of steps) risk.runStep(v, s);
          // Every auction ends and a funding hour passes.
          v.advance(2 * risk.HOUR);
          v.advance(31_000);
          v.tally();
          reached.Liquidation += v.mirror.kinds.get('Liquidation') ?? 0;
          reached.TradeBust += v.mirror.kinds.get('TradeBust') ?? 0;
        },
      ),
      { numRuns: riskRuns, endOnFailure, ...replay },
    );
    // Not vacuous: the mirror followed liquidations and busts.
    if (riskRuns >= 50 && process.env.FC_SEED === undefined) {
      expect(reached.Liquidation).toBeGreaterThan(0);
      expect(reached.TradeBust).toBeGreaterThan(0);
    }
  });

  it('through a liquidation that ends in ADL (the fuzzers seldom reach ADL)', () => {
    // liquidation-edges.test.ts, "ADL against an isolated position": golden case C's market.
    const v = new MirroredVenue();
    const [GOLD, MM, S1, S2, S3, L1] = [0x60, 0x62, 0x70, 0x71, 0x72, 0x73].map(wallet) as [
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    const ISO = 'ISO-PERP';
    v.list({
      id: 3,
      symbol: ISO,
      tickSize: '0.5',
      lotSize: '1',
      quantityDecimals: 0,
      maxLeverage: 20,
      openInterestCap: '1000000',
      makerFeeRate: '0',
      takerFeeRate: '0',
      liquidation: { feeRate: '0', partialThreshold: '100000' },
    });
    for (const w of [GOLD, S1, S2, S3, L1, MM]) v.open(w);
    v.fund(S1, '450');
    v.fund(S2, '3080');
    v.fund(S3, '10000');
    v.fund(L1, '100000');
    v.fund(MM, '1000000');
    v.fund(GOLD, '1000', ISO);
    v.fund(GOLD, '500');
    v.run({ type: 'updateLeverage', account: S1, market: 3, mode: 'Cross', leverage: 2000 });
    v.oracle({ [ISO]: '100' });
    const trades: [string, 'Buy' | 'Sell', string, string, boolean?][] = [
      [GOLD, 'Buy', '100', '100', true],
      [S1, 'Sell', '50', '100'],
      [L1, 'Sell', '50', '100'],
      [S2, 'Sell', '80', '95'],
      [L1, 'Buy', '80', '95'],
      [S3, 'Sell', '30', '85'],
      [L1, 'Buy', '30', '85'],
      [L1, 'Buy', '50', '100'],
      [GOLD, 'Sell', '50', '100'],
    ];
    for (const [w, side, qty, price, isolated] of trades)
      v.expectOk(v.place(w, ISO, { side, qty, price, isolated: isolated ?? false }));
    // Working orders of the scopes about to be liquidated, and a quote around the new mark.
    v.expectOk(
      v.place(GOLD, ISO, {
        side: 'Sell',
        qty: '10',
        price: '120',
        isolated: true,
        reduceOnly: true,
      }),
    );
    v.expectOk(
      v.place(GOLD, ISO, {
        side: 'Sell',
        qty: '10',
        trigger: '80',
        type: 'StopLoss',
        isolated: true,
        managed: true,
      }),
    );
    v.expectOk(v.place(S1, ISO, { side: 'Buy', qty: '1', price: '50' }));
    v.expectOk(v.place(MM, ISO, { side: 'Buy', qty: '1', price: '89' }));
    v.expectOk(v.place(MM, ISO, { side: 'Sell', qty: '1', price: '89.5' }));
    const events = v.oracle({ [ISO]: '89' });
    const kinds = events.flatMap((e) => (e.type === 'executionReport' ? [e.kind] : []));
    expect(kinds).toContain('ADL');
    expect(kinds).toContain('Liquidation');
    expect(v.mirror.kinds.get('OrderCancelled:Liquidation')).toBeGreaterThan(0);
    v.advance(60_000);
  });

  afterAll(() => {
    if (stats)
      console.log(
        [...stats]
          .sort()
          .map(([k, n]) => `${n}\t${k}`)
          .join('\n'),
      );
  });
});
