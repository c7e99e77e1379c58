/**
 * Tickers (research 3.1 and 6.6): one full object per instrument with its status, the last
 * price, best bid and ask, mark and index, 24 h rolling statistics (see `rolling-window.ts` for the exact window),
 * funding and open interest. Prices and sizes are canonical decimal strings; a value the venue
 * does not have yet is `null`.
 *
 * @module
 */
import {
  divHalfEven,
  type EngineState,
  formatCollateral,
  formatDecimal,
  formatPrice,
  type Market,
  quoteAmount,
} from '@perp/core';
import type { CommittedBatch } from '../engine/host.js';
import { Captures, type RowsCapture } from '../read/checkpoint.js';
import type { BustedPrint } from './candles.js';
import { DAY_MS, RollingWindow, type WindowRows } from './rolling-window.js';

/** Funding of a market as the ticker shows it; built by the funding engine, `null` until then. */
export interface FundingView {
  /** Rate per funding interval, canonical decimal string. */
  readonly rate: string;
  /** When the next funding settles, ms. */
  readonly nextFundingTime: number;
}

/** Looks up a market's funding; the default knows none. */
export type FundingViewSource = (state: EngineState, market: number) => FundingView | null;

/** A ticker on the wire (the `ticker` message without `type` and `time`). */
export interface WireTicker {
  instrument: string;
  /**
   * The market's status as `GET /api/instruments` shows it: `Active`, or `Paused` by the operator
   * (new orders and amends refused, cancels accepted; docs/protocol-decisions.md, "Market data").
   */
  status: Market['status'];
  last: string | null;
  mark: string | null;
  index: string | null;
  bestBid: string | null;
  bestAsk: string | null;
  open24h: string | null;
  high24h: string | null;
  low24h: string | null;
  /** Base units. */
  volume24h: string;
  /** Collateral. */
  quoteVolume24h: string;
  priceChange24h: string | null;
  /**
   * Percent rounded half-even to two decimals (`"1.72"` = +1.72 %), written canonically like
   * every decimal: `"0.5"`, not `"0.50"`.
   */
  priceChangePct24h: string | null;
  fundingRate: string | null;
  nextFundingTime: number | null;
  /** Base units (sum of long sizes). */
  openInterest: string;
}

const noFunding: FundingViewSource = () => null;

/** `100 x (last - open) / open` in hundredths of a percent, half-even. */
export function changePercent(last: bigint, open: bigint): string {
  return formatDecimal(divHalfEven((last - open) * 10_000n, open), 2);
}

function best(levels: readonly { price: bigint }[]): string | null {
  const level = levels[levels.length - 1];
  return level === undefined ? null : formatPrice(level.price);
}

/** Rolling statistics of every market, fed by committed batches. */
export class TickerProjection {
  private readonly windows = new Map<number, RollingWindow>();
  private readonly funding: FundingViewSource;
  private readonly windowMs: number;
  private readonly captures = new Captures<number, RollingWindow>((w) => w.clone());

  constructor(funding: FundingViewSource = noFunding, windowMs: number = DAY_MS) {
    this.funding = funding;
    this.windowMs = windowMs;
  }

  /** An empty projection with the same funding source and window. */
  emptyCopy(): TickerProjection {
    return new TickerProjection(this.funding, this.windowMs);
  }

  /**
   * Starts a capture of every market's window as it is now (O(markets)): from here on a window
   * is copied before it first changes. Rows yielded from a live window hold until it changes.
   */
  capture(): RowsCapture<number, WindowRows> {
    const windows = this.captures.start(this.windows.keys(), (id) => this.windows.get(id));
    return {
      *rows() {
        for (const [id, w] of windows.rows()) yield [id, w.rows()];
      },
      release: () => windows.release(),
    };
  }

  /** Sets a market's window in a projection being restored (before any batch reaches it). */
  restore(market: number, rows: WindowRows): void {
    this.windows.set(market, RollingWindow.fromRows(this.windowMs, rows));
  }

  /** Lets running captures keep a market's window before it changes. */
  private touch(market: number): void {
    if (this.captures.active) this.captures.beforeChange(market, this.windows.get(market));
  }

  private window(market: number): RollingWindow {
    let w = this.windows.get(market);
    if (w === undefined) {
      w = new RollingWindow(this.windowMs);
      this.windows.set(market, w);
    }
    return w;
  }

  /** Applies a batch; returns the markets whose ticker may have changed. */
  apply(batch: CommittedBatch): Set<number> {
    const touched = new Set<number>();
    for (const events of batch.events) {
      for (const e of events) {
        switch (e.type) {
          case 'trade': {
            const spec = batch.state.markets.get(e.market)?.spec;
            if (spec === undefined) break;
            const quote = quoteAmount(spec, e.quantity, e.price);
            this.touch(e.market);
            this.window(e.market).add(e.price, e.quantity, quote, e.time);
            touched.add(e.market);
            break;
          }
          case 'bookChanged':
          case 'markChanged':
          case 'marketChanged':
            touched.add(e.market);
            break;
          default:
            break;
        }
      }
    }
    return touched;
  }

  /**
   * Takes busted trades out of the 24 h statistics: each one's minute is replaced by the trades
   * left in it. Returns the markets whose ticker changed.
   */
  restate(busts: readonly BustedPrint[]): Set<number> {
    const touched = new Set<number>();
    for (const b of busts) {
      this.touch(b.market);
      if (this.window(b.market).restate(b.minute, b.left)) touched.add(b.market);
    }
    return touched;
  }

  /** Seeds the last trade price of markets whose trades this projection never saw. */
  seedFrom(state: EngineState): void {
    state.markets.forEach((m, id) => {
      if (m.lastTrade === null) return;
      this.touch(id);
      this.window(id).seed(m.lastTrade);
    });
  }

  /** The ticker of one market at `time`, or `undefined` for an unknown market. */
  ticker(state: EngineState, market: number, time: number): WireTicker | undefined {
    const m = state.markets.get(market);
    return m === undefined ? undefined : this.tickerOf(state, m, time);
  }

  /** Every market's ticker at `time`, by market id. */
  tickers(state: EngineState, time: number): WireTicker[] {
    const out: { id: number; t: WireTicker }[] = [];
    state.markets.forEach((m, id) => {
      out.push({ id, t: this.tickerOf(state, m, time) });
    });
    return out.sort((a, b) => a.id - b.id).map((x) => x.t);
  }

  private tickerOf(state: EngineState, m: Market, time: number): WireTicker {
    const spec = m.spec;
    const window = this.window(spec.id);
    // Reading the statistics drops the buckets that left the window.
    if (this.captures.active && window.expiresBy(time)) this.touch(spec.id);
    const stats = window.stats(time);
    // Not the engine's `lastTrade`: since engine rules 9 a bust restates it, but only from the
    // prints still in the engine's bust window, and before any index a bust leaves it; here a
    // market whose trades were all busted has not traded (seedFrom puts the trades this
    // projection never saw in the window).
    const last = stats.last;
    const open = stats.open ?? last;
    const high = stats.high ?? open;
    const low = stats.low ?? open;
    const funding = this.funding(state, spec.id);
    const qd = spec.quantityDecimals;
    return {
      instrument: spec.symbol,
      status: m.status,
      last: last === null ? null : formatPrice(last),
      mark: m.prices.mark === null ? null : formatPrice(m.prices.mark),
      index: m.prices.index === null ? null : formatPrice(m.prices.index),
      bestBid: best(m.bids),
      bestAsk: best(m.asks),
      open24h: open === null ? null : formatPrice(open),
      high24h: high === null ? null : formatPrice(high),
      low24h: low === null ? null : formatPrice(low),
      volume24h: formatDecimal(stats.volume, qd),
      quoteVolume24h: formatCollateral(stats.quoteVolume),
      priceChange24h: last === null || open === null ? null : formatPrice(last - open),
      priceChangePct24h:
        last === null || open === null || open === 0n ? null : changePercent(last, open),
      fundingRate: funding?.rate ?? null,
      nextFundingTime: funding?.nextFundingTime ?? null,
      openInterest: formatDecimal(m.openInterest, qd),
    };
  }
}
