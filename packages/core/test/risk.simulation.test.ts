/**
 * The seeded crash simulation (src/testing/simulation.ts), short version: two runs give the same
 * event stream and state hash, every invariant holds, and the crash exercises liquidations.
 * `node packages/core/bench/simulate.mjs` runs the long version and prints its summary.
 */
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import { canonicalText } from '../src/index.js';
import { runSimulation } from '../src/testing/index.js';

describe('crash simulation', () => {
  it('is deterministic and liquidates through the book, auctions and ADL', () => {
    const options = {
      seed: 7,
      takers: 24,
      minutes: 6,
      crashStart: 2,
      crashMinutes: 3,
      crashPercent: 30,
    };
    const a = runSimulation(options);
    const b = runSimulation(options);
    expect(b.stateHash).toBe(a.stateHash);
    expect(b.eventsHash).toBe(a.eventsHash);
    expect(b.insurancePath).toEqual(a.insurancePath);
    expect(a.liquidations).toBeGreaterThan(0);
    expect(a.marketSteps).toBeGreaterThan(0);
    expect(a.auctions).toBeGreaterThan(0);
    expect(a.claims).toBeGreaterThan(0);
    expect(a.adlFills).toBeGreaterThan(0);
    expect(a.fundingPayments).toBeGreaterThan(0);
    // The insurance fund (fed by liquidation fees) covers every deficit: nothing is left owed.
    expect(a.debt).toBe(0n);
    // A different seed gives a different run.
    expect(runSimulation({ ...options, seed: 8 }).eventsHash).not.toBe(a.eventsHash);
  });
});

describe('crash simulation options and result', () => {
  const options = {
    seed: 3,
    takers: 4,
    minutes: 2,
    crashStart: 1,
    crashMinutes: 1,
    crashPercent: 20,
  };

  it('eventsHash covers the events of every command, the setup included', () => {
    const r = runSimulation(options);
    // The listing, accounts and deposits run before the first step: their events count too.
    expect(r.venue.history.length).toBe(r.commands);
    const h = keccak_256.create();
    for (const events of r.venue.history) h.update(utf8ToBytes(canonicalText(events)));
    expect(r.eventsHash).toBe(`0x${bytesToHex(h.digest())}`);
  });

  it('an instantaneous crash (crashMinutes 0) steps the index down at crashStart', () => {
    const r = runSimulation({ ...options, crashMinutes: 0, crashPercent: 30 });
    // BTC's index, whole units, at each one-second step (0.1 % noise around 60,000).
    const btc = r.venue.log.flatMap((c) =>
      c.type === 'oracle' ? [Number((c.prices[0]?.price ?? 0n) / 10n ** 18n)] : [],
    );
    expect(btc).toHaveLength(120);
    // Step 60 is minute 1, crashStart: 30 % down at once, and it stays there.
    expect(btc.slice(0, 60).every((p) => p > 59_000 && p < 61_000)).toBe(true);
    expect(btc.slice(60).every((p) => p > 41_500 && p < 42_500)).toBe(true);
  });

  it.each([
    ['seed', Number.NaN],
    ['takers', 0],
    ['takers', 2.5],
    ['minutes', -1],
    ['crashStart', Number.POSITIVE_INFINITY],
    ['crashMinutes', -1],
    ['crashPercent', 100],
    ['crashPercent', Number.NaN],
  ])('refuses %s = %s with a RangeError naming the option', (name, value) => {
    expect(() => runSimulation({ ...options, [name]: value })).toThrow(
      new RegExp(`^runSimulation: ${name} `),
    );
    expect(() => runSimulation({ ...options, [name]: value })).toThrow(RangeError);
  });
});
