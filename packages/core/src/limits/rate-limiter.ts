/**
 * Rate accounting (interface-spec "Limits", protocol.md section 5): at most 20 admitted requests
 * per rolling second per wallet (REST and WebSocket together, 4029 with `retryAfterMs`), and a
 * sustained budget of 3,000 signed requests per rolling 5 minutes (4035) in which cancels are
 * refused only at 6,000. Only attributed requests are counted (after the signature verified, or
 * on an authenticated connection), and a refused request does not count.
 *
 * The limiter reads no clock: every call carries its time, so the same calls give the same
 * answers. Times of one key are taken as never going back: a call older than the key's latest is
 * counted at that latest time (a clock stepped back, or two surfaces whose clocks disagree), which
 * keeps each window in order, so a refusal's `retryAfterMs` is always positive: the exact wait on
 * the key's own clock, rounded up to whole milliseconds. Adapters hold one instance per process
 * (limits protect the service, they are not ledger state, so they are not journaled); keys are
 * wallets, or client IPs for public traffic. Keys idle for longer than both windows are
 * forgotten as calls arrive, so memory follows the active keys, not every key ever seen.
 *
 * @module
 */
import { ErrorCode } from '../errors.js';

/** Limits of one limiter. */
export interface RateLimitConfig {
  /** Admitted requests per rolling window (spec: 20 per second). */
  readonly perWindow: number;
  readonly windowMs: number;
  /** Signed requests per rolling sustained window (3,000 per 5 minutes). */
  readonly sustained: number;
  readonly sustainedWindowMs: number;
  /** Cancels are refused only at `sustained x cancelHeadroom` (2). */
  readonly cancelHeadroom: number;
}

/** The spec's per-wallet limits, with the budget size protocol.md fixes. */
export const WALLET_LIMITS: RateLimitConfig = {
  perWindow: 20,
  windowMs: 1_000,
  sustained: 3_000,
  sustainedWindowMs: 300_000,
  cancelHeadroom: 2,
};

/** What is being admitted: a signed request, a signed cancel, or an unsigned request. */
export type RateClass = 'signed' | 'cancel' | 'unsigned';

/** Result of {@link RateLimiter.admit}. */
export type RateDecision =
  | { readonly ok: true }
  | {
      readonly ok: false;
      readonly code:
        | typeof ErrorCode.RATE_LIMIT_EXCEEDED
        | typeof ErrorCode.SUSTAINED_RATE_LIMIT_EXCEEDED;
      readonly message: string;
      /** When a retry can first succeed. */
      readonly retryAfterMs: number;
    };

/**
 * A wait in whole milliseconds, rounded up: a host may count on a sub-millisecond clock (the
 * service's monotonic one), but `retryAfterMs` goes on the wire as integer ms, and a client that
 * waits the rounded-down figure would be refused again.
 */
function wholeMs(ms: number): number {
  return Math.ceil(ms);
}

/** A FIFO of timestamps in a growable ring. */
class TimeRing {
  private buf: Float64Array;
  private head = 0;
  size = 0;
  constructor(capacity: number) {
    this.buf = new Float64Array(Math.max(4, capacity));
  }
  at(i: number): number {
    return this.buf[(this.head + i) % this.buf.length] as number;
  }
  push(t: number): void {
    if (this.size === this.buf.length) {
      const next = new Float64Array(this.buf.length * 2);
      for (let i = 0; i < this.size; i++) next[i] = this.at(i);
      this.buf = next;
      this.head = 0;
    }
    this.buf[(this.head + this.size) % this.buf.length] = t;
    this.size++;
  }
  /** Drops entries with time <= `cutoff`. */
  evict(cutoff: number): void {
    while (this.size > 0 && this.at(0) <= cutoff) {
      this.head = (this.head + 1) % this.buf.length;
      this.size--;
    }
  }
}

interface KeyState {
  recent: TimeRing;
  sustained: TimeRing;
  lastSeen: number;
}

/** Deterministic rate accounting for many keys. */
export class RateLimiter {
  private readonly keys = new Map<string, KeyState>();
  readonly config: RateLimitConfig;
  /** The longer of the two windows: a key idle for longer holds nothing that still counts. */
  private readonly span: number;
  /** When {@link RateLimiter.admit} next sweeps idle keys by itself. */
  private nextSweep = Number.NEGATIVE_INFINITY;

  constructor(config: RateLimitConfig = WALLET_LIMITS) {
    this.config = config;
    this.span = Math.max(config.windowMs, config.sustainedWindowMs);
  }

  /**
   * Sweeps idle keys at most once per {@link RateLimiter.span} of call time, so memory stays
   * bounded by the keys active in the last three spans without the host having to sweep: keys
   * are wallets and addresses, which cost a client nothing to make. Only keys idle for two
   * spans go: a call stamped earlier than others (a request counted at its arrival after
   * waiting in a queue) still finds every entry that counts for it unless it waited a span.
   */
  private autoSweep(time: number): void {
    if (time < this.nextSweep) return;
    this.nextSweep = time + this.span;
    this.sweep(time - this.span);
  }

  /** Admits (and counts) a request of `key` at `time`, or refuses it without counting. */
  admit(key: string, time: number, kind: RateClass): RateDecision {
    this.autoSweep(time);
    const c = this.config;
    let s = this.keys.get(key);
    if (s === undefined) {
      s = { recent: new TimeRing(c.perWindow), sustained: new TimeRing(64), lastSeen: time };
      this.keys.set(key, s);
    }
    const t = this.clockOf(s, time);
    s.recent.evict(t - c.windowMs);
    if (s.recent.size >= c.perWindow) {
      const retryAfterMs = wholeMs(s.recent.at(s.recent.size - c.perWindow) + c.windowMs - t);
      return {
        ok: false,
        code: ErrorCode.RATE_LIMIT_EXCEEDED,
        message: `RATE_LIMIT_EXCEEDED: more than ${c.perWindow} requests in ${c.windowMs} ms; retry in ${retryAfterMs} ms`,
        retryAfterMs,
      };
    }
    if (kind !== 'unsigned') {
      s.sustained.evict(t - c.sustainedWindowMs);
      const limit = kind === 'cancel' ? c.sustained * c.cancelHeadroom : c.sustained;
      if (s.sustained.size >= limit) {
        const retryAfterMs = wholeMs(
          s.sustained.at(s.sustained.size - limit) + c.sustainedWindowMs - t,
        );
        return {
          ok: false,
          code: ErrorCode.SUSTAINED_RATE_LIMIT_EXCEEDED,
          message: `SUSTAINED_RATE_LIMIT_EXCEEDED: ${s.sustained.size} signed requests in the last ${c.sustainedWindowMs / 60_000} minutes (budget ${limit}); retry in ${retryAfterMs} ms`,
          retryAfterMs,
        };
      }
      s.sustained.push(t);
    }
    s.recent.push(t);
    return { ok: true };
  }

  /**
   * Counts a signed request against the sustained budget only (its per-second share was counted
   * when it arrived on an authenticated connection).
   */
  admitSustained(key: string, time: number, kind: 'signed' | 'cancel'): RateDecision {
    this.autoSweep(time);
    const c = this.config;
    let s = this.keys.get(key);
    if (s === undefined) {
      s = { recent: new TimeRing(c.perWindow), sustained: new TimeRing(64), lastSeen: time };
      this.keys.set(key, s);
    }
    const t = this.clockOf(s, time);
    s.sustained.evict(t - c.sustainedWindowMs);
    const limit = kind === 'cancel' ? c.sustained * c.cancelHeadroom : c.sustained;
    if (s.sustained.size >= limit) {
      const retryAfterMs = wholeMs(
        s.sustained.at(s.sustained.size - limit) + c.sustainedWindowMs - t,
      );
      return {
        ok: false,
        code: ErrorCode.SUSTAINED_RATE_LIMIT_EXCEEDED,
        message: `SUSTAINED_RATE_LIMIT_EXCEEDED: ${s.sustained.size} signed requests in the last ${c.sustainedWindowMs / 60_000} minutes (budget ${limit}); retry in ${retryAfterMs} ms`,
        retryAfterMs,
      };
    }
    s.sustained.push(t);
    return { ok: true };
  }

  /** Signed requests of `key` still inside the sustained window at `time`. */
  sustainedUsed(key: string, time: number): number {
    const s = this.keys.get(key);
    if (s === undefined) return 0;
    s.sustained.evict(Math.max(time, s.lastSeen) - this.config.sustainedWindowMs);
    return s.sustained.size;
  }

  /**
   * Forgets keys idle for longer than both windows (bounded memory); {@link RateLimiter.admit}
   * also does this by itself from time to time.
   */
  sweep(time: number): void {
    for (const [key, s] of this.keys) {
      if (s.lastSeen + this.span < time) this.keys.delete(key);
    }
  }

  /** The key's clock at a call made at `time`: never earlier than a time it has seen. */
  private clockOf(s: KeyState, time: number): number {
    if (time > s.lastSeen) s.lastSeen = time;
    return s.lastSeen;
  }

  /** Number of keys tracked. */
  get size(): number {
    return this.keys.size;
  }
}
