/**
 * Where time enters the venue. The engine reads no clock: the host stamps every command with
 * `Clock.now()`, which never goes backwards even if the system clock does.
 *
 * @module
 */

/** A source of command times, ms. */
export interface Clock {
  now(): number;
}

/** The system clock, made monotonic: a step back repeats the last value instead. */
export class SystemClock implements Clock {
  private last: number;

  constructor(floor = 0) {
    this.last = floor;
  }

  /** Current time, never below any value returned before (or the floor). */
  now(): number {
    const t = Date.now();
    if (t > this.last) this.last = t;
    return this.last;
  }
}

/** A clock for tests: moves only when told. */
export class ManualClock implements Clock {
  private t: number;

  constructor(start: number) {
    this.t = start;
  }

  /** Current time. */
  now(): number {
    return this.t;
  }

  /** Moves forward by `ms`. */
  advance(ms: number): void {
    this.t += ms;
  }

  /** Sets the time (never backwards). */
  set(t: number): void {
    if (t > this.t) this.t = t;
  }
}
