/**
 * Snapshots (reliability-anchors 5.5, P2 "replay equivalence"): a state decoded from its snapshot
 * has the same hash, the same text when encoded again, and behaves exactly like the original
 * under every later command; the resumable encoder and hasher give what the one-shot forms give
 * whatever the slice size.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Command,
  canonicalText,
  createEngineState,
  decodeSnapshot,
  decodeSnapshotText,
  type EngineState,
  encodeSnapshot,
  type Order,
  PMap,
  reduce,
  reduceAll,
  SnapshotEncoder,
  SnapshotFormatError,
  StateHasher,
  stateHash,
} from '../src/index.js';
import {
  BTC_SETTINGS,
  cloid,
  ETH_SETTINGS,
  legacySnapshotText,
  TestVenue,
  wallet,
} from '../src/testing/index.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 40);
const wallets = [wallet(1), wallet(2), wallet(3)];
const SYMS = ['BTC-PERP', 'ETH-PERP'] as const;
const BASE = [65000, 3000];
const TICK = [0.5, 0.01];

type Step =
  | {
      k: 'order';
      w: number;
      sym: number;
      buy: boolean;
      off: number;
      qty: number;
      tif: number;
      cl: number;
      type: number;
    }
  | { k: 'cancel'; w: number; pick: number }
  | { k: 'oracle'; sym: number; off: number }
  | { k: 'tick'; ms: number }
  | { k: 'auth'; w: number; skew: number }
  | { k: 'signedOrder'; w: number; skew: number; buy: boolean; off: number }
  | { k: 'deposit'; w: number; amount: number; settle: boolean }
  | { k: 'withdraw'; w: number; amount: number }
  | { k: 'leverage'; w: number; sym: number; lev: number }
  | { k: 'referral'; w: number; n: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      k: fc.constant('order' as const),
      w: fc.nat(2),
      sym: fc.nat(1),
      buy: fc.boolean(),
      off: fc.integer({ min: -20, max: 20 }),
      qty: fc.integer({ min: 1, max: 30 }),
      tif: fc.constantFrom(0, 0, 1, 1, 2, 3, 4),
      cl: fc.constantFrom(0, 0, 0, 1, 2, 3),
      type: fc.constantFrom(0, 0, 0, 0, 1, 2, 3),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ k: fc.constant('cancel' as const), w: fc.nat(2), pick: fc.nat() }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      k: fc.constant('oracle' as const),
      sym: fc.nat(1),
      off: fc.integer({ min: -40, max: 40 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('tick' as const),
      ms: fc.integer({ min: 1, max: 4_000_000 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('auth' as const),
      w: fc.nat(2),
      skew: fc.integer({ min: -400_000, max: 400_000 }),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('signedOrder' as const),
      w: fc.nat(2),
      skew: fc.integer({ min: -250_000, max: 250_000 }),
      buy: fc.boolean(),
      off: fc.integer({ min: -10, max: 10 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('deposit' as const),
      w: fc.nat(2),
      amount: fc.integer({ min: 1, max: 5000 }),
      settle: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('withdraw' as const),
      w: fc.nat(2),
      amount: fc.integer({ min: 1, max: 5000 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('leverage' as const),
      w: fc.nat(2),
      sym: fc.nat(1),
      lev: fc.integer({ min: 1, max: 30 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ k: fc.constant('referral' as const), w: fc.nat(2), n: fc.nat(3) }),
  },
);

/** Records a command log from abstract steps (a throwaway venue learns the order ids). */
function buildLog(steps: readonly Step[]): Command[] {
  const v = new TestVenue({ checkInvariants: true });
  v.list(BTC_SETTINGS);
  v.list(ETH_SETTINGS);
  for (const w of wallets) {
    v.open(w);
    v.fund(w, '200000');
  }
  v.run({ type: 'createReferralCode', code: 'BOOT', kind: 'system', maxUses: 2 });
  v.oracle({ 'BTC-PERP': '65000', 'ETH-PERP': '3000' });
  const mine: number[][] = wallets.map(() => []);
  let nonceSeq = 0;
  for (const s of steps) {
    switch (s.k) {
      case 'order': {
        const lean = s.buy ? s.off + 8 : s.off - 8;
        const p = (BASE[s.sym]! + lean * TICK[s.sym]! * 10).toFixed(2);
        const trigger = (
          BASE[s.sym]! +
          (s.buy ? 1 : -1) * (Math.abs(s.off) + 1) * TICK[s.sym]! * 20
        ).toFixed(2);
        const events = v.place(wallets[s.w]!, SYMS[s.sym]!, {
          side: s.buy ? 'Buy' : 'Sell',
          qty: (s.qty / 100).toString(),
          price: p,
          trigger: s.type === 0 ? undefined : trigger,
          type: (['Limit', 'StopLimit', 'StopLoss', 'TakeProfit'] as const)[s.type],
          tif: (['GTC', 'GTD', 'IOC', 'FOK', 'DAY'] as const)[s.tif],
          expiry: s.tif === 1 ? Math.floor(v.time / 1000) + 30 + s.qty * 90 : 0,
          cloid: s.cl === 0 ? null : cloid(s.cl + 10 * s.w),
        });
        const o = events.find((e) => e.type === 'outcome');
        if (o?.type === 'outcome' && o.ok && 'order' in o) mine[s.w]!.push(o.order.orderId);
        break;
      }
      case 'cancel': {
        const ids = mine[s.w]!;
        v.cancel(wallets[s.w]!, 'BTC-PERP', {
          orderId: ids.length ? ids[s.pick % ids.length]! : 1,
        });
        break;
      }
      case 'oracle':
        v.oracle({ [SYMS[s.sym]!]: (BASE[s.sym]! + s.off * TICK[s.sym]! * 25).toFixed(2) });
        break;
      case 'tick':
        v.advance(s.ms);
        break;
      case 'auth':
        v.run({ type: 'authenticate', account: wallets[s.w]!, nonce: BigInt(v.time + 1 + s.skew) });
        break;
      case 'signedOrder': {
        const time = v.time + 1;
        v.run({
          type: 'placeOrder',
          time,
          account: wallets[s.w]!,
          order: v.request('BTC-PERP', {
            side: s.buy ? 'Buy' : 'Sell',
            qty: '0.01',
            price: (65000 + s.off * 5).toFixed(1),
          }),
          auth: {
            nonce: BigInt(time + s.skew + (nonceSeq++ % 3)),
            deadline: BigInt(Math.floor(time / 1000) + 60),
          },
        });
        break;
      }
      case 'deposit': {
        const events = v.run({
          type: 'deposit',
          account: wallets[s.w]!,
          amount: BigInt(s.amount) * 1_000_000n,
          target: { mode: 'Cross', market: 0 },
        });
        const o = v.outcome(events);
        if (s.settle && o.ok && o.kind === 'command')
          v.run({ type: 'settleDeposit', commandId: o.commandId, success: true });
        break;
      }
      case 'withdraw':
        v.run({
          type: 'withdraw',
          account: wallets[s.w]!,
          amount: BigInt(s.amount) * 1_000_000n,
          target: { mode: 'Cross', market: 0 },
        });
        break;
      case 'leverage':
        v.run({
          type: 'updateLeverage',
          account: wallets[s.w]!,
          market: s.sym + 1,
          mode: 'Cross',
          leverage: s.lev * 100,
        });
        break;
      case 'referral':
        v.run({
          type: 'applyReferral',
          wallet: wallets[s.w]!,
          code: 'BOOT',
          nonce: `nonce-${s.n}-${s.w}-x`,
          timestamp: v.time,
        });
        break;
    }
  }
  return v.log;
}

function eventsText(
  state: EngineState,
  log: readonly Command[],
): { state: EngineState; text: string } {
  let s = state;
  const texts: string[] = [];
  for (const cmd of log) {
    const r = reduce(s, cmd);
    s = r.state;
    texts.push(canonicalText(r.events));
  }
  return { state: s, text: texts.join('\n') };
}

function fullHash(state: EngineState, budget: number): string {
  const h = new StateHasher(state);
  while (!h.step(budget));
  return h.hash;
}

describe('snapshots', () => {
  it('round-trips exactly: same hash, same text, same behaviour under every later command', () => {
    fc.assert(
      fc.property(
        fc.array(stepArb, { minLength: 10, maxLength: 100 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        (steps, at) => {
          const log = buildLog(steps);
          const cut = Math.floor(at * log.length);
          const start = createEngineState({}, log[0]!.time);
          const prefix = reduceAll(start, log.slice(0, cut)).state;
          const text = encodeSnapshot(prefix);
          const restored = decodeSnapshot(text);
          expect(stateHash(restored)).toBe(stateHash(prefix));
          expect(encodeSnapshot(restored)).toBe(text);
          const live = eventsText(prefix, log.slice(cut));
          const again = eventsText(restored, log.slice(cut));
          expect(again.text).toBe(live.text);
          expect(stateHash(again.state)).toBe(stateHash(live.state));
          // The restored state is never mutated by the commands applied to it.
          expect(stateHash(restored)).toBe(stateHash(prefix));
        },
      ),
      { numRuns: runs },
    );
  });

  it('a snapshot of a live state (batched by arrival) plus the tail equals a replay of the whole log', () => {
    fc.assert(
      fc.property(
        fc.array(stepArb, { minLength: 10, maxLength: 120 }),
        fc.double({ min: 0, max: 1, noNaN: true }),
        fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 10 }),
        (steps, at, sizes) => {
          const log = buildLog(steps);
          const cut = Math.floor(at * log.length);
          const start = createEngineState({}, log[0]!.time);
          // Live: the host batches whatever arrived together.
          let live = start;
          for (let i = 0, k = 0; i < cut; k++) {
            const n = Math.min(sizes[k % sizes.length]!, cut - i);
            live = reduceAll(live, log.slice(i, i + n)).state;
            i += n;
          }
          // Recovery: snapshot of that live state, then the tail in replay chunks.
          const recovered = reduceAll(decodeSnapshot(encodeSnapshot(live)), log.slice(cut)).state;
          expect(stateHash(recovered)).toBe(stateHash(reduceAll(start, log).state));
        },
      ),
      { numRuns: runs },
    );
  });

  it('the resumable encoder and hasher give the one-shot results for any slice size', () => {
    fc.assert(
      fc.property(
        fc.array(stepArb, { minLength: 10, maxLength: 60 }),
        fc.integer({ min: 1, max: 50 }),
        (steps, budget) => {
          const log = buildLog(steps);
          const state = reduceAll(createEngineState({}, log[0]!.time), log).state;
          const enc = new SnapshotEncoder(state);
          const parts: string[] = [];
          for (let p = enc.step(budget); p !== null; p = enc.step(budget)) parts.push(p);
          expect(parts.join('')).toBe(encodeSnapshot(state));
          expect(fullHash(state, budget)).toBe(stateHash(state));
        },
      ),
      { numRuns: Math.max(5, Math.floor(runs / 2)) },
    );
  });

  it('the state after a log does not depend on batch boundaries (live batches vs replay chunks)', () => {
    // A deep level whose head is consumed by fills and cancels: level copies at batch boundaries
    // once dropped the spent prefix, so a snapshot of a live state (batched by arrival) plus the
    // replayed tail hashed differently from a replay in other chunks.
    const v = new TestVenue({ checkInvariants: false });
    v.list(BTC_SETTINGS);
    for (const w of wallets) {
      v.open(w);
      v.fund(w, '500000');
    }
    v.oracle({ 'BTC-PERP': '65000' });
    const ids: number[] = [];
    for (let i = 0; i < 150; i++) {
      const events = v.place(wallets[0]!, 'BTC-PERP', {
        side: 'Sell',
        qty: '0.01',
        price: '65000',
      });
      const o = v.outcome(events);
      if (o.ok && 'order' in o) ids.push(o.order.orderId);
      if (i % 3 === 2)
        v.place(wallets[1]!, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '65000', tif: 'IOC' });
      if (i % 5 === 4) v.cancel(wallets[0]!, 'BTC-PERP', { orderId: ids[Math.floor(i / 2)]! });
    }
    const log = v.log;
    const start = createEngineState({}, log[0]!.time);
    const reference = stateHash(reduceAll(start, log).state);
    fc.assert(
      fc.property(
        fc.array(fc.integer({ min: 1, max: 200 }), { minLength: 1, maxLength: 40 }),
        (sizes) => {
          let state = start;
          let at = 0;
          for (let i = 0; at < log.length; i++) {
            const n = sizes[i % sizes.length]!;
            state = reduceAll(state, log.slice(at, at + n)).state;
            at += n;
          }
          expect(stateHash(state)).toBe(reference);
        },
      ),
      { numRuns: runs },
    );
  });

  it('carries state fields it has never heard of (new maps, records, bigints, odd numbers)', () => {
    const base = createEngineState({}, 5);
    const extended = {
      ...base,
      funding: PMap.from<number, { epoch: number; rate: bigint; paid: bigint[] }>([
        [1, { epoch: 7, rate: -12n, paid: [1n, 2n] }],
        [2, { epoch: 8, rate: 3n, paid: [] }],
      ]),
      liquidation: {
        active: null,
        queue: [{ id: 1, left: 10n, note: undefined }],
        odd: [-0, Number.NaN],
      },
    } as unknown as EngineState;
    const restored = decodeSnapshot(encodeSnapshot(extended));
    expect(stateHash(restored)).toBe(stateHash(extended));
    const f = (restored as unknown as { funding: PMap<number, { rate: bigint }> }).funding;
    expect(f.get(1)?.rate).toBe(-12n);
    const l = (restored as unknown as { liquidation: { odd: number[] } }).liquidation;
    expect(Object.is(l.odd[0], -0)).toBe(true);
    expect(Number.isNaN(l.odd[1])).toBe(true);
  });

  it('a decoded state is owned by nobody: every edit marker is null', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    v.open(wallets[0]!);
    const restored = decodeSnapshot(encodeSnapshot(v.state));
    expect(restored.edit).toBeNull();
    const m = restored.markets.get(1)!;
    expect(m.edit).toBeNull();
    expect(restored.accounts.get(wallets[0]!)?.edit).toBeNull();
  });

  it('refuses what it cannot carry or read', () => {
    const withMap = { ...createEngineState(), extra: new Map([[1, 2]]) } as unknown as EngineState;
    expect(() => encodeSnapshot(withMap)).toThrow(/instance of Map/);
    expect(() => decodeSnapshot('{"v":1,"state":{}}')).toThrow(SnapshotFormatError);
    expect(() => decodeSnapshot('{"v":2,"state":{}}')).toThrow(SnapshotFormatError);
    // Version 3 kept the basis EMA at another scale: refused, so the journal is replayed.
    expect(() => decodeSnapshot('{"v":3,"state":{}}')).toThrow(SnapshotFormatError);
    // Version 4 threaded each account's orders through two state-wide maps.
    expect(() => decodeSnapshot('{"v":4,"state":{}}')).toThrow(SnapshotFormatError);
    // Version 5 had no engine rules version: decodeSnapshot takes this version only...
    expect(() => decodeSnapshot('{"v":5,"state":{}}')).toThrow(SnapshotFormatError);
    expect(() => decodeSnapshot('{"v":6,"state":{}}')).toThrow(SnapshotFormatError);
    expect(() => decodeSnapshot('{"v":7,"state":{}}')).toThrow(SnapshotFormatError);
    expect(() => decodeSnapshot(legacySnapshotText(8, createEngineState()))).toThrow(
      /expected version 9/,
    );
    expect(() => decodeSnapshot('{"v":10,"state":{}}')).toThrow(SnapshotFormatError);
    expect(() => decodeSnapshot('{"v":9,"state":{"x":["q"]}}')).toThrow(/unknown tag/);
    expect(() => decodeSnapshot('not json')).toThrow(SnapshotFormatError);
    // ...decodeSnapshotText also the versions it converts, and no others.
    for (const v of [1, 2, 3, 4, 10])
      expect(() => decodeSnapshotText(`{"v":${v},"state":{}}`)).toThrow(SnapshotFormatError);
  });

  it('writes each record shape once and refers to it after', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    const [a, b] = [wallets[0]!, wallets[1]!];
    for (const w of [a, b]) {
      v.open(w);
      v.fund(w, '1000000');
    }
    v.oracle({ 'BTC-PERP': '65000' });
    for (let i = 0; i < 20; i++) {
      v.place(b, 'BTC-PERP', { side: 'Sell', qty: '0.01', price: '65000' });
      v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '65000' });
    }
    expect(v.state.trades.size).toBe(20);
    const text = encodeSnapshot(v.state);
    // A field of the trade record, and one of the position record, each named once.
    expect(text.split('"positionPnl1"').length).toBe(2);
    expect(text.split('"fundingSinceOpen"').length).toBe(2);
    // The trade table writes each account once, then its number.
    const table = text.slice(text.indexOf('["L",'));
    expect(table.split(`"${a}"`).length).toBe(2);
    expect(table.split(`"${b}"`).length).toBe(2);
    // The record form of version 8 names them in every record, and its text is far longer.
    const objects = legacySnapshotText(8, v.state);
    expect(objects.split('"positionPnl1"').length).toBe(21);
    expect(text.length).toBeLessThan(objects.length * 0.6);
  });

  it('reads the record form of version 8 as the same state', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    v.open(wallets[0]!);
    v.fund(wallets[0]!, '1000');
    v.place(wallets[0]!, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '60000' });
    const decoded = decodeSnapshotText(legacySnapshotText(8, v.state));
    expect(decoded.version).toBe(8);
    expect(decoded.state).toBe(decoded.written);
    expect(stateHash(decoded.state)).toBe(stateHash(v.state));
    expect(encodeSnapshot(decoded.state)).toBe(encodeSnapshot(v.state));
  });

  it('keeps shape numbers in step when a field name holds a NUL', () => {
    const odd = { 'a\u0000b': 1n };
    const extended = {
      ...createEngineState({}, 5),
      extra: [odd, { x: 1 }, odd, { x: 2 }, { 'a\u0000b': 3n }],
    } as unknown as EngineState;
    const text = encodeSnapshot(extended);
    // A record with such a name is a shape of its own each time: names joined with NUL could
    // otherwise be mistaken for another shape's.
    expect(text.split('"a\\u0000b"').length).toBe(4);
    const restored = decodeSnapshot(text);
    expect(stateHash(restored)).toBe(stateHash(extended));
    const extra = (restored as unknown as { extra: Record<string, unknown>[] }).extra;
    expect(extra.map((r) => Object.values(r)[0])).toEqual([1n, 1, 1n, 2, 3n]);
  });

  it('refuses damaged record shapes and trade tables', () => {
    const at = (state: string) => `{"v":9,"state":${state}}`;
    const cases: [string, RegExp][] = [
      ['["R",0,1]', /no record shape 0 before its use/],
      ['["a",["S",["x"],1],["R",1,2]]', /no record shape 1/],
      ['["S",["x","x"],1,2]', /distinct field names/],
      ['["S",["x",2],1,2]', /distinct field names/],
      ['["S",["__proto__"],{}]', /distinct field names/],
      ['["S",["x","y"],1]', /a record of 2 fields has 1 values/],
      ['["a",["S",["x"],1],["R",0,1,2]]', /a record of 1 fields has 2 values/],
      ['["L",["x"],"nn"]', /distinct field names with their kinds/],
      ['["L",["x"],"q"]', /distinct field names with their kinds/],
      ['["L",["x","x"],"nn"]', /distinct field names with their kinds/],
      ['["L",["x"],"n",1]', /odd trade table entry list/],
      ['["L",["x"],"n",-1,["1"]]', /bad trade id/],
      ['["L",["x"],"n",1,[]]', /trade 1: a row of 1 fields has 0 values/],
      ['["L",["x"],"n",1,["1.5"]]', /trade 1: bad bigint/],
      ['["L",["x"],"n",1,[1]]', /trade 1: bad bigint/],
      ['["L",["x"],"s",1,[0]]', /trade 1: no string 0 before its use/],
      ['["L",["x"],"s",1,["a"],2,[1]]', /trade 2: no string 1 before its use/],
      ['["L",["x"],"s",1,["a"],2,[0.5]]', /trade 2: no string 0.5 before its use/],
      ['["L",["x"],"s",1,[null]]', /trade 1: no string null before its use/],
    ];
    for (const [state, message] of cases) {
      expect(() => decodeSnapshotText(at(state))).toThrow(SnapshotFormatError);
      expect(() => decodeSnapshotText(at(state))).toThrow(message);
    }
  });

  it('converts a version-5 snapshot: the recorded hash checks the state as written', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    v.open(wallet(1));
    v.fund(wallet(1), '1000');
    v.place(wallet(1), 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '60000' });
    expect(v.state.rulesVersion).toBeNull();
    // What the previous build wrote: the same state without the fields of versions 6 to 8, as
    // version 5.
    const { rulesVersion: _, ...old } = withoutOrderCap(v.state);
    const text = legacySnapshotText(5, old as EngineState);
    const decoded = decodeSnapshotText(text);
    expect(decoded.version).toBe(5);
    expect(stateHash(decoded.written)).toBe(stateHash(old as EngineState));
    expect(decoded.state.rulesVersion).toBeNull();
    expect(stateHash(decoded.state)).toBe(stateHash(v.state));
    // And it behaves as the state it converts to.
    const cmd = { type: 'declareRules', time: v.time + 1, version: 3 } as const;
    expect(stateHash(reduce(decoded.state, cmd).state)).toBe(stateHash(reduce(v.state, cmd).state));
    // The current version decodes to itself.
    const current = decodeSnapshotText(encodeSnapshot(v.state));
    expect(current.state).toBe(current.written);
  });

  it("converts a version-6 snapshot: a managed child gets its working entry's id, else 0", () => {
    const v = new TestVenue({ settings: { cloidRetentionMs: 1000 } });
    v.list(BTC_SETTINGS);
    const [a, b] = [wallet(1), wallet(2)];
    for (const w of [a, b]) {
      v.open(w);
      v.fund(w, '100000');
    }
    v.oracle({ 'BTC-PERP': '60000' });
    const child = (parentCloid: string, trigger: string) =>
      v.place(a, 'BTC-PERP', {
        side: 'Sell',
        qty: '0.01',
        trigger,
        type: 'StopLoss',
        managed: true,
        parentCloid,
      });
    // An entry that filled and ended: its child follows the position.
    v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '60000', cloid: cloid(1) });
    child(cloid(1), '50000');
    v.place(b, 'BTC-PERP', { side: 'Sell', qty: '0.01', price: '60000' });
    // A working entry and its child.
    v.place(a, 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '55000', cloid: cloid(2) });
    child(cloid(2), '50000');
    const live: Order[] = [];
    v.state.orders.forEach((o) => {
      live.push(o);
    });
    const ended = live.find((o) => o.parentCloid === cloid(1))!;
    const working = live.find((o) => o.parentCloid === cloid(2))!;
    expect(ended.entryOrderId).toBeGreaterThan(0);
    expect(v.state.orders.has(ended.entryOrderId!)).toBe(false);
    expect(v.state.orders.has(working.entryOrderId!)).toBe(true);
    // What the previous build wrote: the orders without the field, as version 6.
    let orders = v.state.orders;
    for (const o of live) {
      const { entryOrderId: _, ...without } = o;
      orders = orders.set(null, o.orderId, without as Order);
    }
    const old = withoutOrderCap({ ...v.state, orders });
    const text = legacySnapshotText(6, old);
    const decoded = decodeSnapshotText(text);
    expect(stateHash(decoded.written)).toBe(stateHash(old));
    expect(decoded.state.orders.get(working.orderId)!.entryOrderId).toBe(working.entryOrderId);
    expect(decoded.state.orders.get(ended.orderId)!.entryOrderId).toBe(0);
  });

  it('converts a version-7 snapshot: the venue settings get the default working-order cap', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    v.open(wallet(1));
    v.fund(wallet(1), '1000');
    v.place(wallet(1), 'BTC-PERP', { side: 'Buy', qty: '0.01', price: '60000' });
    const old = withoutOrderCap(v.state);
    expect('maxWorkingOrdersPerAccount' in old.settings).toBe(false);
    const decoded = decodeSnapshotText(legacySnapshotText(7, old));
    expect(decoded.version).toBe(7);
    expect(stateHash(decoded.written)).toBe(stateHash(old));
    expect(decoded.state.settings.maxWorkingOrdersPerAccount).toBe(1_000);
    // The state a build of this version has after the same commands, so it behaves the same.
    expect(stateHash(decoded.state)).toBe(stateHash(v.state));
  });
});

/** `state` as a build before snapshot version 8 held it: venue settings without the cap. */
function withoutOrderCap(state: EngineState): EngineState {
  const { maxWorkingOrdersPerAccount: _, ...settings } = state.settings;
  return { ...state, settings: settings as EngineState['settings'] };
}
