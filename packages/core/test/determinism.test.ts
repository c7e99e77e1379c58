/**
 * Determinism and purity of the reducer: the same command log gives byte-identical events and
 * the same state hash; the reducer never changes the state it is given (checked by hashing the
 * input before and after every command, since Object.freeze cannot stop Map.set); a batch gives
 * exactly what the same commands give one by one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Command,
  canonicalText,
  createEngineState,
  reduce,
  reduceAll,
  stateHash,
} from '../src/index.js';
import { BTC_SETTINGS, cloid, ETH_SETTINGS, TestVenue, wallet } from '../src/testing/index.js';
import { checkReduceOnlyInvariant } from './reduce-only-invariant.js';

const runs = Number(process.env.FC_NUM_RUNS ?? 40);
const wallets = [wallet(1), wallet(2), wallet(3), wallet(4)];

type Step =
  | {
      k: 'order';
      w: number;
      sym: number;
      buy: boolean;
      off: number;
      qty: number;
      type: number;
      tif: number;
      flags: number;
      cl: number;
    }
  | { k: 'cancel'; w: number; pick: number }
  | { k: 'replace'; w: number; pick: number; off: number; qty: number }
  | { k: 'cancelAll'; w: number; sym: number }
  | { k: 'oracle'; sym: number; off: number }
  | { k: 'tick'; ms: number }
  | { k: 'transfer'; w: number; amount: number; toIso: boolean }
  | { k: 'leverage'; w: number; sym: number; lev: number };

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  {
    weight: 8,
    arbitrary: fc.record({
      k: fc.constant('order' as const),
      w: fc.nat(3),
      sym: fc.nat(1),
      buy: fc.boolean(),
      off: fc.integer({ min: -20, max: 20 }),
      qty: fc.integer({ min: 1, max: 30 }),
      type: fc.constantFrom(0, 0, 0, 0, 0, 0, 1, 2, 3),
      tif: fc.constantFrom(0, 0, 0, 1, 2, 3, 4),
      flags: fc.constantFrom(0, 0, 0, 0, 0, 1, 2, 4, 8, 10),
      cl: fc.constantFrom(0, 0, 0, 0, 0, 1, 2, 3),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ k: fc.constant('cancel' as const), w: fc.nat(3), pick: fc.nat() }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      k: fc.constant('replace' as const),
      w: fc.nat(3),
      pick: fc.nat(),
      off: fc.integer({ min: -20, max: 20 }),
      qty: fc.integer({ min: 1, max: 30 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ k: fc.constant('cancelAll' as const), w: fc.nat(3), sym: fc.nat(2) }),
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
      ms: fc.integer({ min: 1, max: 30_000_000 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('transfer' as const),
      w: fc.nat(3),
      amount: fc.integer({ min: 1, max: 50_000 }),
      toIso: fc.boolean(),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      k: fc.constant('leverage' as const),
      w: fc.nat(3),
      sym: fc.nat(1),
      lev: fc.integer({ min: 1, max: 45 }),
    }),
  },
);

/** Turns abstract steps into engine commands, using a throwaway venue to learn order ids. */
function buildLog(steps: Step[]): Command[] {
  const v = new TestVenue({ checkInvariants: true });
  v.list(BTC_SETTINGS);
  v.list(ETH_SETTINGS);
  for (const w of wallets) {
    v.open(w);
    v.fund(w, '200000');
  }
  v.oracle({ 'BTC-PERP': '65000', 'ETH-PERP': '3000' });
  const syms = ['BTC-PERP', 'ETH-PERP'];
  const base = [65000, 3000];
  const tick = [0.5, 0.01];
  const ids: number[] = [];
  const idsBy: number[][] = wallets.map(() => []);
  for (const s of steps) {
    if (s.k === 'order') {
      // Buyers lean up and sellers down so that a good share of orders cross.
      const lean = s.buy ? s.off + 8 : s.off - 8;
      const p = (base[s.sym]! + lean * tick[s.sym]! * 10).toFixed(2);
      const events = v.place(wallets[s.w]!, syms[s.sym]!, {
        side: s.buy ? 'Buy' : 'Sell',
        qty: (s.qty / 100).toString(),
        price: s.type >= 2 && s.off % 3 === 0 ? undefined : p,
        trigger:
          s.type === 0
            ? undefined
            : (
                base[s.sym]! +
                (s.buy ? 1 : -1) * Math.abs(s.off) * tick[s.sym]! * 20 +
                (s.buy ? 1 : -1)
              ).toFixed(2),
        type: (['Limit', 'StopLimit', 'StopLoss', 'TakeProfit'] as const)[s.type],
        tif: (['GTC', 'GTD', 'IOC', 'FOK', 'DAY'] as const)[s.tif],
        expiry: s.tif === 1 ? Math.floor(v.time / 1000) + 60 + s.qty * 60 : 0,
        isolated: (s.flags & 1) === 1,
        reduceOnly: (s.flags & 2) === 2,
        postOnly:
          (s.flags & 4) === 4 && s.type === 0 && (s.tif === 0 || s.tif === 1 || s.tif === 4),
        managed: (s.flags & 8) === 8 && s.type >= 2,
        cloid: s.cl === 0 ? null : cloid(s.cl),
      });
      const o = events.find((e) => e.type === 'outcome');
      if (o?.type === 'outcome' && o.ok && 'order' in o) {
        ids.push(o.order.orderId);
        idsBy[s.w]!.push(o.order.orderId);
      }
    } else if (s.k === 'cancel') {
      const mine = idsBy[s.w]!;
      v.cancel(wallets[s.w]!, 'BTC-PERP', {
        orderId: mine.length ? mine[s.pick % mine.length]! : 1,
      });
    } else if (s.k === 'replace') {
      const mine = idsBy[s.w]!;
      const id = mine.length ? mine[s.pick % mine.length]! : 1;
      v.run({
        type: 'replaceOrder',
        account: wallets[s.w]!,
        market: 1,
        orderId: BigInt(id),
        origCloid: null,
        price: BigInt(Math.round((65000 + s.off * 5) * 2)) * 5n * 10n ** 17n,
        triggerPrice: 0n,
        quantity: BigInt(s.qty) * 100n,
        cloid: null,
      });
    } else if (s.k === 'cancelAll') {
      v.run({ type: 'cancelAll', account: wallets[s.w]!, market: s.sym });
    } else if (s.k === 'oracle') {
      v.oracle({ [syms[s.sym]!]: (base[s.sym]! + s.off * tick[s.sym]! * 25).toFixed(2) });
    } else if (s.k === 'tick') {
      v.advance(s.ms);
    } else if (s.k === 'transfer') {
      v.run({
        type: 'transferMargin',
        account: wallets[s.w]!,
        market: 1,
        amount: BigInt(s.amount) * 1_000_000n,
        direction: s.toIso ? 'crossToIsolated' : 'isolatedToCross',
      });
    } else {
      v.run({
        type: 'updateLeverage',
        account: wallets[s.w]!,
        market: s.sym + 1,
        mode: 'Cross',
        leverage: s.lev * 100,
      });
    }
    // Reduce-only orders never promise more than the position (engine-rules 5 re-clamp).
    checkReduceOnlyInvariant(v.state);
  }
  if (process.env.LOG_STATS) {
    const counts: Record<string, number> = {};
    for (const evs of v.history)
      for (const e of evs) {
        const k =
          e.type === 'executionReport'
            ? e.kind
            : e.type === 'outcome'
              ? e.ok
                ? 'ok'
                : `fail${e.code} ${e.message.slice(0, 50)}`
              : e.type;
        counts[k] = (counts[k] ?? 0) + 1;
      }
    console.log(JSON.stringify(counts));
  }
  return v.log;
}

function replay(log: readonly Command[]): { text: string; hash: string } {
  let state = createEngineState({}, log[0]!.time);
  const texts: string[] = [];
  for (const cmd of log) {
    const r = reduce(state, cmd);
    state = r.state;
    texts.push(canonicalText(r.events));
  }
  return { text: texts.join('\n'), hash: stateHash(state) };
}

describe('determinism', () => {
  it('replaying a recorded log twice gives identical events and state hash', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 20, maxLength: 120 }), (steps) => {
        const log = buildLog(steps);
        const a = replay(log);
        const b = replay(log);
        expect(b.text).toBe(a.text);
        expect(b.hash).toBe(a.hash);
      }),
      { numRuns: runs },
    );
  });

  it('a batch gives exactly the events and state of the same commands one by one', () => {
    fc.assert(
      fc.property(
        fc.array(stepArb, { minLength: 20, maxLength: 120 }),
        fc.integer({ min: 1, max: 17 }),
        (steps, chunk) => {
          const log = buildLog(steps);
          const single = replay(log);
          let state = createEngineState({}, log[0]!.time);
          const texts: string[] = [];
          for (let i = 0; i < log.length; i += chunk) {
            const r = reduceAll(state, log.slice(i, i + chunk));
            state = r.state;
            for (const ev of r.events) texts.push(canonicalText(ev));
          }
          expect(texts.join('\n')).toBe(single.text);
          expect(stateHash(state)).toBe(single.hash);
        },
      ),
      { numRuns: runs },
    );
  });

  it('never mutates its input: the input hash is unchanged after every command of a long run', () => {
    fc.assert(
      fc.property(fc.array(stepArb, { minLength: 50, maxLength: 200 }), (steps) => {
        const log = buildLog(steps);
        let state = createEngineState({}, log[0]!.time);
        const seen: [ReturnType<typeof createEngineState>, string][] = [];
        for (const cmd of log) {
          const before = stateHash(state);
          const r = reduce(state, cmd);
          expect(stateHash(state)).toBe(before);
          seen.push([state, before]);
          state = r.state;
        }
        // Older versions stay intact as newer ones are built from them.
        for (const [old, hash] of seen.filter((_, i) => i % 10 === 0))
          expect(stateHash(old)).toBe(hash);
      }),
      { numRuns: Math.max(5, Math.floor(runs / 2)) },
    );
  });

  it('the state hash changes with the state and ignores ownership markers', () => {
    const a = createEngineState({}, 1);
    const b = createEngineState({}, 1);
    expect(stateHash(a)).toBe(stateHash(b));
    const c = createEngineState({}, 2);
    expect(stateHash(c)).not.toBe(stateHash(a));
  });
});
