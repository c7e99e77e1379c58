/**
 * The reduce-only invariant (engine-rules section 5: placement sweeps, and "re-clamped when the
 * position shrinks"), checked over a whole state after a command. For every (account, market,
 * margin mode):
 *
 * - a flat scope has no working unmanaged reduce-only order, and none is on the position's side;
 * - per sweep (the orders one price move reaches: for a long the resting sells and take-profits
 *   upward, the stops downward; mirrored for a short) their leaves total at most `|position|`;
 * - hence the resting reduce-only leaves on the closing side total at most `|position|`.
 *
 * Managed TP/SL follow the position and are left out, as the placement rule leaves them out.
 * A helper module for tests, not a test file.
 */
import type { EngineState, Order } from '../src/index.js';
import { sweepDirection } from '../src/orders/triggers-index.js';

/** Throws with a description of the first scope that breaks the reduce-only invariant. */
export function checkReduceOnlyInvariant(state: EngineState): void {
  const scopes = new Map<string, { up: bigint; down: bigint; resting: bigint; orders: Order[] }>();
  state.orders.forEach((o) => {
    if (!o.reduceOnly || o.managed) return;
    const key = `${o.account}|${o.market}|${o.marginMode}`;
    const s = scopes.get(key) ?? { up: 0n, down: 0n, resting: 0n, orders: [] };
    const leaves = o.quantity - o.cumQty;
    if (sweepDirection(o) === 1) s.up += leaves;
    else s.down += leaves;
    if (o.slot >= 0) s.resting += leaves;
    s.orders.push(o);
    scopes.set(key, s);
  });
  for (const [key, s] of scopes) {
    const first = s.orders[0] as Order;
    const account = state.accounts.get(first.account);
    const size =
      account?.positions.find((p) => p.market === first.market && p.mode === first.marginMode)
        ?.size ?? 0n;
    const abs = size < 0n ? -size : size;
    const ids = s.orders.map(
      (o) => `${o.orderId}:${o.side}:${o.ordStatus}:${o.quantity - o.cumQty}`,
    );
    if (size === 0n) throw new Error(`${key}: reduce-only orders ${ids} with no position`);
    for (const o of s.orders) {
      if (size > 0n === (o.side === 'Buy'))
        throw new Error(`${key}: reduce-only order ${o.orderId} on the side of position ${size}`);
    }
    if (s.up > abs || s.down > abs || s.resting > abs) {
      throw new Error(
        `${key}: reduce-only sweeps up ${s.up} / down ${s.down} / resting ${s.resting} exceed |${size}| (${ids})`,
      );
    }
  }
}
