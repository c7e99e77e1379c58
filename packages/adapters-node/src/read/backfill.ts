/**
 * History backfill after a restart from a snapshot (docs/durability.md, "Read models after a
 * snapshot restart"). Recovery reduces only the journal records after the snapshot, so the read
 * models (order and trade history, report replay buffers, tickers, candles) start with what
 * followed it. The backfill gives them the history before it, in the background, while the venue
 * serves:
 *
 * 1. It listens to the host from before the tail replay and keeps every committed batch (the
 *    tail replay, then live batches) until it is done.
 * 2. The read models at the snapshot's seq come from the read-model checkpoint written beside
 *    the snapshot (`journal/read-model-files.ts`), read and checked in slices into fresh copies.
 *    Without one that passes every check (the reason is logged), they are rebuilt from the
 *    journal, and the core is deterministic:
 *    - it starts from the newest older snapshot whose checkpoint passes every check (its read
 *      models loaded, its state read), or else from `createEngineState({}, time of record 1)`
 *      and empty projections, as a full replay does: the journal's first records may be
 *      archived, and re-reducing the whole history costs what the history does;
 *    - it re-reduces the records from there to the snapshot's seq, a slice of records per
 *      event-loop turn (`setImmediate` between slices), and hands the events to those
 *      projections (never to the live state, never to clients) in batches of 4,096 records
 *      aligned as a full replay's, so they see what a full replay's projections saw;
 *    - it checks that the state it reached has the snapshot's hash (hashed in slices too); if
 *      not, it logs an error and gives up, leaving the read models as they are.
 * 3. It feeds the fresh copies the kept batches, in slices, then, in the same turn as the last
 *    one (no batch can come in between), makes them the live read models (`commit`).
 *
 * The result is the read models of a full replay of the same journal, with every live batch that
 * arrived during the backfill in its place.
 *
 * @module
 */
import {
  type Command,
  createEngineState,
  ENGINE_RULES_VERSION,
  type EngineEvent,
  type EngineState,
  ForeignRulesScan,
  type JournalRecord,
  reduceAll,
} from '@perp/core';
import type { CommittedBatch } from '../engine/host.js';
import { type CheckpointSource, loadCheckpoint } from '../journal/read-model-files.js';
import { REPLAY_BATCH_RECORDS } from '../journal/rules-version.js';
import { stateHashInSlices } from '../sliced-hash.js';
import type { ProjectionRebuild } from './checkpoint.js';
import type { HistoryStore } from './history.js';
import type { ReportStreams } from './report-streams.js';

export type { ProjectionRebuild } from './checkpoint.js';

/** Rebuilds the order and trade history aside; `commit` replaces the live store's rows. */
export function historyRebuild(live: HistoryStore): ProjectionRebuild {
  const rebuilt = live.emptyCopy();
  return { apply: (batch) => rebuilt.apply(batch), commit: () => live.adopt(rebuilt) };
}

/** Rebuilds the report replay buffers aside; `commit` swaps them in under the live subscribers. */
export function reportStreamsRebuild(live: ReportStreams): ProjectionRebuild {
  const rebuilt = live.emptyCopy();
  return { apply: (batch) => rebuilt.apply(batch), commit: () => live.adoptReports(rebuilt) };
}

/** Options of a {@link HistoryBackfill}. */
export interface HistoryBackfillOptions {
  /** The committed batches of the live venue, from before its tail replay on. */
  readonly host: { subscribe(listener: (batch: CommittedBatch) => void): () => void };
  /** The snapshot recovery started from. */
  readonly snapshot: { readonly seq: number; readonly hash: string };
  /** Journal records after `afterSeq` (at least up to the snapshot's seq), decoded as read. */
  readonly records: (afterSeq: number) => Iterable<JournalRecord>;
  /** The read models to rebuild. */
  readonly rebuilds: readonly ProjectionRebuild[];
  readonly log: (line: string) => void;
  /** Records reduced per event-loop turn (default 1,024). */
  readonly chunkRecords?: number;
  /** Longest a hashing or merging slice holds the event loop, ms (default 10). */
  readonly sliceMs?: number;
  /** Called once when the backfill ends, whatever the outcome (releases the journal's copy). */
  readonly onEnd?: () => void;
  /**
   * Called when the journal's records will not be read (a checkpoint was loaded), before the
   * kept batches are merged: the journal's in-memory copy can go at once rather than at the end.
   */
  readonly onRecordsUnneeded?: () => void;
  /**
   * The read-model checkpoint written beside the snapshot (`journal/read-model-files.ts`): tried
   * first, and the journal is re-reduced only when it is missing or fails a check. Its parts
   * are the same read models as {@link rebuilds}.
   */
  readonly checkpoint?: CheckpointSource;
  /**
   * Older snapshots that have a read-model checkpoint, newest first, each with a way to read its
   * state. Tried in turn when {@link checkpoint} is not usable: the first whose checkpoint loads
   * is where the journal's re-reduction starts, instead of record 1.
   */
  readonly olderCheckpoints?: () => Iterable<OlderCheckpoint>;
}

/** An older snapshot with its read-model checkpoint (see {@link HistoryBackfillOptions}). */
export interface OlderCheckpoint {
  readonly checkpoint: CheckpointSource;
  /** Reads the snapshot's state (throws when it cannot). */
  readonly state: () => EngineState;
}

/** How a backfill ended. */
export type BackfillOutcome = 'complete' | 'abandoned' | 'cancelled';

/** Where a backfill is. */
export interface BackfillProgress {
  readonly phase: 'pending' | 'loading' | 'reducing' | 'hashing' | 'merging' | BackfillOutcome;
  /**
   * Where the history before the snapshot comes from: its read-model checkpoint, or the journal
   * re-reduced from the first record (`null` before it is known).
   */
  readonly source: 'checkpoint' | 'journal' | null;
  /** Records 1..`reduced` re-reduced so far. */
  readonly reduced: number;
  /** The snapshot's seq: records to re-reduce. */
  readonly total: number;
  /** Live batches kept for the merge and not merged yet. */
  readonly pendingBatches: number;
}

const yieldToLoop = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** See the module comment. */
export class HistoryBackfill {
  private readonly options: HistoryBackfillOptions;
  private kept: CommittedBatch[] = [];
  private unsubscribe: (() => void) | null;
  private phase: BackfillProgress['phase'] = 'pending';
  private reduced = 0;
  private source: BackfillProgress['source'] = null;
  private cancelled = false;
  private started: Promise<BackfillOutcome> | null = null;
  private resolveDone!: (outcome: BackfillOutcome) => void;
  /** Settles when the backfill ended: complete, abandoned (logged) or cancelled. */
  readonly done: Promise<BackfillOutcome>;

  /** Starts keeping the host's batches at once; {@link start} begins the work. */
  constructor(options: HistoryBackfillOptions) {
    this.options = options;
    this.unsubscribe = options.host.subscribe((batch) => {
      this.kept.push(batch);
    });
    this.done = new Promise((resolve) => {
      this.resolveDone = resolve;
    });
  }

  get progress(): BackfillProgress {
    return {
      phase: this.phase,
      source: this.source,
      reduced: this.reduced,
      total: this.options.snapshot.seq,
      pendingBatches: this.kept.length,
    };
  }

  /** Runs the backfill in the background; {@link done} tells how it ended. */
  start(): Promise<BackfillOutcome> {
    this.started ??= this.run().then(
      (outcome) => this.end(outcome),
      (error: unknown) => {
        this.options.log(
          `history backfill abandoned: ${error instanceof Error ? error.message : String(error)}; the read models keep only what followed the snapshot`,
        );
        return this.end('abandoned');
      },
    );
    return this.started;
  }

  /** Stops at the next slice (the venue is closing); the read models stay as they are. */
  cancel(): void {
    this.cancelled = true;
    if (this.started === null) this.end('cancelled');
  }

  private end(outcome: BackfillOutcome): BackfillOutcome {
    if (this.phase === 'complete' || this.phase === 'abandoned' || this.phase === 'cancelled')
      return this.phase;
    this.phase = outcome;
    this.unsubscribe?.();
    this.unsubscribe = null;
    this.kept = [];
    this.options.onEnd?.();
    this.resolveDone(outcome);
    return outcome;
  }

  private async run(): Promise<BackfillOutcome> {
    const { checkpoint, log } = this.options;
    const sliceMs = this.options.sliceMs ?? 10;
    if (checkpoint !== undefined) {
      const t0 = performance.now();
      this.phase = 'loading';
      const loaded = await loadCheckpoint(checkpoint, {
        sliceMs,
        cancelled: () => this.cancelled,
      });
      if (loaded === null || this.cancelled) return 'cancelled';
      if (loaded.restored) {
        this.source = 'checkpoint';
        this.options.onRecordsUnneeded?.();
        const merged = await this.merge(loaded.restorers, sliceMs);
        if (merged === null) return 'cancelled';
        log(
          `history backfill: done, the read models at seq ${checkpoint.snapshot.seq} loaded from ${loaded.path} (${loaded.bytes} bytes, ${loaded.entries} entries) in ${((performance.now() - t0) / 1000).toFixed(1)} s, ${merged} later batches merged; the read models now reach back to the first record`,
        );
        return 'complete';
      }
      log(`history backfill: no read-model checkpoint loaded (${loaded.reason})`);
    }
    for (const older of this.options.olderCheckpoints?.() ?? []) {
      const at = older.checkpoint.snapshot.seq;
      const loaded = await loadCheckpoint(older.checkpoint, {
        sliceMs,
        cancelled: () => this.cancelled,
      });
      if (loaded === null || this.cancelled) return 'cancelled';
      if (!loaded.restored) {
        log(`history backfill: no read-model checkpoint loaded at seq ${at} (${loaded.reason})`);
        continue;
      }
      let state: EngineState;
      try {
        state = older.state();
      } catch (e) {
        log(
          `history backfill: the snapshot at seq ${at} is not usable (${e instanceof Error ? e.message : String(e)})`,
        );
        continue;
      }
      return this.reduceJournal(sliceMs, {
        seq: at,
        state,
        rebuilds: loaded.restorers,
        path: loaded.path,
      });
    }
    return this.reduceJournal(sliceMs, null);
  }

  /**
   * Feeds the kept batches to `rebuilds` in slices and, in the same turn as the last one (no
   * batch can come in between), makes them the live read models. Resolves with the number of
   * batches merged, `null` when cancelled.
   */
  private async merge(
    rebuilds: readonly ProjectionRebuild[],
    sliceMs: number,
  ): Promise<number | null> {
    this.phase = 'merging';
    let merged = 0;
    for (;;) {
      if (this.cancelled) return null;
      const until = performance.now() + sliceMs;
      let i = 0;
      while (i < this.kept.length) {
        const batch = this.kept[i++] as CommittedBatch;
        for (const r of rebuilds) r.apply(batch);
        if (performance.now() >= until) break;
      }
      merged += i;
      this.kept.splice(0, i);
      if (this.kept.length === 0) {
        // Same turn as the last merged batch: the rebuilt read models have seen every batch.
        for (const r of rebuilds) r.commit();
        return merged;
      }
      await yieldToLoop();
    }
  }

  /**
   * Re-reduces the journal's records up to the snapshot's seq: after `from` (an older snapshot's
   * seq, its state and the read models loaded from its checkpoint), or from record 1 into
   * {@link rebuilds} when `from` is `null`.
   */
  private async reduceJournal(
    sliceMs: number,
    from: {
      readonly seq: number;
      readonly state: EngineState;
      readonly rebuilds: readonly ProjectionRebuild[];
      readonly path: string;
    } | null,
  ): Promise<BackfillOutcome> {
    const { snapshot, log } = this.options;
    const rebuilds = from?.rebuilds ?? this.options.rebuilds;
    this.source = 'journal';
    const chunk = Math.max(1, Math.floor(this.options.chunkRecords ?? 1024));
    const total = snapshot.seq;
    const first = (from?.seq ?? 0) + 1;
    this.reduced = first - 1;
    const t0 = performance.now();
    log(
      `history backfill: re-reducing journal records ${first}..${total} in the background to rebuild the read models from before the snapshot${from === null ? '' : `, from the read models at seq ${from.seq} loaded from ${from.path}`}`,
    );

    // ---- re-reduce the prefix ------------------------------------------------------------
    this.phase = 'reducing';
    const records = this.options.records(first - 1)[Symbol.iterator]();
    let state: EngineState | null = from?.state ?? null;
    let commands: Command[] = [];
    let events: EngineEvent[][] = [];
    const rules = new ForeignRulesScan(state?.rulesVersion ?? null);
    while (this.reduced < total) {
      if (this.cancelled) return 'cancelled';
      // A slice never crosses a batch boundary: batches are those of a full replay.
      const n = Math.min(
        chunk,
        REPLAY_BATCH_RECORDS - (this.reduced % REPLAY_BATCH_RECORDS),
        total - this.reduced,
      );
      const slice: Command[] = [];
      for (let i = 0; i < n; i++) {
        const next = records.next();
        const expected = this.reduced + slice.length + 1;
        if (next.done === true)
          throw new Error(`the journal ends before seq ${expected}, below the snapshot's seq`);
        if (next.value.seq !== expected)
          throw new Error(`journal record ${next.value.seq} read where ${expected} was expected`);
        slice.push(next.value.command);
        rules.add(next.value.command);
      }
      state ??= createEngineState({}, (slice[0] as Command).time);
      const result = reduceAll(state, slice);
      state = result.state;
      this.reduced += n;
      for (const c of slice) commands.push(c);
      for (const e of result.events) events.push(e);
      if (this.reduced % REPLAY_BATCH_RECORDS === 0 || this.reduced === total) {
        const batch: CommittedBatch = { commands, events, state };
        for (const r of rebuilds) r.apply(batch);
        commands = [];
        events = [];
      }
      await yieldToLoop();
    }
    if (state === null) return 'abandoned';
    // Records of other rules (an upgrade): their history under this build's rules is the one
    // clients saw only if the replay reaches the snapshot's state, which the hash check decides.
    const foreign = rules.result();
    const foreignNote =
      foreign === null
        ? ''
        : `journal records ${first + foreign.first}..${first + foreign.last} include records written under engine rules ${foreign.versions.join(' and ')}, this build has rules ${ENGINE_RULES_VERSION}`;

    // ---- the state must be the snapshot's ------------------------------------------------
    this.phase = 'hashing';
    const hash = await stateHashInSlices(state, sliceMs, () => this.cancelled);
    if (hash === null) return 'cancelled';
    state = null;
    if (hash !== snapshot.hash) {
      log(
        `history backfill abandoned: re-reducing journal records ${first}..${total} gives state hash ${hash}, the snapshot has ${snapshot.hash}${foreignNote === '' ? '' : ` (${foreignNote})`}; the read models keep only what followed the snapshot`,
      );
      return 'abandoned';
    }
    if (foreignNote !== '')
      log(
        `history backfill: ${foreignNote}; re-reduced under this build's rules they reach the snapshot's state hash, so their history is rebuilt under them`,
      );

    // ---- the batches since the snapshot, then the swap -------------------------------------
    const merged = await this.merge(rebuilds, sliceMs);
    if (merged === null) return 'cancelled';
    const seconds = ((performance.now() - t0) / 1000).toFixed(1);
    log(
      `history backfill: done, ${total - first + 1} journal records re-reduced in ${seconds} s (state hash matches the snapshot), ${merged} later batches merged; the read models now reach back to the first record`,
    );
    return 'complete';
  }
}
