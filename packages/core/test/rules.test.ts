/**
 * Engine rules versions: `declareRules` records the rules a log was written under, and
 * `foreignRules` finds the commands a replay by this build would reduce under other rules than
 * the ones they were reduced under (a host refuses to replay them unless told to).
 */
import { fc, test } from '@fast-check/vitest';
import { describe, expect, it } from 'vitest';
import {
  type Command,
  decodeSnapshot,
  ENGINE_RULES_VERSION,
  type EngineEvent,
  encodeSnapshot,
  foreignRules,
  type Outcome,
  reduce,
  stateHash,
} from '../src/index.js';
import { TestVenue, wallet } from '../src/testing/index.js';

const E = ENGINE_RULES_VERSION;
const outcome = (events: readonly EngineEvent[]): Outcome =>
  events.find((e): e is Outcome => e.type === 'outcome')!;

describe('declareRules', () => {
  it('records the declared version in the state, its hash and its snapshot', () => {
    const v = new TestVenue({ checkPurity: true });
    expect(v.state.rulesVersion).toBeNull();
    const before = stateHash(v.state);
    expect(outcome(v.run({ type: 'declareRules', version: 7 }))).toEqual({
      type: 'outcome',
      ok: true,
      kind: 'done',
    });
    expect(v.state.rulesVersion).toBe(7);
    expect(stateHash(v.state)).not.toBe(before);
    v.open(wallet(1));
    expect(v.state.rulesVersion).toBe(7);
    expect(decodeSnapshot(encodeSnapshot(v.state)).rulesVersion).toBe(7);
    v.run({ type: 'declareRules', version: E, replayed: 3 });
    expect(v.state.rulesVersion).toBe(E);
  });

  it('refuses a version that is not a positive whole number and changes nothing', () => {
    const v = new TestVenue();
    v.run({ type: 'declareRules', version: 3 });
    const cases: [unknown, string][] = [
      [0, 'version must be a positive whole number, not 0'],
      [-2, 'version must be a positive whole number, not -2'],
      [1.5, 'version must be a safe integer, not 1.5'],
      ['2', 'version must be a safe integer, not a string'],
    ];
    for (const [version, message] of cases) {
      const cmd = { type: 'declareRules', time: v.time + 1, version } as unknown as Command;
      const r = reduce(v.state, cmd);
      const o = outcome(r.events);
      expect(o.ok).toBe(false);
      expect(o).toMatchObject({ code: 4000 });
      expect((o as { message: string }).message).toContain(message);
      expect(r.state.rulesVersion).toBe(3);
    }
    for (const [replayed, message] of [
      [true, 'replayed must be a safe integer, not a boolean'],
      [-1, 'replayed must not be negative, not -1'],
    ] as const) {
      const bad = { type: 'declareRules', time: v.time + 1, version: 2, replayed };
      const o = outcome(reduce(v.state, bad as unknown as Command).events);
      expect(o).toMatchObject({ ok: false, code: 4000 });
      expect((o as { message: string }).message).toContain(message);
    }
  });
});

const t = 1;
const cmd: Command = { type: 'tick', time: t };
const declare = (version: number, replayed?: number): Command =>
  replayed === undefined
    ? { type: 'declareRules', time: t, version }
    : { type: 'declareRules', time: t, version, replayed };

describe('foreignRules', () => {
  it('finds the commands declared under other rules, not those before any declaration', () => {
    expect(foreignRules(null, [cmd, cmd])).toBeNull();
    expect(foreignRules(E, [cmd, declare(E + 1), cmd, cmd, declare(E), cmd])).toEqual({
      first: 2,
      last: 3,
      version: E + 1,
      versions: [E + 1],
    });
    // From the state before the commands; a later declaration of this build does not absolve them.
    expect(foreignRules(E + 2, [cmd, declare(E), cmd])).toEqual({
      first: 0,
      last: 0,
      version: E + 2,
      versions: [E + 2],
    });
    // A later run under other rules extends the range; every version is named.
    expect(foreignRules(E + 1, [cmd, declare(E), cmd, declare(E + 3), cmd, cmd])).toEqual({
      first: 0,
      last: 5,
      version: E + 1,
      versions: [E + 1, E + 3],
    });
    expect(foreignRules(E, [declare(E + 1)])).toBeNull();
  });

  it('counts the commands a replayed declaration names as reduced under its version', () => {
    // Replayed under this build's rules: accepted.
    expect(foreignRules(E + 1, [cmd, cmd, declare(E, 2), cmd])).toBeNull();
    // Only the ones it names: the first was in the state the replay started from.
    expect(foreignRules(E + 1, [cmd, cmd, cmd, declare(E, 2), cmd])).toEqual({
      first: 0,
      last: 0,
      version: E + 1,
      versions: [E + 1],
    });
    // Declarations among them count as positions, not as commands.
    expect(foreignRules(E + 1, [cmd, declare(E + 1), cmd, declare(E, 2), cmd])).toEqual({
      first: 0,
      last: 0,
      version: E + 1,
      versions: [E + 1],
    });
    // Replayed under other rules: the commands it names are theirs, undeclared ones included.
    expect(foreignRules(null, [cmd, declare(E), cmd, declare(E + 1, 9)])).toEqual({
      first: 0,
      last: 2,
      version: E + 1,
      versions: [E + 1],
    });
    // Foreign again after an accepted replay.
    expect(foreignRules(E + 1, [cmd, declare(E, 1), cmd, declare(E + 4), cmd])).toEqual({
      first: 4,
      last: 4,
      version: E + 4,
      versions: [E + 4],
    });
  });

  /** The rule stated plainly: every command's effective version, rewritten by replays. */
  function reference(declared: number | null, log: readonly Command[]) {
    const versions: (number | null)[] = [];
    let current = declared;
    log.forEach((c, i) => {
      versions.push(current);
      if (c.type !== 'declareRules') return;
      current = c.version;
      for (let j = Math.max(0, i - (c.replayed ?? 0)); j < i; j++) versions[j] = c.version;
    });
    const foreign = versions
      .map((v, i) => ({ v, i }))
      .filter(({ v, i }) => log[i]?.type !== 'declareRules' && v !== null && v !== E);
    if (foreign.length === 0) return null;
    const first = foreign[0]!;
    return {
      first: first.i,
      last: foreign[foreign.length - 1]!.i,
      version: first.v,
      versions: [...new Set(foreign.map((f) => f.v))],
    };
  }

  const version = fc.constantFrom(E, E + 1, E + 2);
  const entry = fc.oneof(
    { weight: 3, arbitrary: fc.constant(cmd) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(version, fc.option(fc.nat(45), { nil: undefined }))
        .map(([v, replayed]) => declare(v, replayed)),
    },
  );

  test.prop([fc.option(version, { nil: null }), fc.array(entry, { maxLength: 40 })])(
    'agrees with the plain statement of the rule',
    (declared, log) => {
      expect(foreignRules(declared, log)).toEqual(reference(declared, log));
    },
  );
});
