/**
 * How often market data goes out, and what happens to a consumer that cannot keep up
 * (research 6.6; reliability-anchors 3.1). Pushes are full snapshots, so coalescing keeps only
 * the latest and a dropped update costs a client nothing but latency: the service sends the
 * current snapshot of each channel a socket missed as soon as it drains below the soft cap.
 *
 * @module
 */

/** Pacing of the pushes, ms. */
export interface MarketDataPacing {
  /** A ticker (and the `tickers` list) goes out at most this often, and only when it changed. */
  readonly tickerMinIntervalMs: number;
  /** ...and at least this often, changed or not (keep-alive). */
  readonly tickerKeepAliveMs: number;
  /** Book snapshots per (instrument, depth) go out at most this often (coalesced). */
  readonly orderbookMinIntervalMs: number;
  /** ...and at least this often, changed or not. */
  readonly orderbookKeepAliveMs: number;
  /** Updates of an open candle go out at most this often; the close is never delayed. */
  readonly candleMinIntervalMs: number;
  /** Period of the housekeeping pass: candle closes, ticker checks, keep-alives. */
  readonly housekeepingMs: number;
}

/** Research 6.6: ticker <= 1/s with a 10 s keep-alive, book <= 10/s and >= every 5 s, candles 250 ms. */
export const DEFAULT_PACING: MarketDataPacing = {
  tickerMinIntervalMs: 1_000,
  tickerKeepAliveMs: 10_000,
  orderbookMinIntervalMs: 100,
  orderbookKeepAliveMs: 5_000,
  candleMinIntervalMs: 250,
  housekeepingMs: 250,
};

/** Thresholds on a socket's unsent bytes (`ws` `bufferedAmount`). */
export interface BufferCaps {
  /** Above this, snapshot updates to the socket are skipped (a later snapshot replaces them). */
  readonly softBufferBytes: number;
  /** Above this, the socket is terminated. */
  readonly hardBufferBytes: number;
}

/** What to do with one message for one socket. */
export type DeliveryAction = 'send' | 'drop' | 'terminate';

/**
 * The slow-consumer policy. A droppable message (a snapshot that a later one supersedes) is
 * skipped above the soft cap; any message to a socket above the hard cap ends the socket.
 * Replies, candle closes and auction events are not droppable: they are sent until the hard cap.
 */
export function deliveryAction(
  bufferedAmount: number,
  droppable: boolean,
  caps: BufferCaps,
): DeliveryAction {
  if (bufferedAmount > caps.hardBufferBytes) return 'terminate';
  if (droppable && bufferedAmount > caps.softBufferBytes) return 'drop';
  return 'send';
}

/**
 * Coalesces requests to flush one channel: the first request after a quiet period flushes at
 * once (leading edge), later ones within `minIntervalMs` of the last flush that sent something
 * are merged into one trailing flush. `flush` returns whether it sent; a flush that found
 * nothing new does not start the interval. The timer is unref'd; `cancel` clears it.
 */
export class Pacer {
  private readonly minIntervalMs: number;
  private readonly clock: () => number;
  private readonly flush: () => boolean;
  private lastSent = Number.NEGATIVE_INFINITY;
  private timer: NodeJS.Timeout | null = null;

  constructor(minIntervalMs: number, clock: () => number, flush: () => boolean) {
    this.minIntervalMs = minIntervalMs;
    this.clock = clock;
    this.flush = flush;
  }

  /** Asks for a flush as soon as the pacing allows. */
  request(): void {
    if (this.timer !== null) return;
    const wait = this.lastSent + this.minIntervalMs - this.clock();
    if (wait <= 0) {
      this.run();
      return;
    }
    this.timer = setTimeout(() => {
      this.timer = null;
      this.run();
    }, Math.ceil(wait));
    this.timer.unref();
  }

  /** Records a send made outside the pacer (a keep-alive), which restarts the interval. */
  sent(): void {
    this.lastSent = this.clock();
  }

  /** Whether a trailing flush is scheduled. */
  get pending(): boolean {
    return this.timer !== null;
  }

  /** Drops a scheduled flush. */
  cancel(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
  }

  private run(): void {
    if (this.flush()) this.lastSent = this.clock();
  }
}
