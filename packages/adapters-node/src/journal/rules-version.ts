/**
 * Which engine rules a journal's records were written under (core `declareRules`), checked before
 * a start-up replay. The core is deterministic for one build; an upgrade that changes a rule can
 * make old records reduce differently, so replaying them could change outcomes clients were
 * given. A venue therefore journals a declaration whenever a build with other rules opens the
 * journal, writes a snapshot at a clean stop (so an upgrade finds no tail to replay), keeps the
 * newest snapshot of every older rules version, and refuses to replay records of other rules
 * unless told to (docs/durability.md, "Upgrades").
 *
 * @module
 */
import {
  type Command,
  ENGINE_RULES_VERSION,
  ForeignRulesScan,
  type JournalStore,
} from '@perp/core';

/** Start-up found journal records written under other engine rules than this build's. */
export class RulesVersionMismatchError extends Error {
  override readonly name = 'RulesVersionMismatchError';
  /** The rules the first such record was written under. */
  readonly version: number;
  /** Every such rules version, in order. */
  readonly versions: readonly number[];
  readonly firstSeq: number;
  readonly lastSeq: number;

  constructor(
    journal: string,
    versions: readonly number[],
    firstSeq: number,
    lastSeq: number,
    /** Whether commands of other rules follow them (then the old build cannot replay them all). */
    laterRecords: boolean,
  ) {
    const named = versions.join(' and ');
    const one = versions.length === 1 ? versions[0] : undefined;
    // The old build can only help when nothing after those records was written by another.
    const why =
      one === undefined
        ? 'They were written by builds with different rules'
        : 'Records after them were written by another build';
    const remedy =
      one !== undefined && !laterRecords
        ? `Start the build with rules ${one} on this data directory and stop it with SIGTERM (a clean stop writes a snapshot, so nothing is left to replay), then start this build; or start this build with --replay-under-new-rules to replay them under its rules anyway`
        : `${why}, so no single build replays them all as they were: restore a snapshot taken at or after seq ${lastSeq} (the venue keeps the newest snapshot of each older rules version; check the log above for damaged ones), or start this build with --replay-under-new-rules to replay them under its rules anyway`;
    super(
      `${journal}: records ${firstSeq}..${lastSeq} include records written under engine rules ${named} that would be replayed under rules ${ENGINE_RULES_VERSION} (this build), which can change their outcomes. ${remedy}`,
    );
    this.version = versions[0] as number;
    this.versions = versions;
    this.firstSeq = firstSeq;
    this.lastSeq = lastSeq;
  }
}

/**
 * Follows the records a start-up replays, command by command (`firstSeq` is the seq of the
 * first), after a state that declared `declared`, and says at the end whether some were written
 * under other rules (see {@link finish}).
 */
export class ReplayRulesCheck {
  private readonly scan: ForeignRulesScan;
  private readonly journal: string;
  private readonly firstSeq: number;
  private count = 0;
  /** Position of the last command that is not a declaration. */
  private lastCommand = -1;

  constructor(journal: string, declared: number | null, firstSeq: number) {
    this.journal = journal;
    this.firstSeq = firstSeq;
    this.scan = new ForeignRulesScan(declared);
  }

  /** Takes the next record's command. */
  add(c: Command): void {
    this.scan.add(c);
    if (c.type !== 'declareRules') this.lastCommand = this.count;
    this.count++;
  }

  /** Whether a command taken so far counts as other rules' (a later declaration may change it). */
  get foreignSoFar(): boolean {
    return this.scan.result() !== null;
  }

  /**
   * Throws {@link RulesVersionMismatchError} when some records were written under other rules,
   * unless `allow`; then returns a log line saying so (else `null`).
   */
  finish(allow: boolean): string | null {
    const foreign = this.scan.result();
    if (foreign === null) return null;
    const error = new RulesVersionMismatchError(
      this.journal,
      foreign.versions,
      this.firstSeq + foreign.first,
      this.firstSeq + foreign.last,
      this.lastCommand > foreign.last,
    );
    if (!allow) throw error;
    return `replaying journal records ${error.firstSeq}..${error.lastSeq}, which include records written under engine rules ${foreign.versions.join(' and ')}, under rules ${ENGINE_RULES_VERSION} (--replay-under-new-rules): their outcomes may differ from those acknowledged`;
  }
}

/**
 * Checks the records a start-up is about to replay (`firstSeq` is the seq of `records[0]`) after
 * a state that declared `declared`. Throws {@link RulesVersionMismatchError} when some were
 * written under other rules, unless `allow`; then returns a log line saying so (else `null`).
 */
export function checkReplayRules(
  journal: string,
  declared: number | null,
  records: readonly Command[],
  firstSeq: number,
  allow: boolean,
): string | null {
  const check = new ReplayRulesCheck(journal, declared, firstSeq);
  for (const c of records) check.add(c);
  return check.finish(allow);
}

/**
 * Commands a start-up replays per `replay` call of the host; the history backfill and `--check
 * --replay` cut their batches the same way.
 */
export const REPLAY_BATCH_RECORDS = 4096;

/**
 * Replays the journal's records after `afterSeq` into `replay` in batches, one batch in memory at
 * a time (a full replay of a long journal never holds all its commands), with the rules check of
 * {@link ReplayRulesCheck}. Records that look written under other rules stop the replay: unless
 * `allow`, the rest is only read for the check, which then throws its error with the full
 * extent; when a later declaration turns out to cover them (or with `allow`), the replay
 * continues from where it stopped. A later declaration can also show records already replayed
 * to be of other rules (its `replayed` count reaches back): the check still refuses, and a
 * replay that failed on such records reports the check's refusal, not its own error. Returns the
 * records replayed and the check's log line.
 */
export async function replayJournal(
  journal: Pick<JournalStore, 'read'>,
  afterSeq: number,
  replay: (commands: Command[]) => void,
  rules: { readonly journal: string; readonly declared: number | null; readonly allow: boolean },
): Promise<{ replayed: number; underNewRules: string | null }> {
  const check = new ReplayRulesCheck(rules.journal, rules.declared, afterSeq + 1);
  let batch: Command[] = [];
  let replayed = 0;
  const flush = () => {
    if (batch.length === 0) return;
    replay(batch);
    replayed += batch.length;
    batch = [];
  };
  /** Seq of the last record replayed while the check had found nothing. */
  let replayedTo = afterSeq;
  let held = false;
  /** A replay that failed before the check was complete: the check's refusal explains it first. */
  let failed: { error: unknown } | null = null;
  for await (const r of journal.read(afterSeq)) {
    check.add(r.command);
    if (!held && !rules.allow && check.foreignSoFar) held = true;
    if (held) continue;
    batch.push(r.command);
    replayedTo = r.seq;
    if (batch.length === REPLAY_BATCH_RECORDS) {
      try {
        flush();
      } catch (error) {
        failed = { error };
        held = true;
      }
    }
  }
  if (!held) flush();
  const underNewRules = check.finish(rules.allow);
  if (failed !== null) throw failed.error;
  if (held) {
    // A later declaration covered the records that looked foreign: replay the rest, after the
    // records of `batch` (read before them, not replayed yet).
    for await (const r of journal.read(replayedTo)) {
      batch.push(r.command);
      if (batch.length === REPLAY_BATCH_RECORDS) flush();
    }
    flush();
  }
  return { replayed, underNewRules };
}
