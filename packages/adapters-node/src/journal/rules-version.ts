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
import { type Command, ENGINE_RULES_VERSION, foreignRules } from '@perp/core';

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
  const foreign = foreignRules(declared, records);
  if (foreign === null) return null;
  const error = new RulesVersionMismatchError(
    journal,
    foreign.versions,
    firstSeq + foreign.first,
    firstSeq + foreign.last,
    records.slice(foreign.last + 1).some((c) => c.type !== 'declareRules'),
  );
  if (!allow) throw error;
  return `replaying journal records ${error.firstSeq}..${error.lastSeq}, which include records written under engine rules ${foreign.versions.join(' and ')}, under rules ${ENGINE_RULES_VERSION} (--replay-under-new-rules): their outcomes may differ from those acknowledged`;
}
