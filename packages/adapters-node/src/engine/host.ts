/**
 * The single writer. Every command from every connection goes through one `EngineHost`: it stamps
 * the command's time from a monotonic clock, applies a batch of queued commands with
 * `reduceAll`, appends the commands that changed state to the journal, waits until the journal
 * says they are durable, and only then answers the requests and publishes the events. A
 * journal failure stops the host: nothing after it is ever acknowledged.
 *
 * Group commit. At most one journal append (one write + one fdatasync) is in flight. While it
 * runs, the event loop goes on: new commands are stamped, reduced in memory on top of the
 * newest (not yet durable) state and collected into the next group, which is appended as one
 * call when the flight returns. Batches are published strictly in order, each once every
 * record up to its own is durable, including batches that journal nothing (a refusal computed
 * on an undurable state is only answered once that state is durable). Readers ({@link state},
 * listeners, {@link journalSeq}) only ever see published, durable states.
 *
 * @module
 */
import {
  type Command,
  type EngineEvent,
  type EngineState,
  ErrorCode,
  InvariantError,
  type JournalStore,
  type Outcome,
  reduceAll,
} from '@perp/core';
import type { Clock } from './clock.js';

/** A command as submitted: the host stamps its time. */
export type CommandInput = Command extends infer C
  ? C extends unknown
    ? Omit<C, 'time'>
    : never
  : never;

/** What one command did, once durable. */
export interface CommandResult {
  readonly command: Command;
  readonly events: EngineEvent[];
  readonly outcome: Outcome;
  /** Journal seq of the command when it changed state. */
  readonly seq: number | undefined;
}

/** A durable batch, as listeners see it. */
export interface CommittedBatch {
  readonly commands: readonly Command[];
  readonly events: readonly EngineEvent[][];
  /** The state after the batch. */
  readonly state: EngineState;
}

/** Receives every committed batch, in order. */
export type BatchListener = (batch: CommittedBatch) => void;

interface Pending {
  readonly command: Command;
  readonly resolve: (result: CommandResult) => void;
  readonly reject: (error: unknown) => void;
}

/** A batch applied in memory, not yet published: its records may not be durable yet. */
interface Reduced {
  readonly batch: Pending[];
  readonly commands: Command[];
  readonly result: ReturnType<typeof reduceAll>;
  /** The commands that changed state: the batch's journal records, in order. */
  readonly records: Command[];
}

/** Options of an {@link EngineHost}. */
export interface EngineHostOptions {
  readonly state: EngineState;
  readonly journal: JournalStore;
  readonly clock: Clock;
  /** Most commands per batch (default 4,096). */
  readonly maxBatch?: number;
  /** Called once when the host stops on an error it cannot survive. */
  readonly onFatal?: (error: unknown) => void;
}

/**
 * The answer of a request the host could not carry out because it stopped: the spec's server
 * error for the reason (`code`), with the failure itself as `cause` for the operator's log. A
 * journal that cannot persist is 5002 LEDGER_UNAVAILABLE (the venue is gone until restarted from
 * its data directory: retry after a delay); a broken engine invariant is 5001 EXCHANGE_ERROR.
 *
 * `mayBeApplied`: the request's record was in the journal append that failed. Its bytes may have
 * reached the file (a flush that failed after the write, a file deleted under the journal), and
 * a restart then applies it (durability.md: either outcome is allowed). Such a request is told
 * that its outcome is unknown and to retry with the same signed request: a client that signed a
 * new one after "nothing was applied" would get the operation twice.
 */
export class HostStoppedError extends Error {
  override readonly name = 'HostStoppedError';
  readonly code: typeof ErrorCode.LEDGER_UNAVAILABLE | typeof ErrorCode.EXCHANGE_ERROR;
  readonly mayBeApplied: boolean;

  constructor(cause: unknown, mayBeApplied = false) {
    const broken = cause instanceof InvariantError;
    super(
      broken
        ? 'EXCHANGE_ERROR: the matching engine stopped on an internal error; nothing of this request was applied'
        : mayBeApplied
          ? 'LEDGER_UNAVAILABLE: the engine stopped because its journal could not persist; this request may have been written before the failure, so its outcome is unknown until the venue restarts: retry after a delay with the same signed request, not a re-signed one (if it was applied, it is refused as a replay, INVALID_NONCE), or read its outcome once the venue is back'
          : 'LEDGER_UNAVAILABLE: the engine stopped because its journal could not persist; nothing of this request was applied, retry after a delay',
      { cause },
    );
    this.code = broken ? ErrorCode.EXCHANGE_ERROR : ErrorCode.LEDGER_UNAVAILABLE;
    this.mayBeApplied = !broken && mayBeApplied;
  }
}

/** The single writer around the pure engine. */
export class EngineHost {
  /** The newest published (durable) state. */
  private current: EngineState;
  /** The newest applied state: {@link current} plus the batches not yet published. */
  private head: EngineState;
  /** Seq of the last record of the published state. */
  private publishedSeq: number;
  private readonly journal: JournalStore;
  private readonly clock: Clock;
  private readonly maxBatch: number;
  private readonly onFatal: ((error: unknown) => void) | undefined;
  /** Submitted, not applied yet. */
  private queue: Pending[] = [];
  /** Applied, waiting for the next append (the next group). */
  private waiting: Reduced[] = [];
  /** The group whose append is in flight. */
  private inFlight: Reduced[] | null = null;
  private scheduled = false;
  private stopped: unknown = undefined;
  /** Whether onFatal was called (after a halt, once the batches before it were answered). */
  private fatalReported = false;
  private readonly listeners = new Set<BatchListener>();
  private idleWaiters: (() => void)[] = [];

  constructor(options: EngineHostOptions) {
    this.current = options.state;
    this.head = options.state;
    this.journal = options.journal;
    this.publishedSeq = options.journal.lastSeq;
    this.clock = options.clock;
    this.maxBatch = options.maxBatch ?? 4096;
    this.onFatal = options.onFatal;
  }

  /** The latest durable state (never one with undurable effects). */
  get state(): EngineState {
    return this.current;
  }

  /** Seq of the last journal record of {@link state} (inside a listener: the batch's last). */
  get journalSeq(): number {
    return this.publishedSeq;
  }

  /** The time the next command would get (ms). */
  now(): number {
    return this.clock.now();
  }

  /**
   * Commands not answered yet: queued (not applied), applied and waiting for the next group,
   * and in the group whose append is in flight.
   */
  get backlog(): { readonly queued: number; readonly waiting: number; readonly inFlight: number } {
    const count = (rs: readonly Reduced[]) => rs.reduce((n, r) => n + r.batch.length, 0);
    return {
      queued: this.queue.length,
      waiting: count(this.waiting),
      inFlight: count(this.inFlight ?? []),
    };
  }

  /**
   * The time stamped on the oldest submitted command not published yet (queued, applied and
   * waiting, or in the append in flight), `null` when every command is published. Stamps never
   * go back, so whatever is published later is stamped at or after it: a read model that closes
   * a time interval (a candle) must not close one that ends at or after it.
   */
  unpublishedSince(): number | null {
    const oldest = this.inFlight?.[0] ?? this.waiting[0];
    return oldest?.commands[0]?.time ?? this.queue[0]?.command.time ?? null;
  }

  /** Whether the host stopped on a fatal error. */
  get failed(): boolean {
    return this.stopped !== undefined;
  }

  /** Queues a command; resolves once it is applied and durable, with its events. */
  submit(input: CommandInput): Promise<CommandResult> {
    if (this.stopped !== undefined) return Promise.reject(new HostStoppedError(this.stopped));
    const command = { ...input, time: this.clock.now() } as Command;
    return new Promise<CommandResult>((resolve, reject) => {
      this.queue.push({ command, resolve, reject });
      this.schedule();
    });
  }

  /**
   * Re-applies journal records at start-up, before any new command: nothing is appended, and
   * listeners see the batches exactly as they saw them live, so read models rebuild themselves.
   */
  replay(commands: readonly Command[]): void {
    if (commands.length === 0) return;
    const result = reduceAll(this.current, commands);
    this.current = result.state;
    this.head = result.state;
    const committed: CommittedBatch = { commands, events: result.events, state: result.state };
    for (const listener of this.listeners) listener(committed);
  }

  /** Registers a listener for committed batches; returns the unsubscribe function. */
  subscribe(listener: BatchListener): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** Resolves when every command submitted so far is durable and published (or refused). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private isIdle(): boolean {
    return this.queue.length === 0 && this.waiting.length === 0 && this.inFlight === null;
  }

  private checkIdle(): void {
    if (!this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  private schedule(): void {
    if (this.scheduled || this.stopped !== undefined) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.pump();
    });
  }

  /** Applies one batch of the queue, then starts an append if none is in flight. */
  private pump(): void {
    if (this.stopped !== undefined) return;
    const batch = this.queue.splice(0, this.maxBatch);
    if (batch.length > 0) {
      const commands = batch.map((p) => p.command);
      let result: ReturnType<typeof reduceAll>;
      try {
        result = reduceAll(this.head, commands);
      } catch (error) {
        // A broken invariant: stop before anything of this batch becomes visible. The batches
        // applied before it are valid: they are still written and answered, then the host stops.
        this.halt(
          error instanceof InvariantError ? error : new InvariantError(String(error)),
          batch,
        );
        return;
      }
      this.head = result.state;
      const records = commands.filter((_c, i) => result.changed[i]);
      this.waiting.push({ batch, commands, result, records });
    }
    this.startGroup();
    if (this.queue.length > 0) this.schedule();
  }

  /**
   * Unless an append is in flight: publishes the waiting batches that journal nothing (all
   * before them is durable), then appends the rest as one group.
   */
  private startGroup(): void {
    if (this.inFlight !== null) return;
    let next = this.waiting[0];
    while (next !== undefined && next.records.length === 0) {
      this.waiting.shift();
      this.publish(next, this.publishedSeq);
      next = this.waiting[0];
    }
    if (this.waiting.length === 0) {
      this.drained();
      return;
    }
    const group = this.waiting;
    this.waiting = [];
    this.inFlight = group;
    const records = group.flatMap((r) => r.records);
    let appended: Promise<number>;
    try {
      appended = this.journal.append(records);
    } catch (error) {
      appended = Promise.reject(error);
    }
    appended.then(
      (lastSeq) => {
        if (this.inFlight !== group) return;
        this.inFlight = null;
        let seq = lastSeq - records.length;
        for (const r of group) seq = this.publish(r, seq);
        this.startGroup();
      },
      (error: unknown) => this.fail(error),
    );
  }

  /** Publishes one applied batch whose records end after `seq`; returns its last record's seq. */
  private publish(r: Reduced, seq: number): number {
    const { batch, commands, result } = r;
    this.current = result.state;
    for (let i = 0; i < batch.length; i++) {
      const events = result.events[i] as EngineEvent[];
      const outcome = events.find((e): e is Outcome => e.type === 'outcome') as Outcome;
      const changed = result.changed[i] === true;
      (batch[i] as Pending).resolve({
        command: commands[i] as Command,
        events,
        outcome,
        seq: changed ? ++seq : undefined,
      });
    }
    this.publishedSeq = seq;
    const committed: CommittedBatch = { commands, events: result.events, state: result.state };
    for (const listener of this.listeners) {
      try {
        listener(committed);
      } catch (error) {
        // A listener bug must not poison the engine; it is reported and the listener survives.
        console.error('batch listener failed', error);
      }
    }
    return seq;
  }

  /** Nothing is waiting or in flight: wakes idle waiters, and reports a halt once drained. */
  private drained(): void {
    if (this.stopped !== undefined && !this.fatalReported) this.reportFatal(this.stopped);
    this.checkIdle();
  }

  /**
   * Stops on a broken invariant: refuses `batch` and everything queued after it; what was
   * applied before it is still appended and answered, then onFatal runs.
   */
  private halt(error: unknown, batch: Pending[]): void {
    this.stopped = error;
    const refusal = new HostStoppedError(error);
    for (const p of batch) p.reject(refusal);
    for (const p of this.queue) p.reject(refusal);
    this.queue = [];
    this.startGroup();
  }

  /**
   * Stops on a journal failure: nothing that is not published yet is ever acknowledged (the
   * group in flight, the next group, the queue), and the journal is never appended to again.
   * The records of the group in flight may be in the file all the same (a restart applies
   * them), so its commands that have a record are refused as of unknown outcome; the rest
   * (commands that changed nothing, the next group, the queue) were never written.
   */
  private fail(error: unknown): void {
    if (this.stopped === undefined) this.stopped = error;
    const inFlight = this.inFlight ?? [];
    const waiting = this.waiting;
    this.inFlight = null;
    this.waiting = [];
    this.head = this.current;
    const unknown = new HostStoppedError(error, true);
    const refusal = new HostStoppedError(error);
    for (const r of inFlight)
      for (let i = 0; i < r.batch.length; i++)
        (r.batch[i] as Pending).reject(r.result.changed[i] === true ? unknown : refusal);
    for (const r of waiting) for (const p of r.batch) p.reject(refusal);
    for (const p of this.queue) p.reject(refusal);
    this.queue = [];
    if (!this.fatalReported) this.reportFatal(error);
    this.checkIdle();
  }

  /**
   * Reports the stop once, a turn later: the answers just settled (acknowledgements and
   * refusals alike) run as microtasks first, so they reach their sockets before `onFatal`
   * closes them.
   */
  private reportFatal(error: unknown): void {
    this.fatalReported = true;
    setImmediate(() => this.onFatal?.(error));
  }
}
