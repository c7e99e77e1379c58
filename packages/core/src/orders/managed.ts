/**
 * Orders that follow a position (engine-rules section 5): reduce-only orders are cancelled when
 * the position closes or flips to their side; managed TP/SL on a position are resized with it and
 * cancelled when it closes; managed TP/SL attached to an entry order arm on its first fill and are
 * sized by its filled quantity.
 *
 * @module
 */
import type { Ctx, PendingScope } from '../engine/context.js';
import type { Order } from '../engine/types.js';
import { accountOrders, findScope, sizeOf } from '../margin/scope.js';
import { cancelOrder } from './execution.js';
import { addTrigger } from './triggers-index.js';

/** Working orders of a scope that follow its position (reduce-only or managed), oldest first. */
export function guardedOrders(ctx: Ctx, scope: PendingScope): Order[] {
  const account = ctx.account(scope.account);
  if (account === undefined) return [];
  const t = account.orderTotals[findScope(account.orderTotals, scope.market, scope.mode)];
  if (t === undefined || t.guardedCount === 0) return [];
  return accountOrders(ctx.state, account).filter(
    (o) => o.market === scope.market && o.marginMode === scope.mode && (o.reduceOnly || o.managed),
  );
}

/**
 * Arms the managed children of an entry order that just filled (in part) and sizes them by its
 * filled quantity.
 */
export function activateChildren(ctx: Ctx, parent: Order): void {
  if (parent.cloid === null || parent.managed) return;
  const scope = { account: parent.account, market: parent.market, mode: parent.marginMode };
  for (const child of guardedOrders(ctx, scope)) {
    if (!child.managed || child.parentCloid !== parent.cloid) continue;
    const w = ctx.writableOrder(child.orderId);
    w.quantity = parent.cumQty;
    if (!w.armed && w.ordStatus === 'Untriggered') {
      w.armed = true;
      addTrigger(ctx.writableMarket(w.market), w);
    }
  }
}

/**
 * Applies the position-following rules to every scope whose position changed in this command.
 * `skip` is an order still being executed (it handles its own reduce-only clamp).
 */
export function reconcileScopes(ctx: Ctx, skip = 0): void {
  for (const scope of ctx.takePendingScopes()) {
    const guarded = guardedOrders(ctx, scope);
    if (guarded.length === 0) continue;
    const size = sizeOf(ctx.account(scope.account)!, scope.market, scope.mode);
    const abs = size < 0n ? -size : size;
    for (const o of guarded) {
      if (o.orderId === skip || ctx.order(o.orderId) === undefined) continue;
      const attachedToEntry = o.managed && o.parentCloid !== null;
      if (size === 0n) {
        if (attachedToEntry && !o.armed) continue; // still waiting for its entry order
        cancelOrder(ctx, o.orderId, 'PositionClosed');
        continue;
      }
      const sameSide = size > 0n === (o.side === 'Buy');
      if (sameSide) {
        cancelOrder(ctx, o.orderId, o.managed ? 'PositionClosed' : 'ReduceOnly');
        continue;
      }
      if (o.managed && !attachedToEntry && o.ordStatus === 'Untriggered' && o.quantity !== abs) {
        // A managed TP/SL on a position closes whatever the position is.
        ctx.writableOrder(o.orderId).quantity = abs;
      }
    }
  }
}
