import type { Command, JournalRecord, OracleCommand } from '@perp/core';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JournalClosedError, MemoryJournal } from './memory-journal.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 200);

const tick = (time: number): Command => ({ type: 'tick', time });

function oracle(time: number, price: bigint): OracleCommand {
  return { type: 'oracle', time, prices: [{ market: 1, price }] };
}

async function collect(records: AsyncIterable<JournalRecord>): Promise<JournalRecord[]> {
  const out: JournalRecord[] = [];
  for await (const record of records) out.push(record);
  return out;
}

describe('MemoryJournal: seq and order', () => {
  it('starts empty at seq 0', async () => {
    const journal = new MemoryJournal();
    expect(journal.lastSeq).toBe(0);
    expect(await collect(journal.read())).toEqual([]);
  });

  it('numbers records 1, 2, 3 without gaps across appends and resolves with the last seq', async () => {
    const journal = new MemoryJournal();
    expect(await journal.append([tick(10), tick(11)])).toBe(2);
    expect(await journal.append([tick(12)])).toBe(3);
    expect(journal.lastSeq).toBe(3);
    expect(await collect(journal.read())).toEqual([
      { seq: 1, command: tick(10) },
      { seq: 2, command: tick(11) },
      { seq: 3, command: tick(12) },
    ]);
  });

  it('treats an empty append as a no-op that resolves with the current last seq', async () => {
    const journal = new MemoryJournal();
    await journal.append([tick(1)]);
    expect(await journal.append([])).toBe(1);
    expect(journal.lastSeq).toBe(1);
  });

  it('reads only the records after afterSeq, in order', async () => {
    const journal = new MemoryJournal();
    await journal.append([tick(1), tick(2), tick(3), tick(4)]);
    expect((await collect(journal.read(2))).map((r) => r.seq)).toEqual([3, 4]);
    expect((await collect(journal.read(0))).map((r) => r.seq)).toEqual([1, 2, 3, 4]);
    expect(await collect(journal.read(4))).toEqual([]);
    expect(await collect(journal.read(99))).toEqual([]);
  });

  it('refuses an afterSeq that is not a non-negative integer', () => {
    const journal = new MemoryJournal();
    for (const bad of [-1, 0.5, Number.NaN, Number.POSITIVE_INFINITY]) {
      expect(() => journal.read(bad)).toThrow(RangeError);
    }
  });

  it('reads the records present when read was called, not those appended while iterating', async () => {
    const journal = new MemoryJournal();
    await journal.append([tick(1), tick(2)]);
    const seen: number[] = [];
    for await (const record of journal.read()) {
      seen.push(record.seq);
      await journal.append([tick(100 + record.seq)]);
    }
    expect(seen).toEqual([1, 2]);
    expect(journal.lastSeq).toBe(4);
  });

  it('keeps seqs gapless and commands in order over random batches (property)', async () => {
    const command = fc.oneof(
      fc.nat().map(tick),
      fc.tuple(fc.nat(), fc.bigInt({ min: 0n, max: 10n ** 30n })).map(([t, p]) => oracle(t, p)),
    );
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.array(command, { maxLength: 5 }), { maxLength: 10 }),
        fc.nat({ max: 60 }),
        async (batches, afterSeq) => {
          const journal = new MemoryJournal();
          const all: Command[] = [];
          for (const batch of batches) {
            all.push(...batch);
            expect(await journal.append(batch)).toBe(all.length);
          }
          const records = await collect(journal.read());
          expect(records.map((r) => r.seq)).toEqual(all.map((_c, i) => i + 1));
          expect(records.map((r) => r.command)).toEqual(all);
          expect(await collect(journal.read(afterSeq))).toEqual(records.slice(afterSeq));
        },
      ),
      { numRuns: runs },
    );
  });
});

describe('MemoryJournal: stored commands are protected', () => {
  it('keeps its own copy: mutating the appended command later changes nothing', async () => {
    const journal = new MemoryJournal();
    const command = {
      type: 'oracle',
      time: 5,
      prices: [{ market: 1, price: 65_000n * 10n ** 18n }],
    };
    await journal.append([command as OracleCommand]);
    command.time = 6;
    command.prices.push({ market: 2, price: 1n });
    (command.prices[0] as { price: bigint }).price = 0n;
    const [record] = await collect(journal.read());
    expect(record?.command).toEqual(oracle(5, 65_000n * 10n ** 18n));
  });

  it('hands out deep-frozen records, so a reader cannot change them either', async () => {
    const journal = new MemoryJournal();
    await journal.append([oracle(5, 7n)]);
    const [record] = await collect(journal.read());
    const stored = record?.command as OracleCommand;
    expect(Object.isFrozen(record)).toBe(true);
    expect(Object.isFrozen(stored)).toBe(true);
    expect(Object.isFrozen(stored.prices)).toBe(true);
    expect(Object.isFrozen(stored.prices[0])).toBe(true);
    expect(() => {
      (stored.prices[0] as { price: bigint }).price = 1n;
    }).toThrow(TypeError);
    const [again] = await collect(journal.read());
    expect(again?.command).toEqual(oracle(5, 7n));
  });

  it('refuses a batch holding something that is not plain data, storing none of it', async () => {
    const journal = new MemoryJournal();
    const odd = { type: 'tick', time: 1, extra: new Map([[1, 2]]) } as unknown as Command;
    await expect(journal.append([tick(0), odd])).rejects.toThrow(TypeError);
    expect(journal.lastSeq).toBe(0);
    expect(await collect(journal.read())).toEqual([]);
  });

  it('says which command and which field is not plain data', async () => {
    const journal = new MemoryJournal();
    const cases: [unknown, string][] = [
      [{ type: 'tick', time: 1, extra: new Map() }, 'command 1 (tick) has a Map at command.extra'],
      [
        { type: 'oracle', time: 1, prices: [{ market: 1, price: 1n, at: new Date(0) }] },
        'command 1 (oracle) has a Date at command.prices[0].at',
      ],
      // structuredClone alone would throw a DataCloneError naming neither.
      [
        { type: 'tick', time: 1, later: () => 1 },
        'command 1 (tick) has a function at command.later',
      ],
      [{ type: 'tick', time: 1, tag: Symbol('x') }, 'command 1 (tick) has a symbol at command.tag'],
      // structuredClone would drop it silently: the journal would differ from what was reduced.
      [{ type: 'tick', time: 1, [Symbol('x')]: 1 }, 'command 1 (tick) has a symbol key at command'],
    ];
    for (const [odd, message] of cases) {
      const appending = journal.append([tick(0), odd as Command]);
      await expect(appending).rejects.toThrow(TypeError);
      await expect(appending).rejects.toThrow(message);
    }
    expect(journal.lastSeq).toBe(0);
  });

  it('stores a command that refers to the same object twice', async () => {
    const journal = new MemoryJournal();
    const price = { market: 1, price: 5n };
    await journal.append([{ type: 'oracle', time: 1, prices: [price, price] }]);
    const [record] = await collect(journal.read());
    expect(record?.command).toEqual({ type: 'oracle', time: 1, prices: [price, price] });
  });
});

describe('MemoryJournal: injected failure and close', () => {
  it('fails exactly the next append with the injected error and stores nothing of it', async () => {
    const journal = new MemoryJournal();
    await journal.append([tick(1)]);
    const flushFailed = new Error('EIO: fsync failed');
    journal.failNextAppend(flushFailed);
    await expect(journal.append([tick(2), tick(3)])).rejects.toBe(flushFailed);
    expect(journal.lastSeq).toBe(1);
    expect((await collect(journal.read())).map((r) => r.seq)).toEqual([1]);
    // Later appends work again, so a host test can see whether the host kept going.
    expect(await journal.append([tick(4)])).toBe(2);
    expect((await collect(journal.read(1)))[0]?.command).toEqual(tick(4));
  });

  it('refuses appends and reads after close; close is idempotent', async () => {
    const journal = new MemoryJournal();
    await journal.append([tick(1)]);
    await journal.close();
    await journal.close();
    await expect(journal.append([tick(2)])).rejects.toBeInstanceOf(JournalClosedError);
    expect(() => journal.read()).toThrow(JournalClosedError);
    expect(journal.lastSeq).toBe(1);
  });
});
