/**
 * Invariant checks over a whole engine state, run after every command in tests and simulations:
 * conservation of collateral, zero-sum positions, an uncrossed and self-consistent book, and
 * hold totals that match the resting orders.
 *
 * @module
 */

import { slotId } from '../book/levels.js';
import { type EngineState, LEVEL_CHUNK, type Level, type Order } from '../engine/types.js';
import { InvariantError } from '../errors.js';
import { holdsMargin } from '../margin/scope.js';

function fail(message: string): never {
  throw new InvariantError(message);
}

/** Sum of every pool, the fee pool and the insurance fund, micro-units. */
export function totalCollateral(state: EngineState): bigint {
  let total = state.feePool + state.insuranceFund;
  state.accounts.forEach((a) => {
    total += a.crossCash;
    for (const p of a.isolated) total += p.cash;
  });
  return total;
}

/** Throws an `InvariantError` naming the first broken invariant. */
export function checkInvariants(state: EngineState): void {
  // I1 conservation, exactly.
  const total = totalCollateral(state);
  const expected = state.totalDeposits - state.totalWithdrawals;
  if (total !== expected)
    fail(`conservation: pools ${total} != deposits - withdrawals ${expected}`);

  // I3 zero-sum positions and open interest.
  const sums = new Map<number, bigint>();
  const longs = new Map<number, bigint>();
  state.accounts.forEach((a) => {
    for (const p of a.positions) {
      if (p.size === 0n) fail(`flat position record kept for ${a.address}`);
      sums.set(p.market, (sums.get(p.market) ?? 0n) + p.size);
      if (p.size > 0n) longs.set(p.market, (longs.get(p.market) ?? 0n) + p.size);
    }
  });
  // I3b the holder index: every account with a position in a market, with its position count.
  const holders = new Map<string, number>();
  state.accounts.forEach((a) => {
    for (const p of a.positions) {
      const key = `${p.market}|${a.address}`;
      holders.set(key, (holders.get(key) ?? 0) + 1);
    }
  });
  let indexed = 0;
  state.markets.forEach((m, id) => {
    m.holders.forEach((n, address) => {
      indexed++;
      if (holders.get(`${id}|${address}`) !== n)
        fail(`market ${id}: holder index wrong for ${address}`);
    });
  });
  if (indexed !== holders.size) fail(`holder index lists ${indexed} of ${holders.size} holders`);
  state.markets.forEach((m, id) => {
    if ((sums.get(id) ?? 0n) !== 0n) fail(`market ${id}: positions sum to ${sums.get(id)}`);
    if ((longs.get(id) ?? 0n) !== m.openInterest) {
      fail(`market ${id}: open interest ${m.openInterest} != sum of longs ${longs.get(id) ?? 0n}`);
    }
  });

  // I4 book: sorted, uncrossed, levels consistent with the orders in them.
  const resting = new Set<number>();
  state.markets.forEach((m, id) => {
    const check = (levels: Level[], buy: boolean): void => {
      for (let i = 0; i < levels.length; i++) {
        const l = levels[i] as Level;
        if (i > 0) {
          const prev = (levels[i - 1] as Level).price;
          if (buy ? prev >= l.price : prev <= l.price) fail(`market ${id}: levels out of order`);
        }
        let count = 0;
        let qty = 0n;
        if (l.base % LEVEL_CHUNK !== 0 || l.head < l.base || l.tail < l.head) {
          fail(`market ${id}: level ${l.price} slots base ${l.base} head ${l.head} tail ${l.tail}`);
        }
        if (l.chunks.length !== Math.ceil((l.tail - l.base) / LEVEL_CHUNK)) {
          fail(`market ${id}: level ${l.price} has ${l.chunks.length} chunks for its slots`);
        }
        for (let slot = l.base; slot < l.base + l.chunks.length * LEVEL_CHUNK; slot++) {
          const oid = slotId(l, slot);
          if (oid === 0) continue;
          if (slot >= l.tail) fail(`market ${id}: order ${oid} beyond the level tail`);
          if (slot < l.head) fail(`market ${id}: live order ${oid} before the level head`);
          const o = state.orders.get(oid);
          if (o === undefined) fail(`market ${id}: level holds unknown order ${oid}`);
          if (o.slot !== slot || o.price !== l.price || (o.side === 'Buy') !== buy) {
            fail(`market ${id}: order ${oid} slot/price/side disagree with its level`);
          }
          count++;
          qty += o.quantity - o.cumQty;
          resting.add(oid);
        }
        if (count === 0) fail(`market ${id}: empty level ${l.price} kept`);
        if (count !== l.count || qty !== l.quantity)
          fail(`market ${id}: level ${l.price} totals wrong`);
      }
    };
    check(m.bids, true);
    check(m.asks, false);
    const bid = m.bids[m.bids.length - 1];
    const ask = m.asks[m.asks.length - 1];
    if (bid !== undefined && ask !== undefined && bid.price >= ask.price) {
      fail(`market ${id}: crossed book ${bid.price} >= ${ask.price}`);
    }
  });

  // I5 working orders: indexed on their account, resting ones on the book, totals match.
  const totals = new Map<
    string,
    { bq: bigint; bn: bigint; sq: bigint; sn: bigint; bm: bigint; sm: bigint; g: number }
  >();
  state.orders.forEach((o: Order, id) => {
    if (o.cumQty >= o.quantity) fail(`order ${id} working but filled`);
    if (state.accounts.get(o.account) === undefined) fail(`order ${id} has no account`);
    if (o.slot >= 0 !== resting.has(id)) fail(`order ${id} slot ${o.slot} disagrees with the book`);
    const key = `${o.account}|${o.market}|${o.marginMode}`;
    const t = totals.get(key) ?? { bq: 0n, bn: 0n, sq: 0n, sn: 0n, bm: 0n, sm: 0n, g: 0 };
    if (holdsMargin(o)) {
      const leaves = o.quantity - o.cumQty;
      if (o.side === 'Buy') {
        t.bq += leaves;
        t.bn += leaves * o.price;
        if (leaves > t.bm) t.bm = leaves;
      } else {
        t.sq += leaves;
        t.sn += leaves * o.price;
        if (leaves > t.sm) t.sm = leaves;
      }
    }
    if (o.reduceOnly || o.managed) t.g++;
    totals.set(key, t);
  });
  let listedTotal = 0;
  state.accounts.forEach((a) => {
    let prev = 0;
    for (const id of a.orders.toArray()) {
      const o = state.orders.get(id);
      if (o === undefined || o.account !== a.address)
        fail(`account ${a.address} lists order ${id}`);
      if (id <= prev) fail(`account ${a.address} order list not ascending at ${id}`);
      prev = id;
    }
    listedTotal += a.orders.size;
    for (const t of a.orderTotals) {
      const want = totals.get(`${a.address}|${t.market}|${t.mode}`) ?? {
        bq: 0n,
        bn: 0n,
        sq: 0n,
        sn: 0n,
        bm: 0n,
        sm: 0n,
        g: 0,
      };
      // The leaves bounds may overestimate (they only fall when a side empties), never under.
      if (
        t.buyMaxLeaves < want.bm ||
        t.sellMaxLeaves < want.sm ||
        (t.buyQty === 0n) !== (t.buyMaxLeaves === 0n) ||
        (t.sellQty === 0n) !== (t.sellMaxLeaves === 0n)
      ) {
        fail(`account ${a.address} leaves bounds for ${t.market}/${t.mode} are wrong`);
      }
      if (
        t.buyQty !== want.bq ||
        t.buyNotional !== want.bn ||
        t.sellQty !== want.sq ||
        t.sellNotional !== want.sn ||
        t.guardedCount !== want.g
      ) {
        fail(`account ${a.address} totals for ${t.market}/${t.mode} are wrong`);
      }
      totals.delete(`${a.address}|${t.market}|${t.mode}`);
    }
  });
  if (listedTotal !== state.orders.size)
    fail(`accounts list ${listedTotal} of ${state.orders.size} orders`);
  for (const [key, t] of totals) {
    if (t.bq !== 0n || t.sq !== 0n || t.g !== 0) fail(`totals missing for ${key}`);
  }
}
