/**
 * The single writer. Every command from every connection goes through one `EngineHost`: it stamps
 * the command's time from a monotonic clock, applies a batch of queued commands with
 * `reduceAll`, appends the commands that changed state to the journal, waits until the journal
 * says they are durable, and only then answers the requests and publishes the events. A
 * journal failure stops the host: nothing after it is ever acknowledged.
 *
 * @module
 */
import {
  type Command,
  type EngineEvent,
  type EngineState,
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

/** Thrown to requests submitted after the host stopped. */
export class HostStoppedError extends Error {
  override readonly name = 'HostStoppedError';
}

/** The single writer around the pure engine. */
export class EngineHost {
  private current: EngineState;
  private readonly journal: JournalStore;
  private readonly clock: Clock;
  private readonly maxBatch: number;
  private readonly onFatal: ((error: unknown) => void) | undefined;
  private queue: Pending[] = [];
  private running = false;
  private scheduled = false;
  private stopped: unknown = undefined;
  private readonly listeners = new Set<BatchListener>();
  private idleWaiters: (() => void)[] = [];

  constructor(options: EngineHostOptions) {
    this.current = options.state;
    this.journal = options.journal;
    this.clock = options.clock;
    this.maxBatch = options.maxBatch ?? 4096;
    this.onFatal = options.onFatal;
  }

  /** The latest durable state (never one with undurable effects). */
  get state(): EngineState {
    return this.current;
  }

  /** Seq of the last durable journal record. */
  get journalSeq(): number {
    return this.journal.lastSeq;
  }

  /** The time the next command would get (ms). */
  now(): number {
    return this.clock.now();
  }

  /** Whether the host stopped on a fatal error. */
  get failed(): boolean {
    return this.stopped !== undefined;
  }

  /** Queues a command; resolves once it is applied and durable, with its events. */
  submit(input: CommandInput): Promise<CommandResult> {
    if (this.stopped !== undefined) return Promise.reject(new HostStoppedError('engine stopped'));
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

  /** Resolves when every command submitted so far is durable and published. */
  idle(): Promise<void> {
    if (!this.running && this.queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private schedule(): void {
    if (this.scheduled || this.running) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.flush();
    });
  }

  private async flush(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length > 0 && this.stopped === undefined) {
        const batch = this.queue.splice(0, this.maxBatch);
        await this.commit(batch);
      }
    } finally {
      this.running = false;
      if (this.queue.length > 0 && this.stopped === undefined) this.schedule();
      else {
        const waiters = this.idleWaiters;
        this.idleWaiters = [];
        for (const w of waiters) w();
      }
    }
  }

  private async commit(batch: Pending[]): Promise<void> {
    const commands = batch.map((p) => p.command);
    let result: ReturnType<typeof reduceAll>;
    try {
      result = reduceAll(this.current, commands);
    } catch (error) {
      // A broken invariant: stop before anything of this batch becomes visible.
      this.fail(error instanceof InvariantError ? error : new InvariantError(String(error)), batch);
      return;
    }
    const durable = commands.filter((_c, i) => result.changed[i]);
    let lastSeq = this.journal.lastSeq;
    if (durable.length > 0) {
      try {
        lastSeq = await this.journal.append(durable);
      } catch (error) {
        this.fail(error, batch);
        return;
      }
    }
    this.current = result.state;
    let seq = lastSeq - durable.length;
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
    const committed: CommittedBatch = { commands, events: result.events, state: result.state };
    for (const listener of this.listeners) {
      try {
        listener(committed);
      } catch (error) {
        // A listener bug must not poison the engine; it is reported and the listener survives.
        console.error('batch listener failed', error);
      }
    }
  }

  private fail(error: unknown, batch: Pending[]): void {
    this.stopped = error;
    for (const p of batch) p.reject(error);
    for (const p of this.queue) p.reject(error);
    this.queue = [];
    this.onFatal?.(error);
  }
}
