/**
 * `cancelOrder` and `cancelAll`. A target that is unknown, already terminal, in another market
 * or owned by another wallet is 4041 (existence is never revealed), after the nonce is consumed.
 *
 * @module
 */
import { admitRequest } from '../access/admission.js';
import type { CancelAllCommand, CancelOrderCommand } from '../engine/commands.js';
import type { Ctx } from '../engine/context.js';
import { type Rejection, reject } from '../errors.js';
import { accountOrders } from '../margin/scope.js';
import { cloidTarget } from './cloids.js';
import { cancelOrder } from './execution.js';
import { latestOrder } from './place.js';

/** Largest order id a request can name (ids are JSON-safe integers). */
const MAX_ORDER_ID = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * Finds a working order of `account` in `market` by id or by its current cloid (a cloid that a
 * replace superseded finds nothing: 4041, as an unknown order).
 */
export function findWorkingOrder(
  ctx: Ctx,
  account: string,
  market: number,
  orderId: bigint,
  cloid: string | null,
): number | undefined {
  let id: number | undefined;
  if (orderId !== 0n) {
    if (orderId <= MAX_ORDER_ID) id = Number(orderId);
  } else if (cloid !== null) {
    id = cloidTarget(ctx, account, cloid);
  }
  if (id === undefined) return undefined;
  const order = ctx.order(id);
  if (order === undefined || order.account !== account || order.market !== market) return undefined;
  return id;
}

/**
 * The order id a cancel or replace named, for its 4041 (which names what it could, so the client
 * needs no extra query); nothing when it named a cloid or an id no order can have.
 */
export function namedOrderId(orderId: bigint): { orderId?: number } {
  return orderId !== 0n && orderId <= MAX_ORDER_ID ? { orderId: Number(orderId) } : {};
}

/**
 * A market a cancel, cancel-all or replace names that no instrument has. The listed markets are
 * public: naming one that does not exist is bad input (4000, nothing consumed), as for a new
 * order, not a target that might exist (4041).
 */
export function unknownMarket(ctx: Ctx, market: number): Rejection | undefined {
  return ctx.market(market) === undefined
    ? reject('INVALID_REQUEST', `unknown market ${market}`)
    : undefined;
}

/** Checks the target fields shared by cancel and replace; `undefined` when well formed. */
export function targetProblem(orderId: bigint, cloid: string | null): string | undefined {
  if ((orderId === 0n) === (cloid === null)) return 'exactly one of orderId and cloid must be set';
  return undefined;
}

/** Handles a `cancelOrder` command. */
export function cancelOrderCommand(ctx: Ctx, cmd: CancelOrderCommand): void {
  const bad = targetProblem(cmd.orderId, cmd.cloid);
  if (bad !== undefined) {
    const r = reject('INVALID_REQUEST', bad);
    return ctx.fail(r.code, r.message);
  }
  const unlisted = unknownMarket(ctx, cmd.market);
  if (unlisted !== undefined) return ctx.fail(unlisted.code, unlisted.message);
  if (ctx.account(cmd.account) === undefined) {
    const r = reject('ACCOUNT_NOT_FOUND', `no trading account for ${cmd.account}`);
    return ctx.fail(r.code, r.message);
  }
  if (!admitRequest(ctx, cmd.account, cmd.auth, 'cancel')) return;
  const id = findWorkingOrder(ctx, cmd.account, cmd.market, cmd.orderId, cmd.cloid);
  if (id === undefined) {
    const target = cmd.orderId !== 0n ? `order ${cmd.orderId}` : `cloid ${cmd.cloid}`;
    const r = reject(
      'ORDER_NOT_FOUND',
      `${target} is not working (filled, cancelled, expired or unknown)`,
    );
    return ctx.fail(r.code, r.message, {
      nonceConsumed: true,
      ...namedOrderId(cmd.orderId),
      cloid: cmd.cloid,
    });
  }
  cancelOrder(ctx, id, 'User');
  // The seq of the last report this request produced: the cancel's own, or a follow-up's
  // (children of a cancelled entry, ParentCancelled).
  const seq = ctx.account(cmd.account)!.reportSeq;
  ctx.emit({ type: 'outcome', ok: true, kind: 'cancel', order: latestOrder(ctx, id), seq });
}

/** Handles a `cancelAll` command (`market` 0 = every market). */
export function cancelAllCommand(ctx: Ctx, cmd: CancelAllCommand): void {
  const unlisted = cmd.market === 0 ? undefined : unknownMarket(ctx, cmd.market);
  if (unlisted !== undefined) return ctx.fail(unlisted.code, unlisted.message);
  const account = ctx.account(cmd.account);
  if (account === undefined) {
    const r = reject('ACCOUNT_NOT_FOUND', `no trading account for ${cmd.account}`);
    return ctx.fail(r.code, r.message);
  }
  if (!admitRequest(ctx, cmd.account, cmd.auth, 'cancel')) return;
  const ids = accountOrders(ctx.state, account)
    .filter((o) => cmd.market === 0 || o.market === cmd.market)
    .map((o) => o.orderId);
  for (const id of ids) {
    // An earlier cancel may have ended a dependent order (ParentCancelled).
    if (ctx.order(id) !== undefined) cancelOrder(ctx, id, 'User');
  }
  // Every order the command ended, the children its entries took with them included: as many
  // as the `OrderCancelled` reports it sent, whatever order the orders were walked in.
  let cancelled = 0;
  for (const id of ids) if (ctx.order(id) === undefined) cancelled++;
  ctx.emit({
    type: 'outcome',
    ok: true,
    kind: 'cancelAll',
    cancelled,
    seq: ctx.account(cmd.account)!.reportSeq,
  });
}
