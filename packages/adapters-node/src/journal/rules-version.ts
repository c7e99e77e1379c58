/**
 * Which engine rules a journal's records were written under (core `declareRules`), checked before
 * a start-up replay. The core is deterministic for one build; an upgrade that changes a rule can
 * make old records reduce differently, so replaying them could change outcomes clients were
 * given. A venue therefore journals a declaration whenever a build with other rules opens the
 * journal, writes a snapshot at a clean stop (so an upgrade finds no tail to replay), and refuses
 * to replay records of other rules unless told to (docs/durability.md, "Upgrades").
 *
 * @module
 */
import { type Command, ENGINE_RULES_VERSION, foreignRules } from '@perp/core';

/** Start-up found journal records written under other engine rules than this build's. */
export class RulesVersionMismatchError extends Error {
  override readonly name = 'RulesVersionMismatchError';
  /** The rules the first such record was written under. */
  readonly version: number;
  readonly firstSeq: number;
  readonly lastSeq: number;

  constructor(journal: string, version: number, firstSeq: number, lastSeq: number) {
    super(
      `${journal}: records ${firstSeq}..${lastSeq} were written under engine rules ${version} and would be replayed under rules ${ENGINE_RULES_VERSION} (this build), which can change their outcomes. Start the build with rules ${version} on this data directory and stop it with SIGTERM (a clean stop writes a snapshot, so nothing is left to replay), then start this build; or start this build with --replay-under-new-rules to replay them under its rules anyway`,
    );
    this.version = version;
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
    foreign.version,
    firstSeq + foreign.first,
    firstSeq + foreign.last,
  );
  if (!allow) throw error;
  return `replaying journal records ${error.firstSeq}..${error.lastSeq}, written under engine rules ${error.version}, under rules ${ENGINE_RULES_VERSION} (--replay-under-new-rules): their outcomes may differ from those acknowledged`;
}
