/**
 * The seeded crash simulation (src/testing/simulation.ts), short version: two runs give the same
 * event stream and state hash, every invariant holds, and the crash exercises liquidations.
 * `node packages/core/bench/simulate.mjs` runs the long version and prints its summary.
 */
import { describe, expect, it } from 'vitest';
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
