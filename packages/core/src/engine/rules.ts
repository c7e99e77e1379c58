/**
 * Engine rules versions. The core is deterministic for one build: the same command log gives the
 * same state and events. A change of rules (a new margin check, a different rounding) can make an
 * old log reduce differently, so a host that replays a journal must know which rules wrote it:
 * each build has a rules version, the log declares the version it was written under
 * (`declareRules`), and {@link foreignRules} finds the commands a replay would reduce under
 * rules they were not written with.
 *
 * @module
 */
import { reject } from '../errors.js';
import type { Command, DeclareRulesCommand } from './commands.js';
import type { Ctx } from './context.js';

/**
 * The rules version of this build. Bump it with any change that can make the same command log
 * reduce to another state or other events (not for pure speed-ups, which the determinism and
 * model tests hold to the old results). `test/rules-fingerprint.test.ts` pins what four fixed
 * logs give under each version and fails when that changes.
 */
export const ENGINE_RULES_VERSION = 10;

/** `declareRules`: records the version; the commands after it were written under it. */
export function declareRules(ctx: Ctx, cmd: DeclareRulesCommand): void {
  if (cmd.version < 1) {
    const r = reject(
      'INVALID_REQUEST',
      `version must be a positive whole number, not ${cmd.version}`,
    );
    return ctx.fail(r.code, r.message);
  }
  if (cmd.replayed !== undefined && cmd.replayed < 0) {
    const r = reject('INVALID_REQUEST', `replayed must not be negative, not ${cmd.replayed}`);
    return ctx.fail(r.code, r.message);
  }
  ctx.state.rulesVersion = cmd.version;
  ctx.emit({ type: 'outcome', ok: true, kind: 'done' });
}

/** The commands of a log a replay by this build would reduce under other rules. */
export interface ForeignRules {
  /** Index of the first such command in the list given. */
  readonly first: number;
  /** Index of the last such command; commands between the two may be of this build's rules. */
  readonly last: number;
  /** The rules the first of them was reduced under. */
  readonly version: number;
  /** Every such version, in order of first appearance. */
  readonly versions: readonly number[];
}

/** Consecutive commands reduced under one version other than this build's. */
interface Run {
  first: number;
  last: number;
  readonly version: number;
}

/**
 * Follows a replay command by command and finds the commands this build would reduce under rules
 * other than the ones they were reduced under when their outcomes were given (see
 * {@link foreignRules}). For logs read in pieces; positions count every command added,
 * declarations included.
 */
export class ForeignRulesScan {
  private current: number | null;
  private count = 0;
  /** Positions of the declarations added (few: one per start of a build with other rules). */
  private readonly declarations: number[] = [];
  private lastCommand = -1;
  private readonly runs: Run[] = [];
  /** The run the next foreign command extends (none after a declaration). */
  private open: Run | null = null;

  /** `declared`: the version declared before the first command (`state.rulesVersion`). */
  constructor(declared: number | null) {
    this.current = declared;
  }

  /** Takes the next command of the log. */
  add(c: Command): void {
    const i = this.count++;
    if (c.type !== 'declareRules') {
      this.lastCommand = i;
      if (this.current === null || this.current === ENGINE_RULES_VERSION) return;
      if (this.open === null) {
        this.open = { first: i, last: i, version: this.current };
        this.runs.push(this.open);
      } else this.open.last = i;
      return;
    }
    this.declarations.push(i);
    this.open = null;
    this.current = c.version;
    if (c.replayed === undefined || c.replayed === 0) return;
    // The commands in [from, i) were reduced again under its version: they count as its.
    const from = Math.max(0, i - c.replayed);
    while (this.runs.length > 0 && (this.runs[this.runs.length - 1] as Run).first >= from)
      this.runs.pop();
    const cut = this.runs[this.runs.length - 1];
    if (cut !== undefined && cut.last >= from) cut.last = this.commandAtOrBefore(from - 1);
    if (c.version === ENGINE_RULES_VERSION) return;
    const first = this.commandAtOrAfter(from, i);
    if (first >= 0) this.runs.push({ first, last: this.lastCommand, version: c.version });
  }

  /** The foreign commands among those added so far, or `null`. */
  result(): ForeignRules | null {
    const head = this.runs[0];
    const tail = this.runs[this.runs.length - 1];
    if (head === undefined || tail === undefined) return null;
    const versions: number[] = [];
    for (const r of this.runs) if (!versions.includes(r.version)) versions.push(r.version);
    return { first: head.first, last: tail.last, version: head.version, versions };
  }

  private isDeclaration(position: number): boolean {
    return this.declarations.includes(position);
  }

  /** The last command (not a declaration) at or before `position`, or -1. */
  private commandAtOrBefore(position: number): number {
    let p = position;
    while (p >= 0 && this.isDeclaration(p)) p--;
    return p;
  }

  /** The first command (not a declaration) at or after `position` and before `end`, or -1. */
  private commandAtOrAfter(position: number, end: number): number {
    let p = position;
    while (p < end && this.isDeclaration(p)) p++;
    return p < end ? p : -1;
  }
}

/**
 * The commands of `commands` a replay by this build would reduce under rules other than the ones
 * they were reduced under when their outcomes were given, given the version declared before them
 * (`state.rulesVersion` of the state they follow): the first and last such command, the version
 * of the first and every version among them, or `null` when there is none. Commands before any
 * declaration (`null`: a log from before declarations existed) are not counted: nothing says which
 * rules wrote them. A declaration with `replayed: n` says the n commands right before it
 * (declarations included) were reduced again under its version (a host that replayed them under
 * new rules because the operator said so), so they count as that version's; the commands before
 * those keep their own.
 */
export function foreignRules(
  declared: number | null,
  commands: readonly Command[],
): ForeignRules | null {
  const scan = new ForeignRulesScan(declared);
  for (const c of commands) scan.add(c);
  return scan.result();
}
