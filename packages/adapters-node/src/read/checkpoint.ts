/**
 * Read-model checkpoints: the read models (order and trade history, report replay buffers,
 * tickers, candles) saved beside a state snapshot, at the snapshot's seq, so a restart from that
 * snapshot loads them instead of re-reducing the journal from genesis (the history backfill,
 * `backfill.ts`, stays the fallback when no valid checkpoint matches the snapshot).
 *
 * A checkpoint is taken without pausing the venue. The read models are mutable, so each one that
 * can be checkpointed keeps what a capture needs by copy-on-write: {@link CheckpointPart.capture}
 * starts in the same event-loop turn as the snapshot's state is taken (no batch in between), and
 * from then on the read model copies a key's rows (an account's, a market's) before it first
 * changes them. The capture's entries are the rows as they were at that turn, however many
 * batches arrive while they are written.
 *
 * @module
 */
import type { CommittedBatch } from '../engine/host.js';

/** A read model's rows as they were when the capture started. */
export interface ReadModelCapture {
  /**
   * The capture's entries (plain records, arrays and primitives, bigints included: what
   * `journal/compact-json.ts` writes), each a chunk of one key's rows. It is walked in slices
   * between event-loop turns while batches keep arriving; an entry yielded from live rows is
   * only guaranteed until the next turn, so encode it at once.
   */
  entries(): Iterable<unknown>;
  /** Stops keeping copies (the capture was written or abandoned); idempotent. */
  release(): void;
}

/** A read model built aside (rebuilt, or restored), fed batches, then swapped in. */
export interface ProjectionRebuild {
  /** Applies one batch to the copy built aside (never visible, never pushed). */
  apply(batch: CommittedBatch): void;
  /** Makes the copy the live read model; called once, between two host batches; never throws. */
  commit(): void;
}

/**
 * Rebuilds a read model from a checkpoint's entries aside, feeds it the batches that followed
 * the checkpoint, then swaps it in for the live one (as a history backfill does, `backfill.ts`).
 */
export interface PartRestorer extends ProjectionRebuild {
  /** Adds one entry as {@link ReadModelCapture.entries} yielded it; throws on a malformed one. */
  add(entry: unknown): void;
  /**
   * Checks what was added as a whole (every entry a read model needs is there); throws
   * {@link CheckpointEntryError}. Called for every part before any is committed.
   */
  check?(): void;
}

/** A read model that can be saved in and restored from a checkpoint. */
export interface CheckpointPart {
  /** The part's name in the file; stable across builds. */
  readonly name: string;
  /**
   * The version of the part's entries: a checkpoint written with another is not loaded (the
   * backfill rebuilds the read model instead). Raise it whenever an entry's shape changes.
   */
  readonly version: number;
  /**
   * Older versions whose checkpoints this part's restorer reads too, because their entries are
   * entries of this version (a version that only added entry kinds or optional fields). An
   * upgrade then keeps the read models of its clean stop's checkpoint rather than rebuilding them
   * from the journal under new engine rules, which can miss the snapshot's hash (docs/
   * durability.md, "Upgrades"); what the added entries would hold starts at the upgrade.
   */
  readonly reads?: readonly number[];
  /** Starts a capture of the read model as it is now (captures may overlap). */
  capture(): ReadModelCapture;
  /** A restorer into a fresh, empty copy of the read model. */
  restorer(): PartRestorer;
}

/** An entry of a checkpoint that its part cannot read. */
export class CheckpointEntryError extends Error {
  constructor(part: string, detail: string) {
    super(`${part}: ${detail}`);
    this.name = 'CheckpointEntryError';
  }
}

/**
 * Copy-on-write bookkeeping of one capture over a keyed read model: the keys it covers (those
 * present when it started), and the rows of each kept before the read model first changed them.
 * A read model calls {@link beforeChange} before it changes a key's rows.
 */
export class CaptureLedger<K, Rows> {
  private readonly keys: readonly K[];
  /** Keys not yet yielded whose rows are still the live ones. */
  private readonly pending: Set<K>;
  private readonly kept = new Map<K, Rows>();
  private readonly copy: (rows: Rows) => Rows;
  private active = true;

  /** `keys`: the keys present now; `copy` makes a copy of a key's rows that later changes leave alone. */
  constructor(keys: Iterable<K>, copy: (rows: Rows) => Rows) {
    this.copy = copy;
    this.keys = [...keys];
    this.pending = new Set(this.keys);
  }

  /** Keeps a copy of `key`'s rows if the capture still needs them as they are. */
  beforeChange(key: K, rows: Rows | undefined): void {
    if (!this.active || rows === undefined || !this.pending.has(key)) return;
    this.pending.delete(key);
    this.kept.set(key, this.copy(rows));
  }

  /**
   * The captured rows of every key, in the order the keys were present; `live` gives a key's
   * current rows, used while they are unchanged since the capture started.
   */
  *rows(live: (key: K) => Rows | undefined): Generator<[K, Rows]> {
    for (const key of this.keys) {
      const kept = this.kept.get(key);
      if (kept !== undefined) {
        this.kept.delete(key);
        yield [key, kept];
        continue;
      }
      if (!this.pending.has(key)) continue;
      // Yielded as they are now: no later change needs a copy of them any more.
      this.pending.delete(key);
      const rows = live(key);
      if (rows !== undefined) yield [key, rows];
    }
  }

  /** Drops every copy and stops keeping new ones. */
  release(): void {
    this.active = false;
    this.pending.clear();
    this.kept.clear();
  }
}

/** The rows of every key of a projection as they were when the capture started. */
export interface RowsCapture<K, Rows> {
  /**
   * Each key present at the start with its rows then, in that order; walk it once. Rows yielded
   * from the live projection are only guaranteed until the projection next changes.
   */
  rows(): Iterable<[K, Rows]>;
  /** Stops keeping copies; idempotent. */
  release(): void;
}

/**
 * The captures running over one keyed read model: it reports each change of a key's rows before
 * it makes it, and every capture running then keeps a copy of those rows if it still needs them.
 */
export class Captures<K, Rows> {
  private readonly running = new Set<CaptureLedger<K, Rows>>();
  private readonly copy: (rows: Rows) => Rows;

  /** `copy`: a copy of a key's rows that later changes to the projection leave alone. */
  constructor(copy: (rows: Rows) => Rows) {
    this.copy = copy;
  }

  /** Whether a capture is running (a projection skips its checks when none is). */
  get active(): boolean {
    return this.running.size > 0;
  }

  /** Called before the projection changes `key`'s rows (`undefined`: it has none yet). */
  beforeChange(key: K, rows: Rows | undefined): void {
    for (const ledger of this.running) ledger.beforeChange(key, rows);
  }

  /** Starts a capture of `keys` (the keys present now); `live` gives a key's current rows. */
  start(keys: Iterable<K>, live: (key: K) => Rows | undefined): RowsCapture<K, Rows> {
    const ledger = new CaptureLedger<K, Rows>(keys, this.copy);
    this.running.add(ledger);
    return {
      rows: () => ledger.rows(live),
      release: () => {
        ledger.release();
        this.running.delete(ledger);
      },
    };
  }
}
