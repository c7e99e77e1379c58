import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createEngineState } from '../engine/genesis.js';
import { decodeSnapshot, encodeSnapshot } from '../engine/snapshot.js';
import { stateHash } from '../engine/state-hash.js';
import type { EngineState, StoredTrade, TradeSource } from '../engine/types.js';
import { type Edit, newEdit } from '../persistent/edit.js';
import { IntMap } from '../persistent/int-map.js';
import { TradeLog } from './trade-log.js';
import { newStoredTrade } from './trades.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 200);

/** Values around the 64-bit edges, where a trade-log field moves out of its column. */
const bigArb = fc.oneof(
  fc.bigInt({ min: -1_000n, max: 1_000n }),
  fc.bigInt({ min: -(2n ** 63n) - 3n, max: -(2n ** 63n) + 3n }),
  fc.bigInt({ min: 2n ** 63n - 3n, max: 2n ** 63n + 3n }),
  fc.bigInt({ min: -(2n ** 90n), max: 2n ** 90n }),
);
const SOURCES: TradeSource[] = ['Order', 'Liquidation', 'Auction', 'ADL'];

/** A trade with every field drawn, so a field stored in the wrong column shows. */
function tradeArb(): fc.Arbitrary<(id: number) => StoredTrade> {
  return fc
    .record({
      market: fc.integer({ min: 1, max: 2 ** 40 }),
      time: fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
      source: fc.constantFrom(...SOURCES),
      busted: fc.boolean(),
      accounts: fc.tuple(fc.constantFrom('0xa', '0xb', '0xc'), fc.constantFrom('0xa', '0xd')),
      modes: fc.tuple(fc.boolean(), fc.boolean()),
      liquidity: fc.tuple(fc.boolean(), fc.boolean()),
      ids: fc.tuple(
        fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }),
        fc.integer({ min: 0, max: 2 ** 33 }),
      ),
      opened: fc.tuple(fc.integer({ min: 0, max: 2 ** 45 }), fc.integer({ min: 0, max: 2 ** 45 })),
      bigs: fc.array(bigArb, { minLength: 21, maxLength: 21 }),
    })
    .map((r) => (id: number) => {
      const b = r.bigs as bigint[];
      const t = newStoredTrade(
        id,
        r.market,
        r.time,
        r.source,
        b[0] as bigint,
        b[1] as bigint,
        b[2] as bigint,
      );
      t.busted = r.busted;
      t.account0 = r.accounts[0];
      t.account1 = r.accounts[1];
      t.mode0 = r.modes[0] ? 'Cross' : 'Isolated';
      t.mode1 = r.modes[1] ? 'Isolated' : 'Cross';
      t.liquidity0 = r.liquidity[0] ? 'Maker' : 'Taker';
      t.liquidity1 = r.liquidity[1] ? 'Taker' : 'Maker';
      t.orderId0 = r.ids[0];
      t.orderId1 = r.ids[1];
      t.openedTime0 = r.opened[0];
      t.openedTime1 = r.opened[1];
      let i = 3;
      for (const leg of ['0', '1'] as const) {
        for (const f of [
          'signedQty',
          'fee',
          'penalty',
          'realizedPnl',
          'size',
          'entryNotional',
          'entryQty',
          'positionPnl',
          'funding',
        ] as const) {
          (t as unknown as Record<string, bigint>)[`${f}${leg}`] = b[i++] as bigint;
        }
      }
      return t;
    });
}

type Op =
  | { kind: 'append'; gap: number; make: (id: number) => StoredTrade }
  | { kind: 'rewrite'; pick: number; make: (id: number) => StoredTrade }
  | { kind: 'dropOldest' }
  | { kind: 'delete'; pick: number }
  | { kind: 'publish' }
  | { kind: 'branch'; pick: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.record({
      kind: fc.constant('append' as const),
      gap: fc.oneof(
        { weight: 4, arbitrary: fc.constant(0) },
        { weight: 1, arbitrary: fc.integer({ min: 0, max: 600 }) },
      ),
      make: tradeArb(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('rewrite' as const),
      pick: fc.nat(),
      make: tradeArb(),
    }),
  },
  { weight: 2, arbitrary: fc.constant({ kind: 'dropOldest' as const }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.constant({ kind: 'publish' as const }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('branch' as const), pick: fc.nat() }) },
);

/** Everything a reader can see of a log (or of the IntMap it stands for). */
function view(log: TradeLog | IntMap<StoredTrade>): unknown {
  return { size: log.size, entries: log.entries() };
}

describe('TradeLog', () => {
  it('reads like an IntMap of the same trades in every version, branches included', () => {
    fc.assert(
      fc.property(fc.array(opArb, { maxLength: 120 }), (ops) => {
        // The live line of writes, and older versions with what they must still show.
        let log = TradeLog.empty();
        let model = IntMap.empty<StoredTrade>();
        let edit: Edit = newEdit();
        let nextId = 1;
        const kept: { log: TradeLog; model: IntMap<StoredTrade>; seen: unknown; next: number }[] =
          [];
        const ids = () => model.keys();
        for (const op of ops) {
          switch (op.kind) {
            case 'append': {
              const id = nextId + op.gap;
              nextId = id + 1;
              log = log.set(edit, id, op.make(id));
              model = model.set(edit, id, op.make(id));
              break;
            }
            case 'rewrite': {
              const live = ids();
              if (live.length === 0) break;
              const id = live[op.pick % live.length] as number;
              log = log.set(edit, id, op.make(id));
              model = model.set(edit, id, op.make(id));
              break;
            }
            case 'dropOldest':
            case 'delete': {
              const live = ids();
              if (live.length === 0) break;
              const id = (op.kind === 'delete' ? live[op.pick % live.length] : live[0]) as number;
              log = log.delete(edit, id);
              model = model.delete(edit, id);
              break;
            }
            case 'publish':
              kept.push({ log, model, seen: view(log), next: nextId });
              edit = newEdit();
              break;
            case 'branch': {
              // Carry on from an older version (not the newest): this line appended past it.
              const k = kept.length < 2 ? undefined : kept[op.pick % (kept.length - 1)];
              if (k === undefined) break;
              log = k.log;
              model = k.model;
              nextId = k.next;
              edit = newEdit();
              break;
            }
          }
          expect(log.size).toBe(model.size);
        }
        expect(view(log)).toEqual(view(model));
        for (const id of model.keys()) {
          expect(log.has(id)).toBe(true);
          expect(log.timeOf(id)).toBe(model.get(id)?.time);
        }
        for (const k of kept) {
          expect(view(k.log)).toEqual(k.seen);
          expect(view(k.log)).toEqual(view(k.model));
        }
      }),
      { numRuns: runs },
    );
  });

  it('keeps a version that skipped to a later chunk blind to a sibling appending in the one it left', () => {
    const t = (id: number) => newStoredTrade(id, 1, 0, 'Order', BigInt(id), 1n, 1n);
    const a = TradeLog.empty().set(newEdit(), 1, t(1));
    // `b` jumps past the rest of the first chunk; `c` then appends in it, from `a`.
    const b = a.set(newEdit(), 600, t(600));
    const c = a.set(newEdit(), 2, t(2));
    expect(b.keys()).toEqual([1, 600]);
    expect(b.get(2)).toBeUndefined();
    expect(c.keys()).toEqual([1, 2]);
    // The other order: a sibling filled first, then a version skips past its own end.
    const d = TradeLog.empty().set(newEdit(), 1, t(1));
    const e = d.set(newEdit(), 2, t(2));
    const f = d.set(newEdit(), 700, t(700));
    const g = f.set(newEdit(), 701, t(701));
    expect(f.keys()).toEqual([1, 700]);
    expect(g.keys()).toEqual([1, 700, 701]);
    expect(e.keys()).toEqual([1, 2]);
    expect(d.keys()).toEqual([1]);
    // A sibling filled the chunk to its last slot before this version skipped past it.
    const h = TradeLog.empty().set(newEdit(), 1, t(1));
    const full = h.set(newEdit(), 2, t(2)).set(newEdit(), 511, t(511));
    const skip = h.set(newEdit(), 512, t(512));
    expect(skip.keys()).toEqual([1, 512]);
    expect(full.keys()).toEqual([1, 2, 511]);
  });

  it('gives two versions appended after the same one each their own trades', () => {
    const t = (id: number, price: bigint) => newStoredTrade(id, 1, 0, 'Order', price, 1n, 1n);
    const a = TradeLog.empty().set(newEdit(), 1, t(1, 1n));
    const b = a.set(newEdit(), 2, t(2, 2n));
    const c = a.set(newEdit(), 2, t(2, 3n));
    expect(b.get(2)?.price).toBe(2n);
    expect(c.get(2)?.price).toBe(3n);
    expect(a.get(2)).toBeUndefined();
    // The first one to append past `a` kept the shared chunk, the second copied its prefix.
    const d = b.set(newEdit(), 3, t(3, 4n));
    expect([d.get(1)?.price, d.get(2)?.price, d.get(3)?.price]).toEqual([1n, 2n, 4n]);
    expect(c.get(3)).toBeUndefined();
  });

  it('walks with a cursor in id order and checks the count', () => {
    const edit = newEdit();
    let log = TradeLog.empty();
    for (let id = 5; id < 900; id += 3)
      log = log.set(edit, id, newStoredTrade(id, 1, id, 'Order', 1n, 1n, 1n));
    log = log.delete(edit, 5).delete(edit, 50);
    const c = log.cursor();
    const keys: unknown[] = [];
    while (c.next()) keys.push(c.key);
    expect(keys).toEqual(log.keys());
    expect(keys[0]).toBe(8);
    expect(keys).not.toContain(50);
  });

  it('keeps only the fields that fit 64 bits in the columns, the rest exactly', () => {
    const edit = newEdit();
    const t = newStoredTrade(7, 1, 1_000, 'ADL', 10n ** 40n, 2n ** 63n, -(2n ** 63n));
    t.fee1 = -(2n ** 64n) - 1n;
    t.funding0 = 2n ** 63n - 1n;
    const log = TradeLog.empty().set(edit, 7, t);
    expect(log.storedInColumns(7)).toBe(true);
    expect(log.get(7)).toEqual(t);
  });

  it('refuses a record under another id, and ids below its head', () => {
    const edit = newEdit();
    const t = (id: number) => newStoredTrade(id, 1, 0, 'Order', 1n, 1n, 1n);
    const log = TradeLog.empty().set(edit, 1, t(1)).set(edit, 2, t(2)).delete(edit, 1);
    expect(() => log.set(edit, 3, t(4))).toThrow(RangeError);
    expect(() => log.set(edit, 1, t(1))).toThrow(RangeError);
    expect(log.get(1)).toBeUndefined();
  });

  it('goes through a snapshot and the state hash as the IntMap it stands for', () => {
    fc.assert(
      fc.property(fc.array(tradeArb(), { minLength: 1, maxLength: 40 }), fc.nat(), (makes, cut) => {
        const edit = newEdit();
        let log = TradeLog.empty();
        let map = IntMap.empty<StoredTrade>();
        makes.forEach((make, i) => {
          const id = 3 + i * 2;
          log = log.set(edit, id, make(id));
          map = map.set(edit, id, make(id));
        });
        const drop = 3 + (cut % makes.length) * 2;
        log = log.delete(edit, drop);
        map = map.delete(edit, drop);
        const base = createEngineState();
        const withLog: EngineState = { ...base, trades: log };
        const withMap = { ...base, trades: map } as unknown as EngineState;
        expect(stateHash(withLog)).toBe(stateHash(withMap));
        // Written as a trade table; an IntMap of trades (how version 8 wrote the log) is read
        // back as the same log.
        for (const state of [withLog, withMap]) {
          const decoded = decodeSnapshot(encodeSnapshot(state));
          expect(decoded.trades).toBeInstanceOf(TradeLog);
          expect(decoded.trades.entries()).toEqual(log.entries());
          expect(stateHash(decoded)).toBe(stateHash(withLog));
        }
        expect(encodeSnapshot(withLog)).toContain('["L",["tradeId",');
      }),
      { numRuns: Math.max(20, runs / 5) },
    );
  });
});
