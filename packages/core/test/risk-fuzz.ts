/**
 * The random markets and steps of the risk properties (`risk.prop.test.ts`), shared with the
 * execution-report property (`execution-reports.prop.test.ts`), which needs sequences that reach
 * liquidations, auctions and ADL: ten traders with small, mixed cross and isolated funds trading
 * mostly aggressively against two makers' quotes, price shocks of up to 30 %, ticks across
 * funding and auction ends, auction claims, forced liquidations, busts, and the operator moving
 * money between the insurance fund and the fee pool.
 *
 * @module
 */
import fc from 'fast-check';
import { type EngineEvent, liveAuctions } from '../src/index.js';
import {
  BTC_SETTINGS,
  ETH_SETTINGS,
  px,
  TestVenue,
  type TestVenueOptions,
  wallet,
} from '../src/testing/index.js';

export const HOUR = 3_600_000;
export const N_TRADERS = 10;
export const TRADERS = Array.from({ length: N_TRADERS }, (_, i) => wallet(0x200 + i));
export const MAKERS = [wallet(0x300), wallet(0x301)];
export const SYMS = ['BTC-PERP', 'ETH-PERP'] as const;
export const BASE = [50000, 3000];
export const TICK = [0.5, 0.01];
export const DIGITS = [1, 2];

export interface MarketParams {
  maxLev: number;
  threshold: string;
  auctionMs: number;
  liqFee: string;
  fees: readonly [string, string];
}

export const marketArb: fc.Arbitrary<MarketParams> = fc.record({
  maxLev: fc.constantFrom(10, 20, 50),
  threshold: fc.constantFrom('100', '2000', '100000'),
  auctionMs: fc.constantFrom(1000, 30000),
  liqFee: fc.constantFrom('0', '0.005'),
  // [taker, maker]: a maker rebate never exceeds the taker fee.
  fees: fc.constantFrom(
    ['0', '0'] as const,
    ['0.00045', '0.00015'] as const,
    ['0.00045', '-0.0001'] as const,
  ),
});

export type Step =
  | {
      k: 'order';
      w: number;
      m: number;
      buy: boolean;
      off: number;
      lots: number;
      iso: boolean;
      ioc: boolean;
    }
  | { k: 'quote'; m: number; spread: number; lots: number }
  | { k: 'shock'; m: number; pct: number }
  | { k: 'tick'; ms: number }
  | { k: 'claim'; w: number; frac: number }
  | { k: 'liquidate'; w: number; iso: boolean; m: number }
  | { k: 'bust'; pick: number }
  | { k: 'fund'; toFund: boolean; permille: number }
  | { k: 'payout'; w: number; permille: number };

export const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 10,
    arbitrary: fc.record({
      k: fc.constant('order' as const),
      w: fc.nat(N_TRADERS - 1),
      m: fc.nat(1),
      buy: fc.boolean(),
      off: fc.integer({ min: -5, max: 20 }),
      lots: fc.integer({ min: 1, max: 2000 }),
      iso: fc.boolean(),
      ioc: fc.boolean(),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      k: fc.constant('quote' as const),
      m: fc.nat(1),
      spread: fc.integer({ min: 1, max: 20 }),
      lots: fc.integer({ min: 1, max: 5000 }),
    }),
  },
  {
    weight: 4,
    arbitrary: fc.record({
      k: fc.constant('shock' as const),
      m: fc.nat(1),
      pct: fc.integer({ min: -30, max: 30 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('tick' as const),
      ms: fc.constantFrom(500, 15_000, 31_000, HOUR, 3 * HOUR),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('claim' as const),
      w: fc.nat(N_TRADERS - 1),
      frac: fc.integer({ min: 1, max: 100 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('liquidate' as const),
      w: fc.nat(N_TRADERS - 1),
      iso: fc.boolean(),
      m: fc.nat(1),
    }),
  },
  { weight: 1, arbitrary: fc.record({ k: fc.constant('bust' as const), pick: fc.nat() }) },
  {
    weight: 1,
    // The operator moves part of one venue pool into the other (above 1,000: more than it holds).
    arbitrary: fc.record({
      k: fc.constant('fund' as const),
      toFund: fc.boolean(),
      permille: fc.integer({ min: 1, max: 1100 }),
    }),
  },
  {
    weight: 1,
    // The operator pays part of the fee pool out into a trader's cross pool.
    arbitrary: fc.record({
      k: fc.constant('payout' as const),
      w: fc.nat(N_TRADERS - 1),
      permille: fc.integer({ min: 1, max: 1100 }),
    }),
  },
);

/**
 * Lists the two markets with `params`, opens and funds the traders (cross and one isolated pool
 * each) and the makers, and sets the first oracle prices. `venue` builds the venue (a subclass
 * that watches every command, for instance).
 */
export function setup(
  params: readonly MarketParams[],
  funds: readonly number[],
  venue: (options: TestVenueOptions) => TestVenue = (options) => new TestVenue(options),
): TestVenue {
  const v = venue({ settings: { tradeRetentionMs: 100 * HOUR } });
  [BTC_SETTINGS, ETH_SETTINGS].forEach((base, i) => {
    const p = params[i]!;
    v.list({
      ...base,
      lotSize: '0.001',
      quantityDecimals: 3,
      maxLeverage: p.maxLev,
      defaultLeverage: p.maxLev,
      openInterestCap: '1000000',
      makerFeeRate: p.fees[1],
      takerFeeRate: p.fees[0],
      funding: { impactNotional: '500' },
      liquidation: {
        partialThreshold: p.threshold,
        auctionDurationMs: p.auctionMs,
        feeRate: p.liqFee,
      },
    });
  });
  for (const [i, w] of TRADERS.entries()) {
    v.open(w);
    v.fund(w, String(funds[i]!));
    v.fund(w, String(Math.floor(funds[i]! / 4)), SYMS[i % 2]!);
  }
  for (const w of MAKERS) {
    v.open(w);
    v.fund(w, '5000000');
  }
  v.oracle({ 'BTC-PERP': '50000', 'ETH-PERP': '3000' });
  return v;
}

/** A price on market `m`'s tick grid near `value` (at least one tick). */
export function priceText(m: number, value: number): string {
  const ticks = Math.max(1, Math.round(value / TICK[m]!));
  return (ticks * TICK[m]!).toFixed(DIGITS[m]!);
}

/** Market `m`'s index price as a number. */
export function indexOf(v: TestVenue, m: number): number {
  return Number(v.state.markets.get(m + 1)!.prices.index!) / 1e18;
}

/** Runs one step; the events of every command it ran, in order. */
export function runStep(v: TestVenue, s: Step): EngineEvent[] {
  switch (s.k) {
    case 'order': {
      const idx = indexOf(v, s.m);
      return v.place(TRADERS[s.w]!, SYMS[s.m]!, {
        side: s.buy ? 'Buy' : 'Sell',
        qty: (s.lots / 1000).toFixed(3),
        // Mostly aggressive: a buy above the index, a sell below it.
        price: priceText(s.m, idx * (1 + ((s.buy ? 1 : -1) * s.off) / 1000)),
        isolated: s.iso,
        tif: s.ioc ? 'IOC' : 'GTC',
      });
    }
    case 'quote': {
      const idx = indexOf(v, s.m);
      const maker = MAKERS[s.m]!;
      // All three commands' events, in order, so the checks follow the insurance fund through.
      return [
        ...v.run({ type: 'cancelAll', account: maker, market: s.m + 1 }),
        ...v.place(maker, SYMS[s.m]!, {
          side: 'Buy',
          qty: (s.lots / 1000).toFixed(3),
          price: priceText(s.m, idx * (1 - s.spread / 2000)),
        }),
        ...v.place(maker, SYMS[s.m]!, {
          side: 'Sell',
          qty: (s.lots / 1000).toFixed(3),
          price: priceText(s.m, idx * (1 + s.spread / 2000)),
        }),
      ];
    }
    case 'shock': {
      const idx = indexOf(v, s.m);
      return v.oracle({ [SYMS[s.m]!]: priceText(s.m, idx * (1 + s.pct / 100)) });
    }
    case 'tick':
      return v.advance(s.ms);
    case 'claim': {
      const live = liveAuctions(v.state);
      const a = live[s.frac % Math.max(live.length, 1)];
      if (a === undefined) return v.advance(1);
      const qty = (a.remaining * BigInt(s.frac)) / 100n;
      const lot = 1n;
      return v.run({
        type: 'claimLiquidation',
        account: TRADERS[s.w]!,
        auctionId: a.auctionId,
        quantity: qty - (qty % lot),
        maxPrice: a.side === 'Buy' ? px('1000000') : 1n,
      });
    }
    case 'liquidate':
      return v.run({
        type: 'liquidate',
        account: TRADERS[s.w]!,
        mode: s.iso ? 'Isolated' : 'Cross',
        market: s.iso ? s.m + 1 : 0,
        force: true,
      });
    case 'bust': {
      const ids: number[] = [];
      v.state.trades.forEach((t, id) => {
        if (!t.busted && t.source === 'Order') ids.push(id);
      });
      if (ids.length === 0) return v.advance(1);
      return v.run({ type: 'bustTrade', tradeId: ids[s.pick % ids.length]!, reason: 'test' });
    }
    case 'fund': {
      const source = s.toFund ? v.state.feePool : v.state.insuranceFund;
      const amount = (source * BigInt(s.permille)) / 1000n;
      return v.run({
        type: 'insuranceTransfer',
        direction: s.toFund ? 'ToInsuranceFund' : 'ToFeePool',
        amount: amount > 0n ? amount : 1n,
      });
    }
    case 'payout': {
      const amount = (v.state.feePool * BigInt(s.permille)) / 1000n;
      return v.run({
        type: 'feePayout',
        account: TRADERS[s.w]!,
        amount: amount > 0n ? amount : 1n,
      });
    }
  }
}
