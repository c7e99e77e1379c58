/**
 * `--check`: what a start would do with a data directory (a backup, a directory about to be
 * restored), found without starting the venue. A start changes the directory (it cuts a torn
 * tail, journals a rules declaration and prices, snapshots at its stop); the check only reads:
 * it opens every file read-only, takes no lock and creates nothing.
 *
 * It runs start-up's own checks, with their messages: the journal's (`checkJournalBytes`, the
 * checks of `FileJournal.open`), the snapshot choice (`loadNewestSnapshot`), the journal's
 * requirements given the snapshots (`journalRequirements`), decoding the records a start replays
 * (`decodeFrame`), the engine rules of those records (`checkReplayRules`), `venue.json`
 * (`readVenueFile`), `chain.json` against the config (`readChainFile`, `restoreChain`) and the lock
 * (`inspectLock`). Each message that would stop a start is a problem; the report is `ok` when
 * there is none. Optionally it replays the journal as a start does and reports the state hash.
 *
 * @module
 */
import { closeSync, existsSync, fstatSync, openSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import {
  type Command,
  createEngineState,
  type EngineState,
  reduceAll,
  SNAPSHOT_VERSION,
  stateHash,
} from '@perp/core';
import { DEFAULT_CONFIG, planConfigInstruments, type VenueConfig } from './config.js';
import {
  journalRequirements,
  journalStartSeq,
  readChainFile,
  readVenueFile,
  restoreChain,
  signingContextOf,
  simulatedChainOptions,
} from './data-dir.js';
import { type ByteSource, FileSource } from './journal/byte-source.js';
import { inspectLock } from './journal/data-dir-lock.js';
import {
  checkJournalBytes,
  decodeFrame,
  type FrameScan,
  listArchiveFiles,
  RecordsArchivedError,
  scanFrames,
  tornTailCutLine,
  walkSkipped,
} from './journal/file-journal.js';
import { checkCheckpoint } from './journal/read-model-files.js';
import { REPLAY_BATCH_RECORDS, ReplayRulesCheck } from './journal/rules-version.js';
import {
  checkpointedSnapshots,
  JournalBehindSnapshotError,
  type LoadedSnapshot,
  listSnapshotFiles,
  loadNewestSnapshot,
  readSnapshotFile,
  readSnapshotHeader,
} from './journal/snapshots.js';
import { CandleProjection } from './marketdata/candles.js';
import {
  MARKET_DATA_PART,
  MARKET_DATA_PART_READS,
  MARKET_DATA_PART_VERSION,
  MarketDataRestore,
} from './marketdata/checkpoint.js';
import { TickerProjection } from './marketdata/ticker.js';
import { TradeTape } from './marketdata/trades.js';
import { stateKeccak } from './native-keccak.js';
import type { CheckpointPart } from './read/checkpoint.js';
import { HistoryStore } from './read/history.js';
import { ReportStreams } from './read/report-streams.js';
import { StartupError } from './startup-error.js';

/** What the check does beyond start-up's checks, and which start it predicts. */
export interface DataDirCheckOptions {
  /** The config a start would run with (`--config`); `chain.json` is checked against it. */
  readonly config?: VenueConfig;
  /** `false`: predict a start with `--no-snapshots` (every record replayed). */
  readonly snapshots?: boolean;
  /** Predict a start with `--replay-under-new-rules`. */
  readonly replayUnderNewRules?: boolean;
  /** Also replay the records as a start does, and report the resulting seq and state hash. */
  readonly replay?: boolean;
  /**
   * The caller holds the directory's `LOCK` itself (`--archive-journal` checks the directory it
   * has locked): the lock is reported as `mine`, not as another venue's.
   */
  readonly lockHeld?: boolean;
}

/** One snapshot file, and what a start does with it. */
export interface SnapshotFileReport {
  readonly file: string;
  readonly seq: number;
  readonly bytes: number;
  /** The engine rules its header names (`null`: none declared; absent: unknown or unreadable). */
  readonly rules?: number | null;
  /**
   * `used`: a start recovers from it; `valid`: passes every check but is not used (older than
   * the used one, `--no-snapshots`, or the journal stops the start first); `skipped`: a start
   * skips it with a log line (`reason`); `invalid`: fails a check, but a start never reads it (a
   * newer one is used); `ahead`: valid and past the journal's last record, which stops a start.
   */
  readonly status: 'used' | 'valid' | 'skipped' | 'invalid' | 'ahead';
  /** Why it fails a check (`skipped`, `invalid`), as the start's log line names it. */
  readonly reason?: string;
  /** State hash (of a `valid`, `used` or `ahead` one). */
  readonly hash?: string;
  /** The older snapshot version it is converted from on reading. */
  readonly convertedFrom?: number;
  /** Its seq is past the journal's last valid record. */
  readonly pastJournal: boolean;
}

/** A file that is either present and read or absent. */
export interface FileReport {
  readonly file: string;
  readonly present: boolean;
  /** Why a start would refuse it (then also among the problems). */
  readonly error?: string;
}

/** The report of {@link checkDataDir}. */
export interface DataDirReport {
  readonly dir: string;
  /** A start would succeed as the directory stands: {@link problems} is empty. */
  readonly ok: boolean;
  /** Each reason a start would fail, as the start would name it. */
  readonly problems: string[];
  /** What a start would do or log that does not stop it. */
  readonly notes: string[];
  readonly journal: {
    readonly file: string;
    readonly present: boolean;
    /** The file's size. */
    readonly bytes: number;
    /** Valid records; `null` when the framing check failed. */
    readonly records: number | null;
    readonly firstSeq: number | null;
    readonly lastSeq: number | null;
    /** Bytes of the valid records. */
    readonly validBytes: number | null;
    /** A torn tail a start cuts: where it starts and its length. */
    readonly tornTail: { readonly offset: number; readonly bytes: number } | null;
  };
  readonly snapshots: SnapshotFileReport[];
  /** How a start recovers; `null` when it would not get that far. */
  readonly recovery: {
    /** The snapshot it starts from, `null`: a full replay. */
    readonly snapshot: string | null;
    readonly snapshotSeq: number;
    /** Journal records it decodes and replays after the snapshot, and their seqs. */
    readonly replayRecords: number;
    /**
     * Where the history before the snapshot comes from, in the background: its read-model
     * checkpoint (`file`, checked as a start's backfill checks it), or the journal re-reduced
     * (`reason`: why the checkpoint is not used) from an older snapshot's checkpoint (`from`,
     * the newest that passes the checks) or from the first record; `null` with a full replay.
     */
    readonly readModels:
      | { readonly source: 'checkpoint'; readonly file: string }
      | {
          readonly source: 'journal';
          readonly reason: string;
          readonly from?: { readonly seq: number; readonly file: string };
          /** The records a re-reduction from the first one needs are archived: nothing is rebuilt. */
          readonly archived?: true;
        }
      | null;
    readonly replayFirstSeq: number;
    readonly replayLastSeq: number;
  } | null;
  readonly venueFile: FileReport;
  readonly chainFile: FileReport;
  readonly lock: { readonly file: string; readonly state: string };
  /** With {@link DataDirCheckOptions.replay}: the state a start reaches before it journals anything. */
  readonly replay?: {
    readonly seq: number;
    readonly hash: string;
    readonly rulesVersion: number | null;
  };
}

/**
 * How a start from `snapshot` gets the read models before it: its checkpoint, checked entry by
 * entry by the read models' own restorers (into empty copies, nothing else touched), or the
 * journal, and why.
 */
function readModelsOf(
  dir: string,
  snapshot: LoadedSnapshot,
  startSeq: number,
): NonNullable<DataDirReport['recovery']>['readModels'] {
  const market: CheckpointPart = {
    name: MARKET_DATA_PART,
    version: MARKET_DATA_PART_VERSION,
    reads: MARKET_DATA_PART_READS,
    capture: () => {
      throw new Error('--check captures nothing');
    },
    restorer: () => {
      const r = new MarketDataRestore(
        new TickerProjection(),
        new CandleProjection(),
        new TradeTape(),
      );
      return { add: (e) => r.add(e), check: () => r.finish(), apply: () => {}, commit: () => {} };
    },
  };
  // The parts a venue checkpoints, in its order (venue.ts).
  const parts = [new HistoryStore().checkpoint(), new ReportStreams().checkpoint(), market];
  const r = checkCheckpoint({ dir, snapshot: { seq: snapshot.seq, hash: snapshot.hash }, parts });
  if (r.restored) return { source: 'checkpoint', file: r.path };
  // As the backfill does: the newest older snapshot whose checkpoint and state read.
  for (const older of checkpointedSnapshots(dir, startSeq - 1, snapshot.seq)) {
    const o = checkCheckpoint({ dir, snapshot: { seq: older.seq, hash: older.hash }, parts });
    if (!o.restored) continue;
    try {
      readSnapshotFile(older.path);
    } catch {
      continue;
    }
    return { source: 'journal', reason: r.reason, from: { seq: older.seq, file: o.path } };
  }
  return { source: 'journal', reason: r.reason };
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function sizeOf(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0;
  }
}

/** Checks the data directory `dir` as a start would, reading only; see the module comment. */
export function checkDataDir(dir: string, options: DataDirCheckOptions = {}): DataDirReport {
  const root = resolve(dir);
  const problems: string[] = [];
  const notes: string[] = [];
  const journalPath = join(root, 'journal.log');
  const venuePath = join(root, 'venue.json');
  const chainPath = join(root, 'chain.json');
  const lockPath = join(root, 'LOCK');
  const emptyReport = (problem: string): DataDirReport => ({
    dir: root,
    ok: false,
    problems: [problem],
    notes,
    journal: {
      file: journalPath,
      present: false,
      bytes: 0,
      records: null,
      firstSeq: null,
      lastSeq: null,
      validBytes: null,
      tornTail: null,
    },
    snapshots: [],
    recovery: null,
    venueFile: { file: venuePath, present: false },
    chainFile: { file: chainPath, present: false },
    lock: { file: lockPath, state: 'absent' },
  });
  let names: string[];
  try {
    if (!statSync(root).isDirectory()) return emptyReport(`${root} is not a directory`);
    names = readdirSync(root);
  } catch (e) {
    return emptyReport(`data directory ${root}: ${message(e)}`);
  }

  // ---- venue.json, LOCK, leftovers --------------------------------------------------------
  const venueFile: FileReport = existsSync(venuePath)
    ? (() => {
        try {
          readVenueFile(venuePath);
          return { file: venuePath, present: true };
        } catch (e) {
          problems.push(message(e));
          return { file: venuePath, present: true, error: message(e) };
        }
      })()
    : { file: venuePath, present: false };
  if (!venueFile.present)
    notes.push(
      `${venuePath} is absent: a start writes a new one with a new admin token (and prints it)`,
    );
  const lock = options.lockHeld === true ? { state: 'mine' as const } : inspectLock(lockPath);
  if (lock.state === 'held') problems.push(lock.refusal.message);
  if (lock.state === 'stale')
    notes.push(
      `${lockPath}: a stale lock of pid ${lock.owner.pid} (since ${lock.owner.time}); a start takes it over`,
    );
  if (lock.state === 'unreadable-before-boot')
    notes.push(
      `${lockPath}: unreadable, written before this machine booted; a start takes it over`,
    );
  for (const name of names) {
    if (/^snapshot-\d{20}\.snap\.tmp$/.test(name))
      notes.push(
        `${join(root, name)}: an unfinished snapshot write; a start with snapshots deletes it`,
      );
    if (/^readmodels-\d{20}\.ckpt\.tmp$/.test(name))
      notes.push(
        `${join(root, name)}: an unfinished read-model checkpoint write; a start with snapshots deletes it`,
      );
    if (name === 'journal.log.tmp')
      notes.push(
        `${join(root, name)}: an unfinished journal rewrite of --archive-journal (journal.log is intact); delete it`,
      );
    if (name.startsWith('journal.log.detached-'))
      notes.push(
        `${join(root, name)}: records a venue copied out when its journal.log was deleted while it ran; a start does not read it`,
      );
  }

  for (const a of listArchiveFiles(root))
    notes.push(
      `${a.path}: journal records ${a.first}..${a.last} archived by --archive-journal; a start does not read it (keep it with the backups, off this disk)`,
    );

  // ---- snapshots and journal, in the start's order ----------------------------------------
  const files = listSnapshotFiles(root);
  const skipped = new Map<string, string>();
  let covering: LoadedSnapshot | null = null;
  try {
    covering = loadNewestSnapshot(root, {
      log: () => {},
      onSkip: (f, e) => skipped.set(f.path, message(e)),
    });
  } catch (e) {
    problems.push(message(e));
  }
  const present = existsSync(journalPath);
  /** The journal file's first seq: past 1 once older records were archived. */
  const startSeq = journalStartSeq(journalPath);
  // Read through a window, as a start reads it: a journal outgrows any one buffer.
  let fd: number | null = null;
  let data: ByteSource | null = null;
  /** The journal's frames when a start accepts them (it may cut their torn tail). */
  let scan: FrameScan | null = null;
  /** The journal's frames for the figures, also when a start refuses them. */
  let frames: FrameScan | null = null;
  let behind = false;
  try {
    if (present) {
      fd = openSync(journalPath, 'r');
      data = new FileSource(fd, fstatSync(fd).size);
    }
    scan = checkJournalBytes(journalPath, data, journalRequirements(root, covering));
    frames = scan;
  } catch (e) {
    behind = e instanceof JournalBehindSnapshotError;
    problems.push(message(e));
    try {
      // A journal behind a snapshot, or with no record where snapshots show some, still frames.
      if (data !== null) frames = scanFrames(journalPath, data, startSeq);
    } catch {
      // Damaged: the problem above names where.
    }
  }
  const lastSeq = frames === null ? null : frames.firstSeq + frames.offsets.length - 1;
  if (scan !== null && scan.offsets.length === 0 && files.length === 0) {
    problems.push(
      `journal ${journalPath} ${present ? 'holds no record' : 'does not exist'} and there is no snapshot: a start would begin a new, empty venue here (this is not a venue's data directory, or an empty copy)`,
    );
    scan = null;
  }
  if (scan !== null && scan.tornBytes > 0)
    notes.push(`a start cuts the torn tail and logs: ${tornTailCutLine(journalPath, scan)}`);
  if (scan !== null && present) notes.push(journalScanNote(scan, covering, startSeq));
  if (scan !== null && startSeq > 1)
    notes.push(
      `records 1..${startSeq - 1} are not in ${journalPath} (archived): a start from a snapshot at seq ${startSeq - 1} or later does not need them; a start without snapshots (--no-snapshots) or from an older one, and a history backfill without its read-model checkpoint, do`,
    );

  // ---- what a start replays ---------------------------------------------------------------
  const used = options.snapshots === false || scan === null ? null : covering;
  let recovery: DataDirReport['recovery'] = null;
  let replay: DataDirReport['replay'];
  // The start's own refusal (venue.ts) of a replay that would need archived records.
  const archivedNeeded = scan !== null && startSeq > (used?.seq ?? 0) + 1;
  if (archivedNeeded)
    problems.push(
      new RecordsArchivedError(
        journalPath,
        startSeq,
        'a start without snapshots (--no-snapshots) replays the whole journal',
      ).message,
    );
  if (scan !== null && data !== null && !archivedNeeded) {
    const afterSeq = used?.seq ?? 0;
    const rules = new ReplayRulesCheck(journalPath, used?.state.rulesVersion ?? null, afterSeq + 1);
    let replayRecords = 0;
    // With --replay the records are reduced as they are read, a batch at a time, as a start does
    // (a full replay of a long journal never holds all its commands); the result is reported only
    // if every check passes.
    let state: EngineState | null = used?.state ?? null;
    let batch: Command[] = [];
    let replayFailed: { error: unknown } | null = null;
    const reduceBatch = () => {
      if (batch.length > 0 && state !== null && replayFailed === null) {
        try {
          state = reduceAll(state, batch).state;
        } catch (error) {
          replayFailed = { error };
        }
      }
      batch = [];
    };
    const take = (command: Command) => {
      rules.add(command);
      replayRecords++;
      if (options.replay !== true) return;
      state ??= createEngineState({}, command.time);
      batch.push(command);
      if (batch.length === REPLAY_BATCH_RECORDS) reduceBatch();
    };
    let decodable = true;
    /** A record the snapshot covers is damaged: a start goes on, but an archive is refused. */
    let coveredDamage: string | null = null;
    if (scan.skipped !== undefined) {
      // A start skips the records the snapshot covers (its last one is where the snapshot says);
      // the check reads them all, as the history backfill or a start without it would.
      try {
        for (const r of walkSkipped(journalPath, data, scan.skipped))
          if (r.seq > afterSeq) take(r.command);
      } catch (e) {
        if (afterSeq < scan.skipped.seq) {
          problems.push(message(e));
          decodable = false;
        } else {
          coveredDamage ??= message(e);
          notes.push(
            `${message(e)}: a start from the snapshot does not read it, but the history backfill is abandoned if it has no read-model checkpoint to load, and a start without that snapshot (or with --no-snapshots) fails`,
          );
        }
      }
    }
    for (let i = 0; i < scan.offsets.length && decodable; i++) {
      const seq = scan.firstSeq + i;
      try {
        const record = decodeFrame(journalPath, data, scan.offsets[i] as number);
        if (seq > afterSeq) take(record.command);
      } catch (e) {
        if (seq > afterSeq) {
          problems.push(message(e));
          decodable = false;
        } else {
          coveredDamage ??= message(e);
          notes.push(
            `${message(e)}: the snapshot covers it, so a start goes on, but the history backfill is abandoned, and a start without that snapshot (or with --no-snapshots) fails`,
          );
        }
      }
    }
    reduceBatch();
    let replayable = decodable;
    if (decodable) {
      try {
        const line = rules.finish(options.replayUnderNewRules === true);
        if (line !== null) notes.push(`a start logs: ${line}`);
      } catch (e) {
        problems.push(message(e));
        replayable = false;
      }
      let readModels = used === null ? null : readModelsOf(root, used, startSeq);
      if (readModels?.source === 'journal' && readModels.from === undefined && startSeq > 1) {
        readModels = { ...readModels, archived: true };
        notes.push(
          `a start's history backfill is abandoned (${readModels.reason}, and the journal records it would re-reduce are archived): the read models keep only what follows the snapshot`,
        );
      }
      // What --archive-journal would move: the records before the snapshot's, when its
      // checkpoint holds their history.
      const keepAt =
        scan.skipped?.seq === afterSeq
          ? scan.skipped.position.offset
          : scan.skipped === undefined
            ? scan.offsets[afterSeq - scan.firstSeq]
            : undefined;
      if (readModels?.source === 'checkpoint' && afterSeq > startSeq && keepAt !== undefined)
        notes.push(
          coveredDamage === null
            ? `--archive-journal (with the venue stopped) would move records ${startSeq}..${afterSeq - 1} (${keepAt} bytes) out of ${journalPath}`
            : `--archive-journal would refuse to move records ${startSeq}..${afterSeq - 1} out of ${journalPath}: one of them is damaged (above), and an archive would keep the damage for good`,
        );
      recovery = {
        snapshot: used?.path ?? null,
        snapshotSeq: afterSeq,
        readModels,
        replayRecords,
        replayFirstSeq: afterSeq + 1,
        replayLastSeq: lastSeq ?? afterSeq,
      };
    }
    if (options.replay === true && replayable) {
      const failure = replayFailed as { error: unknown } | null;
      try {
        if (failure !== null) throw failure.error;
        const replayed: EngineState = state ?? createEngineState({}, 0);
        replay = {
          seq: lastSeq ?? 0,
          hash: stateHash(replayed, stateKeccak()),
          rulesVersion: replayed.rulesVersion,
        };
        // The config's instruments against the replayed venue, as the start checks them: one
        // the start would refuse is a problem, a listed one the config differs from a note.
        try {
          const plan = planConfigInstruments(options.config ?? DEFAULT_CONFIG, replayed);
          notes.push(...plan.differences);
        } catch (e) {
          if (!(e instanceof StartupError)) throw e;
          problems.push(e.message);
        }
      } catch (e) {
        problems.push(
          `replaying the journal failed: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}`,
        );
      }
    }
  }

  if (fd !== null) closeSync(fd);

  // ---- each snapshot file -----------------------------------------------------------------
  const snapshots = files.map((f): SnapshotFileReport => {
    let rules: number | null | undefined;
    try {
      rules = readSnapshotHeader(f.path)?.rules;
    } catch {
      rules = undefined;
    }
    const base = {
      file: f.path,
      seq: f.seq,
      bytes: sizeOf(f.path),
      ...(rules === undefined ? {} : { rules }),
      pastJournal: lastSeq !== null && f.seq > lastSeq,
    };
    const valid = (s: LoadedSnapshot) => ({
      hash: s.hash,
      ...(s.convertedFrom === undefined ? {} : { convertedFrom: s.convertedFrom }),
    });
    if (covering !== null && f.path === covering.path) {
      const status = behind ? 'ahead' : used === covering ? 'used' : 'valid';
      return { ...base, status, ...valid(covering) };
    }
    const reason = skipped.get(f.path);
    if (reason !== undefined) return { ...base, status: 'skipped', reason };
    // Older than the one a start uses: it never reads them, but they are its fallbacks.
    try {
      return { ...base, status: 'valid', ...valid(readSnapshotFile(f.path)) };
    } catch (e) {
      return { ...base, status: 'invalid', reason: message(e) };
    }
  });

  // ---- chain.json -------------------------------------------------------------------------
  let chainFile: FileReport = { file: chainPath, present: false };
  if (existsSync(chainPath)) {
    try {
      const config = options.config ?? DEFAULT_CONFIG;
      restoreChain(
        chainPath,
        readChainFile(chainPath),
        simulatedChainOptions(config, signingContextOf(config), () => Date.now()),
      );
      chainFile = { file: chainPath, present: true };
    } catch (e) {
      // The start's own refusals name the file already.
      const error = e instanceof StartupError ? e.message : `${chainPath}: ${message(e)}`;
      problems.push(error);
      chainFile = { file: chainPath, present: true, error };
    }
  } else {
    notes.push(
      `${chainPath} is absent: the simulated chain starts empty (no token balances, an empty vault)`,
    );
  }

  return {
    dir: root,
    ok: problems.length === 0,
    problems,
    notes,
    journal: {
      file: journalPath,
      present,
      bytes: sizeOf(journalPath),
      records: frames === null ? null : frames.firstSeq - firstOf(frames) + frames.offsets.length,
      firstSeq:
        frames === null || (frames.offsets.length === 0 && frames.skipped === undefined)
          ? null
          : firstOf(frames),
      lastSeq:
        frames === null || (frames.offsets.length === 0 && frames.skipped === undefined)
          ? null
          : lastSeq,
      validBytes: frames?.validLength ?? null,
      tornTail:
        frames === null || frames.tornBytes === 0
          ? null
          : { offset: frames.validLength, bytes: frames.tornBytes },
    },
    snapshots,
    recovery,
    venueFile,
    chainFile,
    lock: { file: lockPath, state: lock.state },
    ...(replay === undefined ? {} : { replay }),
  };
}

const STATUS_TEXT: Record<SnapshotFileReport['status'], string> = {
  used: 'valid, a start recovers from it',
  valid: 'valid, not used',
  skipped: 'a start skips it',
  invalid: 'damaged; a start does not read it (a newer one is used)',
  ahead: 'valid, but past the journal: a start stops',
};

/** The report as text for an operator: the verdict first, then each file. */
export function formatDataDirReport(report: DataDirReport): string {
  const out: string[] = [];
  out.push(
    `data directory ${report.dir}: ${report.ok ? 'a start would succeed' : 'a start would FAIL'}`,
  );
  for (const p of report.problems) out.push(`  problem: ${p}`);
  const j = report.journal;
  out.push(`journal ${j.file}`);
  if (!j.present) out.push('  absent');
  else if (j.records === null) out.push(`  ${j.bytes} bytes, damaged (see the problem above)`);
  else {
    const range = j.records === 0 ? 'no record' : `seq ${j.firstSeq}..${j.lastSeq}`;
    out.push(`  ${j.records} record${j.records === 1 ? '' : 's'} (${range}), ${j.bytes} bytes`);
    out.push(
      j.tornTail === null
        ? '  ends cleanly'
        : `  torn tail: ${j.tornTail.bytes} bytes at offset ${j.tornTail.offset}${report.recovery === null ? '' : ', which a start cuts (never acknowledged)'}`,
    );
  }
  out.push(`snapshots (${report.snapshots.length})`);
  for (const s of report.snapshots) {
    const rules =
      s.rules === undefined ? 'rules ?' : `rules ${s.rules === null ? 'none' : s.rules}`;
    const converted =
      s.convertedFrom === undefined
        ? ''
        : `, converted from version ${s.convertedFrom} to ${SNAPSHOT_VERSION} on reading`;
    const past = s.pastJournal && s.status !== 'ahead' ? ', past the journal' : '';
    out.push(
      `  ${s.file.slice(s.file.lastIndexOf('/') + 1)}  seq ${s.seq}  ${rules}  ${s.bytes} bytes  ${STATUS_TEXT[s.status]}${converted}${past}`,
    );
    if (s.reason !== undefined) out.push(`    ${s.reason}`);
    else if (s.status === 'used') out.push(`    state hash ${s.hash}`);
  }
  const r = report.recovery;
  if (r !== null) {
    const records = `${r.replayRecords} journal records${r.replayRecords === 0 ? '' : ` (seq ${r.replayFirstSeq}..${r.replayLastSeq})`}`;
    out.push(
      r.snapshot === null
        ? `recovery: a full replay of ${records}`
        : `recovery: the snapshot at seq ${r.snapshotSeq}, then ${records}`,
    );
    if (r.readModels !== null)
      out.push(
        r.readModels.source === 'checkpoint'
          ? `read models before the snapshot: loaded in the background from ${r.readModels.file}`
          : r.readModels.archived === true
            ? `read models before the snapshot: not rebuilt, the journal records before it are archived (no checkpoint used: ${r.readModels.reason})`
            : `read models before the snapshot: rebuilt in the background from the journal${r.readModels.from === undefined ? '' : ` after seq ${r.readModels.from.seq}, from the read models loaded from ${r.readModels.from.file}`} (no checkpoint used: ${r.readModels.reason})`,
      );
  }
  const file = (f: FileReport) =>
    `${f.file.slice(f.file.lastIndexOf('/') + 1)}: ${!f.present ? 'absent' : f.error === undefined ? 'ok' : 'REFUSED'}`;
  out.push(file(report.venueFile));
  out.push(file(report.chainFile));
  out.push(`LOCK: ${report.lock.state}`);
  if (report.replay !== undefined)
    out.push(
      `replayed: seq ${report.replay.seq}, state hash ${report.replay.hash}, rules ${report.replay.rulesVersion ?? 'none'} (compare GET /api/admin/state-hash taken at that seq)`,
    );
  for (const n of report.notes) out.push(`note: ${n}`);
  return `${out.join('\n')}\n`;
}

/** The first record's seq of a journal file (records a start skipped included). */
function firstOf(frames: FrameScan): number {
  return frames.skipped === undefined ? frames.firstSeq : frames.skipped.first;
}

/** How much of the journal a start scans: after the snapshot's position, or all of it and why. */
function journalScanNote(
  scan: FrameScan,
  covering: LoadedSnapshot | null,
  startSeq: number,
): string {
  if (scan.skipped !== undefined)
    return `a start checks record ${scan.skipped.seq} at byte ${scan.skipped.position.offset} (the position ${covering?.path ?? 'the snapshot'} recorded) and scans only the journal after it (${scan.offsets.length} records)`;
  const why =
    covering === null
      ? 'there is no valid snapshot'
      : covering.journal === undefined
        ? `${covering.path} records no journal position (written by an older build)`
        : `record ${covering.seq} is not at the position ${covering.path} recorded (byte ${covering.journal.offset})${startSeq > 1 ? ', as after an archive of the records before it' : ''}`;
  return `a start scans the whole journal: ${why}`;
}
