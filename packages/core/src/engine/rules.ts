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
 * model tests hold to the old results). `test/rules-fingerprint.test.ts` pins what three fixed
 * logs give under each version and fails when that changes.
 */
export const ENGINE_RULES_VERSION = 1;

/** `declareRules`: records the version; the commands after it were written under it. */
export function declareRules(ctx: Ctx, cmd: DeclareRulesCommand): void {
  if (cmd.version < 1) {
    const r = reject(
      'INVALID_REQUEST',
      `version must be a positive whole number, not ${cmd.version}`,
    );
    return ctx.fail(r.code, r.message);
  }
  ctx.state.rulesVersion = cmd.version;
  ctx.emit({ type: 'outcome', ok: true, kind: 'done' });
}

/** A run of commands declared under rules other than this build's. */
export interface ForeignRules {
  /** Index of the first such command in the list given. */
  readonly first: number;
  /** Index of the last such command. */
  readonly last: number;
  /** The rules the first of them was declared under. */
  readonly version: number;
}

/**
 * Follows a replay command by command and finds the commands this build would reduce under rules
 * other than the ones they were reduced under when their outcomes were given (see
 * {@link foreignRules}). For logs read in pieces; positions count every command added.
 */
export class ForeignRulesScan {
  private current: number | null;
  private count = 0;
  /** First and last command (declarations aside) added so far. */
  private firstCommand = -1;
  private lastCommand = -1;
  private first = -1;
  private last = -1;
  private version = 0;

  /** `declared`: the version declared before the first command (`state.rulesVersion`). */
  constructor(declared: number | null) {
    this.current = declared;
  }

  /** Takes the next command of the log. */
  add(c: Command): void {
    const i = this.count++;
    if (c.type !== 'declareRules') {
      if (this.firstCommand < 0) this.firstCommand = i;
      this.lastCommand = i;
      if (this.current === null || this.current === ENGINE_RULES_VERSION) return;
      if (this.first < 0) {
        this.first = i;
        this.version = this.current;
      }
      this.last = i;
      return;
    }
    this.current = c.version;
    if (c.replayed !== true) return;
    // Everything before it was reduced again under its version.
    if (c.version === ENGINE_RULES_VERSION || this.firstCommand < 0) {
      this.first = -1;
    } else {
      this.first = this.firstCommand;
      this.last = this.lastCommand;
      this.version = c.version;
    }
  }

  /** The foreign commands among those added so far, or `null`. */
  result(): ForeignRules | null {
    return this.first < 0 ? null : { first: this.first, last: this.last, version: this.version };
  }
}

/**
 * The commands of `commands` a replay by this build would reduce under rules other than the ones
 * they were reduced under when their outcomes were given, given the version declared before them
 * (`state.rulesVersion` of the state they follow): the first and last such command and the
 * version of the first, or `null` when there is none. Commands before any declaration (`null`: a
 * log from before declarations existed) are not counted: nothing says which rules wrote them. A
 * declaration marked `replayed` says the commands before it were reduced again under its
 * version, so they count as that version's.
 */
export function foreignRules(
  declared: number | null,
  commands: readonly Command[],
): ForeignRules | null {
  const scan = new ForeignRulesScan(declared);
  for (const c of commands) scan.add(c);
  return scan.result();
}
