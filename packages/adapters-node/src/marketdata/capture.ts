/**
 * Copy-on-write captures of a keyed projection (tickers, candles) for read-model checkpoints
 * (`read/checkpoint.ts`): the projection reports each change of a key's rows before it makes
 * it, and every capture running then keeps a copy of those rows if it still needs them.
 *
 * @module
 */
import { CaptureLedger } from '../read/checkpoint.js';

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

/** The captures running over one projection. */
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
