/**
 * `replayJournal`, the start-up replay that holds one batch at a time: it decides what the
 * whole-list check (`checkReplayRules`) decides on any log of commands and rules declarations,
 * replays every record once and in order when the check passes, never replays a record the
 * check would refuse, and reads the journal as it replays.
 */
import { type Command, ENGINE_RULES_VERSION, type JournalRecord } from '@perp/core';
import { wallet } from '@perp/core/testing';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { checkReplayRules, replayJournal } from './rules-version.js';

const E = ENGINE_RULES_VERSION;

/** A log entry: a plain command, or a declaration of `version` that replayed `replayed` before it. */
type Entry = { kind: 'command' } | { kind: 'declare'; version: number; replayed: number };

const entry: fc.Arbitrary<Entry> = fc.oneof(
  { weight: 6, arbitrary: fc.constant({ kind: 'command' as const }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('declare' as const),
      version: fc.constantFrom(E, E + 1, E + 2),
      replayed: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 12 })),
    }),
  },
);

function commandsOf(entries: readonly Entry[]): Command[] {
  return entries.map(
    (e, i): Command =>
      e.kind === 'command'
        ? { type: 'openAccount', account: wallet(1 + i), time: i }
        : {
            type: 'declareRules',
            version: e.version,
            time: i,
            ...(e.replayed === 0 ? {} : { replayed: e.replayed }),
          },
  );
}

/** A journal of `commands` after `afterSeq` records, logging what was read when. */
function journalOf(commands: readonly Command[], afterSeq: number, events: string[]) {
  return {
    async *read(after: number): AsyncIterable<JournalRecord> {
      for (let i = after - afterSeq; i < commands.length; i++) {
        events.push(`read ${afterSeq + 1 + i}`);
        yield { seq: afterSeq + 1 + i, command: commands[i] as Command };
      }
    },
  };
}

async function outcomeOf(run: () => Promise<unknown> | unknown): Promise<unknown> {
  try {
    return { line: await run() };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

describe('replayJournal', () => {
  it('decides as the whole-list check, and replays every record once, in order, or none it refuses', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(entry, { maxLength: 40 }),
        fc.constantFrom(null, E, E + 1),
        fc.nat({ max: 1_000 }),
        fc.boolean(),
        async (entries, declared, afterSeq, allow) => {
          const commands = commandsOf(entries);
          const rules = { journal: 'j', declared, allow };
          const replayed: Command[] = [];
          const got = await outcomeOf(async () => {
            const r = await replayJournal(
              journalOf(commands, afterSeq, []),
              afterSeq,
              (c) => replayed.push(...c),
              rules,
            );
            expect(r.replayed).toBe(replayed.length);
            return r.underNewRules;
          });
          const want = await outcomeOf(() =>
            checkReplayRules('j', declared, commands, afterSeq + 1, allow),
          );
          expect(got).toEqual(want);
          if ('line' in (want as object)) expect(replayed).toEqual(commands);
          // Refused: what was replayed (in memory, thrown away) is a prefix of the log.
          else expect(replayed).toEqual(commands.slice(0, replayed.length));
        },
      ),
      { numRuns: 1_000 },
    );
  });

  it('reads the journal as it replays: one batch of 4,096 in memory, not the whole journal', async () => {
    const commands = commandsOf(Array.from({ length: 10_000 }, () => ({ kind: 'command' })));
    const events: string[] = [];
    const r = await replayJournal(
      journalOf(commands, 0, events),
      0,
      (c) => events.push(`replay ${c.length}`),
      { journal: 'j', declared: E, allow: false },
    );
    expect(r).toEqual({ replayed: 10_000, underNewRules: null });
    const replays = events.filter((e) => e.startsWith('replay'));
    expect(replays).toEqual(['replay 4096', 'replay 4096', 'replay 1808']);
    // The first batch is replayed before record 4,097 is read.
    expect(events.indexOf('replay 4096')).toBe(events.indexOf('read 4096') + 1);
  });

  it('a replay that fails on records a later declaration shows to be of other rules reports the rules', async () => {
    // Records from before declarations existed, then a declaration saying a build with other
    // rules re-reduced all of them: the first batch is replayed before that is known.
    const entries: Entry[] = Array.from({ length: 5_000 }, () => ({ kind: 'command' }));
    entries.push({ kind: 'declare', version: E + 1, replayed: 5_000 });
    const commands = commandsOf(entries);
    let batches = 0;
    const refusal = await replayJournal(
      journalOf(commands, 0, []),
      0,
      () => {
        batches++;
        throw new Error('an invariant broke');
      },
      { journal: 'j', declared: null, allow: false },
    ).catch((e: unknown) => e);
    expect(batches).toBe(1);
    expect(String(refusal)).toContain(
      `records 1..5000 include records written under engine rules ${E + 1}`,
    );
  });
});
