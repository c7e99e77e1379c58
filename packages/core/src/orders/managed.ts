/**
 * Orders that follow a position (engine-rules section 5): reduce-only orders are re-clamped when
 * the position shrinks (see {@link clampReduceOnly}) and cancelled when it closes or flips to
 * their side; managed TP/SL on a position are resized with it and cancelled when it closes;
 * managed TP/SL attached to an entry order arm on its first fill and are sized by its filled
 * quantity. Every change of an order's size made here is reported (`OrderReplaced` with the
 * reason of a {@link RestateReason}).
 *
 * @module
 */
import { leavesOf } from '../book/levels.js';
import type { Ctx, PendingScope } from '../engine/context.js';
import { viewAs } from '../engine/events.js';
import type { Order } from '../engine/types.js';
import { accountOrders, findScope, sizeOf } from '../margin/scope.js';
import { cancelOrder, shrinkInPlace } from './execution.js';
import { addTrigger, removeTrigger, sweepDirection } from './triggers-index.js';

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
 * Renames an entry order's managed children's `parentCloid` when a replace gives the entry a new
 * cloid (research 6.3 rule 4): the wire names their parent by cloid (they stay attached by
 * `entryOrderId`).
 */
export function followParentCloid(ctx: Ctx, parent: Order): void {
  if (parent.managed || parent.cloid === null) return;
  const scope = { account: parent.account, market: parent.market, mode: parent.marginMode };
  for (const child of guardedOrders(ctx, scope)) {
    if (!child.managed || child.entryOrderId !== parent.orderId) continue;
    // parentCloid is fixed for an order's life except here, where its parent's name changes.
    (ctx.writableOrder(child.orderId) as { parentCloid: string | null }).parentCloid = parent.cloid;
  }
}

/**
 * Arms the managed children of an entry order that just filled (in part) and sizes them by its
 * filled quantity.
 */
export function activateChildren(ctx: Ctx, parent: Order): void {
  sizeChildren(ctx, parent, true);
}

/**
 * Re-sizes the armed, waiting managed children of an entry order whose fill was busted by the
 * fills it has left (engine-rules 8: as if the busted fill never happened). An entry left with no
 * fill has children that were never armed: they are disarmed (taken off the trigger lists, so a
 * mark through their trigger fires nothing, as it would not have before the entry's first fill)
 * and wait for its next fill, which arms and sizes them again. Their quantity stays (the size
 * they were placed with is gone; the next fill sets it), so no report.
 */
export function resizeChildrenAfterBust(ctx: Ctx, parent: Order): void {
  if (parent.cumQty !== 0n) {
    sizeChildren(ctx, parent, false);
    return;
  }
  if (parent.cloid === null || parent.managed) return;
  const scope = { account: parent.account, market: parent.market, mode: parent.marginMode };
  for (const child of armedChildrenOf(ctx, scope, parent.orderId)) {
    const w = ctx.writableOrder(child.orderId);
    removeTrigger(ctx, ctx.writableMarket(w.market), w);
    w.armed = false;
  }
}

/** The armed managed children of entry order `entryOrderId` that wait for their trigger. */
function armedChildrenOf(ctx: Ctx, scope: PendingScope, entryOrderId: number): Order[] {
  return guardedOrders(ctx, scope).filter(
    (child) =>
      child.managed &&
      child.entryOrderId === entryOrderId &&
      child.ordStatus === 'Untriggered' &&
      child.armed,
  );
}

/**
 * The armed, waiting managed children of an entry order that has already ended, after a bust of
 * `qty` of its fills (engine-rules 8). The engine no longer holds the entry, but such a child is
 * sized by the entry's whole filled quantity (its last fill sized it, and a managed quantity
 * cannot be amended), so it loses the busted quantity, reported as `OrderReplaced` (reason
 * `ParentBust`) as for a working entry. With nothing left the entry is one that never filled
 * (the history ends it `Cancelled`, reason `Bust`): its children are cancelled
 * (`ParentCancelled`), as when an entry ends without fills.
 */
export function resizeChildrenOfEndedEntry(
  ctx: Ctx,
  scope: PendingScope,
  entryOrderId: number,
  qty: bigint,
): void {
  for (const child of armedChildrenOf(ctx, scope, entryOrderId)) {
    const left = child.quantity - qty;
    if (left > 0n) resize(ctx, ctx.writableOrder(child.orderId), left, 'ParentBust');
    else cancelOrder(ctx, child.orderId, 'ParentCancelled');
  }
}

/**
 * Sizes the waiting managed children of an entry order by its filled quantity: with `arm`, every
 * one (arming those not armed yet), without it only those already armed.
 */
function sizeChildren(ctx: Ctx, parent: Order, arm: boolean): void {
  if (parent.cloid === null || parent.managed) return;
  const scope = { account: parent.account, market: parent.market, mode: parent.marginMode };
  for (const child of guardedOrders(ctx, scope)) {
    // A child that already triggered is a working order (it may rest on the book): its size was
    // fixed when it fired, as for a managed TP/SL on a position (`reconcileScopes`).
    if (
      !child.managed ||
      child.entryOrderId !== parent.orderId ||
      child.ordStatus !== 'Untriggered' ||
      (!arm && !child.armed)
    )
      continue;
    const arming = !child.armed;
    if (!arming && child.quantity === parent.cumQty) continue;
    const w = ctx.writableOrder(child.orderId);
    if (w.quantity !== parent.cumQty)
      resize(ctx, w, parent.cumQty, arm ? 'ParentFilled' : 'ParentBust');
    if (arming) {
      w.armed = true;
      addTrigger(ctx.writableMarket(w.market), w);
      // The mark may already be past its trigger: it fires once the command's matching is done.
      ctx.triggerArmed(w.market);
    }
  }
}

/**
 * Applies the position-following rules to every scope whose position changed in this command.
 * `skip` is an order still being executed: it handles its own reduce-only clamp and is left out
 * of the re-clamp below. With `clampLater`, the caller re-clamps skip's scope with skip in it
 * (a triggered stop about to rest, `execute` in place.ts), so that scope's re-clamp is left to
 * it: clamped here first and there again, an order could be amended twice for one fill.
 */
export function reconcileScopes(ctx: Ctx, skip = 0, clampLater = false): void {
  const later = clampLater ? ctx.order(skip) : undefined;
  for (const scope of ctx.takePendingScopes()) {
    const guarded = guardedOrders(ctx, scope);
    if (guarded.length === 0) continue;
    const size = sizeOf(ctx.account(scope.account)!, scope.market, scope.mode);
    const abs = size < 0n ? -size : size;
    const closing: number[] = [];
    for (const o of guarded) {
      if (o.orderId === skip || ctx.order(o.orderId) === undefined) continue;
      const attachedToEntry = o.managed && o.parentCloid !== null;
      // A child follows its entry order, not the position, while the entry works: the position
      // it will protect is the one the entry is still building (or flipping to).
      if (attachedToEntry && entryWorking(ctx, o)) continue;
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
        resize(ctx, ctx.writableOrder(o.orderId), abs, 'PositionChanged');
      }
      if (!o.managed) closing.push(o.orderId);
    }
    const deferred =
      later !== undefined &&
      later.account === scope.account &&
      later.market === scope.market &&
      later.marginMode === scope.mode;
    if (closing.length > 0 && !deferred) clampSweeps(ctx, closing, abs);
  }
}

/** Whether the entry order a managed child is attached to is still working. */
function entryWorking(ctx: Ctx, child: Order): boolean {
  return child.entryOrderId !== null && ctx.order(child.entryOrderId) !== undefined;
}

// ---- reduce-only re-clamp -------------------------------------------------------------------

/**
 * Reach order within one sweep, nearest to the market first: by the price the move must reach
 * (a working order's limit price, an untriggered order's trigger price), ascending for an
 * upward sweep and descending for a downward one; at the same price a working order before an
 * untriggered one (it trades there first; the other only triggers there), working orders in
 * their level's time priority (an order not yet resting goes behind its level), then the older
 * order first.
 */
function byReach(direction: 1 | -1): (a: Order, b: Order) => number {
  return (a, b) => {
    const pa = a.ordStatus === 'Untriggered' ? a.triggerPrice : a.price;
    const pb = b.ordStatus === 'Untriggered' ? b.triggerPrice : b.price;
    if (pa !== pb) return (pa < pb ? -1 : 1) * direction;
    const ua = a.ordStatus === 'Untriggered';
    const ub = b.ordStatus === 'Untriggered';
    if (ua !== ub) return ua ? 1 : -1;
    if (!ua) {
      const sa = a.slot < 0 ? Number.MAX_SAFE_INTEGER : a.slot;
      const sb = b.slot < 0 ? Number.MAX_SAFE_INTEGER : b.slot;
      if (sa !== sb) return sa - sb;
    }
    return a.orderId - b.orderId;
  };
}

/**
 * Shrinks the working order `orderId` by `cut` of its leaves (0 < cut < leaves): its total
 * quantity falls (cumQty is untouched), and while it rests its level's quantity falls with it in
 * place, keeping its time priority, as a pure decrease by replace does. Reported as an
 * `OrderReplaced` whose order carries reason `ReduceOnly` (a system amend: FIX would say
 * Restated) and whose `previous` has the quantity before.
 */
function shrinkOrder(ctx: Ctx, orderId: number, cut: bigint): void {
  const w = ctx.writableOrder(orderId);
  const before = w.quantity;
  shrinkInPlace(ctx, w, cut);
  reportRestated(ctx, w, before, 'ReduceOnly');
}

/** Why the engine changed an order's size by itself: the `reason` of its `OrderReplaced`. */
export type RestateReason = 'ReduceOnly' | 'PositionChanged' | 'ParentFilled' | 'ParentBust';

/**
 * Sets a waiting managed TP/SL's quantity to `quantity` (it is not on the book, so nothing else
 * moves) and reports it ({@link reportRestated}): a client learns its order's size from the
 * reports, never by re-implementing the sizing rules.
 */
function resize(ctx: Ctx, w: Order, quantity: bigint, reason: RestateReason): void {
  const before = w.quantity;
  w.quantity = quantity;
  reportRestated(ctx, w, before, reason);
}

/**
 * Reports a change of quantity the engine made by itself (from `previousQuantity`; price and
 * trigger stay) as `OrderReplaced` (FIX would say Restated) whose order carries `reason`, with
 * `previous` the figures before and `origCloid` the unchanged cloid.
 */
function reportRestated(ctx: Ctx, w: Order, previousQuantity: bigint, reason: RestateReason): void {
  w.updatedTime = ctx.time;
  ctx.report(w.account, {
    kind: 'OrderReplaced',
    order: viewAs(w, w.ordStatus, reason, ctx.time),
    origCloid: w.cloid,
    previous: { price: w.price, triggerPrice: w.triggerPrice, quantity: previousQuantity },
  });
}

/**
 * Re-clamps one sweep's reduce-only orders to a position of `abs`: walking them nearest first
 * ({@link byReach}), each keeps what is left of `abs` after the ones before it; a cut order is
 * shrunk ({@link shrinkOrder}), an order left with nothing is cancelled (reason ReduceOnly).
 * Nothing is sorted or written when the sweep already fits.
 */
function clampSweep(ctx: Ctx, orders: Order[], direction: 1 | -1, abs: bigint): void {
  let total = 0n;
  for (const o of orders) total += leavesOf(o);
  if (total <= abs) return;
  orders.sort(byReach(direction));
  let room = abs;
  for (const o of orders) {
    const current = ctx.order(o.orderId);
    if (current === undefined) continue; // ended by a follow-up of an earlier cancel
    const leaves = leavesOf(current);
    if (leaves <= room) {
      room -= leaves;
      continue;
    }
    if (room === 0n) cancelOrder(ctx, o.orderId, 'ReduceOnly');
    else shrinkOrder(ctx, o.orderId, leaves - room);
    room = 0n;
  }
}

/** Splits working reduce-only orders (ids) into their two sweeps and clamps each to `abs`. */
function clampSweeps(ctx: Ctx, ids: readonly number[], abs: bigint): void {
  const up: Order[] = [];
  const down: Order[] = [];
  for (const id of ids) {
    const o = ctx.order(id);
    if (o !== undefined) (sweepDirection(o) === 1 ? up : down).push(o);
  }
  if (up.length > 0) clampSweep(ctx, up, 1, abs);
  if (down.length > 0) clampSweep(ctx, down, -1, abs);
}

/**
 * The reduce-only re-clamp (engine-rules section 5, "re-clamped when the position shrinks"):
 * after it, the unmanaged reduce-only orders of the scope's closing side that one price move
 * reaches (the placement rule's sweeps, {@link sweepDirection}: for a long, the resting sells and the
 * take-profits upward, the stops downward; mirrored for a short) total at most `|position|` per
 * sweep, so together with the placement check no sweep can ever promise to close more than is
 * held. The orders nearest to the market keep their size: walking a sweep in reach order
 * ({@link byReach}), each keeps `min(leaves, |position| - what the orders before it kept)`; a
 * shrink lowers the total quantity and the level's quantity in place (time priority kept) and
 * is reported as `OrderReplaced` with reason `ReduceOnly`; an order left with nothing is
 * cancelled with reason `ReduceOnly`. Managed TP/SL are not clamped (they follow the position).
 * A flat position and orders on the position's side are {@link reconcileScopes}' (cancelled,
 * `PositionClosed` and `ReduceOnly`); this does nothing then.
 *
 * {@link reconcileScopes} runs it for every scope whose position changed (any fill, liquidation,
 * auction, ADL, bust), and `execute` for a reduce-only order about to rest (a triggered stop
 * joins the sweep of resting orders). Cheap when nothing is over: one walk of the scope's
 * guarded orders, which `guardedCount` already gates.
 */
export function clampReduceOnly(ctx: Ctx, scope: PendingScope): void {
  const size = sizeOf(ctx.account(scope.account)!, scope.market, scope.mode);
  if (size === 0n) return;
  const ids: number[] = [];
  for (const o of guardedOrders(ctx, scope)) {
    if (o.managed || size > 0n === (o.side === 'Buy')) continue;
    ids.push(o.orderId);
  }
  clampSweeps(ctx, ids, size < 0n ? -size : size);
}
