/**
 * Robustness of the reducer: no command sequence that users or the operator can produce makes
 * `reduce` throw. The host treats any exception from the reducer as a broken invariant and stops
 * the whole venue (fail-stop), so a throw reachable from the outside is a denial of service.
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
 * The same sequences also hold the journal's contract (`BatchResult.changed`, docs/core-library.md
 * section 6): replaying only the commands that changed the state reproduces it.
 *
 * The generator and its interpreter live in `command-fuzz.ts`. After every command the test venue
 * checks every invariant of `src/testing/invariants.ts` and the reduce-only invariant.
 * `FC_NUM_RUNS` raises the run count.
 */
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { type Command, createEngineState, reduceAll, stateHash } from '../src/index.js';
import { T0 } from '../src/testing/index.js';
import {
  describeFailure,
  settingsArb,
  setup,
  stats,
  stepArb,
  venueSettingsArb,
} from './command-fuzz.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 60);
/** Longest command sequence of a run (FC_MAX_STEPS). */
const maxSteps = Number(process.env.FC_MAX_STEPS ?? 150);
/** Long runs (FC_NUM_RUNS in the thousands) take minutes. */
const timeout = Math.max(60_000, (runs * maxSteps * 4) / 3);

describe('robustness: the reducer never throws on user or operator input', () => {
  it(
    'random sequences over every command keep every invariant and never throw',
    () => {
      fc.assert(
        fc.property(
          venueSettingsArb,
          settingsArb(3),
          fc.constantFrom(1_000, 50_000, 1_000_000),
          fc.array(stepArb, { minLength: 20, maxLength: maxSteps, size: 'max' }),
          (settings, dust, funds, steps) => {
            const d = setup(settings, dust, funds);
            for (const s of steps) {
              try {
                d.step(s);
              } catch (e) {
                throw new Error(`${(e as Error).stack}\nlast commands: ${describeFailure(d)}`);
              }
            }
          },
        ),
        { numRuns: runs },
      );
    },
    timeout,
  );

  afterAll(() => {
    if (stats)
      console.log(
        [...stats]
          .sort()
          .map(([k, n]) => `${n}\t${k}`)
          .join('\n'),
      );
  });

  it(
    'a batch of the same commands gives the same state as one by one (no throw either way)',
    () => {
      fc.assert(
        fc.property(
          venueSettingsArb,
          settingsArb(3),
          fc.array(stepArb, { minLength: 20, maxLength: 80, size: 'max' }),
          (settings, dust, steps) => {
            const d = setup(settings, dust, 50_000);
            for (const s of steps) d.step(s);
            const log: readonly Command[] = d.v.log;
            let state = createEngineState(settings, T0);
            for (let i = 0; i < log.length; i += 13)
              state = reduceAll(state, log.slice(i, i + 13)).state;
            expect(stateHash(state)).toBe(stateHash(d.v.state));
          },
        ),
        { numRuns: Math.max(5, Math.floor(runs / 4)) },
      );
    },
    timeout,
  );

  it(
    'replaying only the commands reduceAll reports as changed gives the same state (a journal keeps those)',
    () => {
      fc.assert(
        fc.property(
          venueSettingsArb,
          settingsArb(3),
          fc.array(stepArb, { minLength: 20, maxLength: 80, size: 'max' }),
          (settings, dust, steps) => {
            const d = setup(settings, dust, 50_000);
            for (const s of steps) d.step(s);
            const full = reduceAll(createEngineState(settings, T0), d.v.log);
            const kept = d.v.log.filter((_, i) => full.changed[i]);
            const replayed = reduceAll(createEngineState(settings, T0), kept);
            expect(stateHash(replayed.state)).toBe(stateHash(full.state));
          },
        ),
        { numRuns: Math.max(5, Math.floor(runs / 4)) },
      );
    },
    timeout,
  );
});
