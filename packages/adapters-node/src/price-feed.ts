/**
 * The simulated index-price feed of the embedded venue: a seeded random walk per instrument, so
 * the same seed replays the same prices. Each step becomes an `oracle` command like a real feed
 * would produce.
 *
 * @module
 */
import { parseDecimal } from '@perp/core';

/** mulberry32: a small, seedable PRNG (the one the shared bench workloads use). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A deterministic random walk of index prices. */
export class RandomWalkFeed {
  private readonly rnd: () => number;
  private readonly prices: Map<number, number>;
  private readonly volatility: number;

  constructor(seed: number, start: ReadonlyMap<number, number>, volatility: number) {
    this.rnd = mulberry32(seed);
    this.prices = new Map(start);
    this.volatility = volatility;
  }

  /** The next index price of every instrument, as raw 1e18 integers. */
  next(): { market: number; price: bigint }[] {
    const out: { market: number; price: bigint }[] = [];
    for (const [market, p] of this.prices) {
      // Box-Muller from two uniforms; prices stay positive (log-normal steps).
      const u = Math.max(this.rnd(), 1e-12);
      const v = this.rnd();
      const z = Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
      const next = p * Math.exp(this.volatility * z);
      this.prices.set(market, next);
      const parsed = parseDecimal(next.toFixed(8), 18);
      if (parsed.ok && parsed.value > 0n) out.push({ market, price: parsed.value });
    }
    return out;
  }
}
