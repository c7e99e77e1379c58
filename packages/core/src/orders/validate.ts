/**
 * Field validation of an order request: order type, time in force, price and quantity grids
 * (codes 4030-4034). These checks read only the request, the instrument and the command time, so
 * adapters can run them before paying for a signature recovery; a failure here changes nothing
 * and consumes no nonce.
 *
 * @module
 */

import { OrderFlags, type OrderRequest } from '../engine/commands.js';
import {
  type EngineState,
  type MarginMode,
  ORDER_TYPES,
  type OrderType,
  TIME_IN_FORCES,
  type TimeInForce,
} from '../engine/types.js';
import { type Rejection, reject } from '../errors.js';
import type { Instrument } from '../instruments/instrument.js';
import { formatDecimal, formatPrice } from '../units/decimal.js';

const KNOWN_FLAGS =
  OrderFlags.ISOLATED | OrderFlags.REDUCE_ONLY | OrderFlags.POST_ONLY | OrderFlags.MANAGED;
/** Largest price the engine accepts (keeps products far from any practical overflow). */
const MAX_PRICE = 10n ** 36n;
/** Largest raw quantity the engine accepts. */
const MAX_QUANTITY = 10n ** 36n;
const CLOID_RE = /^0x[0-9a-f]{32}$/;
const DAY_MS = 86_400_000;
const MAX_SAFE_MS = BigInt(Number.MAX_SAFE_INTEGER);

/** An order request that passed field validation, in engine terms. */
export interface ValidOrder {
  readonly spec: Instrument;
  readonly side: 'Buy' | 'Sell';
  readonly orderType: OrderType;
  readonly timeInForce: TimeInForce;
  readonly marginMode: MarginMode;
  readonly reduceOnly: boolean;
  readonly postOnly: boolean;
  readonly managed: boolean;
  readonly price: bigint;
  readonly triggerPrice: bigint;
  readonly quantity: bigint;
  readonly expireTime: number | null;
  readonly cloid: string | null;
  readonly parentCloid: string | null;
}

/** Whether a price is positive, bounded and on the instrument's tick grid. */
export function checkPrice(spec: Instrument, price: bigint, what: string): Rejection | undefined {
  if (price <= 0n) return reject('INVALID_ORDER_PRICE', `${what} must be positive`);
  if (price > MAX_PRICE) return reject('INVALID_ORDER_PRICE', `${what} is out of range`);
  if (price % spec.tickSize !== 0n) {
    return reject(
      'INVALID_ORDER_PRICE',
      `${what} ${formatPrice(price)} is not a multiple of the tick size ${formatPrice(spec.tickSize)}`,
    );
  }
  return undefined;
}

/** Whether a quantity is positive, bounded and on the instrument's lot grid. */
export function checkQuantity(spec: Instrument, quantity: bigint): Rejection | undefined {
  if (quantity <= 0n) return reject('INVALID_ORDER_QUANTITY', 'quantity must be positive');
  if (quantity > MAX_QUANTITY) {
    return reject('INVALID_ORDER_QUANTITY', 'quantity is out of range');
  }
  if (quantity % spec.lotSize !== 0n) {
    return reject(
      'INVALID_ORDER_QUANTITY',
      `quantity ${formatDecimal(quantity, spec.quantityDecimals)} is not a multiple of the lot size ${formatDecimal(spec.lotSize, spec.quantityDecimals)}`,
    );
  }
  return undefined;
}

/** Result of {@link validateOrderRequest}. */
export type ValidationResult = { ok: true; order: ValidOrder } | { ok: false; error: Rejection };

const fail = (error: Rejection): ValidationResult => ({ ok: false, error });

/** Whether a cloid field is unset or well formed; `name` goes into the refusal. */
function checkCloid(name: string, value: string | null): Rejection | undefined {
  if (value === null || CLOID_RE.test(value)) return undefined;
  return reject('INVALID_REQUEST', `${name} must be 0x followed by 32 lowercase hex digits`);
}

/** Validates the fields of an order request against the market's settings at `time`. */
export function validateOrderRequest(
  state: EngineState,
  request: OrderRequest,
  time: number,
): ValidationResult {
  const market = state.markets.get(request.market);
  if (market === undefined)
    return fail(reject('INVALID_REQUEST', `unknown market ${request.market}`));
  const spec = market.spec;
  const orderType = ORDER_TYPES[request.orderType];
  if (orderType === undefined || !Number.isInteger(request.orderType)) {
    return fail(reject('INVALID_ORDER_TYPE', `order type ${request.orderType} is not one of 0-3`));
  }
  const timeInForce = TIME_IN_FORCES[request.timeInForce];
  if (timeInForce === undefined || !Number.isInteger(request.timeInForce)) {
    return fail(
      reject('INVALID_TIME_IN_FORCE', `time in force ${request.timeInForce} is not one of 0-4`),
    );
  }
  if ((request.flags & ~KNOWN_FLAGS) !== 0) {
    return fail(reject('INVALID_REQUEST', `unknown flag bits 0x${request.flags.toString(16)}`));
  }
  const postOnly = (request.flags & OrderFlags.POST_ONLY) !== 0;
  const managed = (request.flags & OrderFlags.MANAGED) !== 0;
  const isStopOrTake = orderType === 'StopLoss' || orderType === 'TakeProfit';
  // Price rules per order type (research 7.3.2 word 6 and 7).
  if (orderType === 'Limit' || orderType === 'StopLimit') {
    const bad = checkPrice(spec, request.price, 'price');
    if (bad) return fail(bad);
  } else if (request.price !== 0n) {
    const bad = checkPrice(spec, request.price, 'price');
    if (bad) return fail(bad);
  }
  if (orderType === 'Limit') {
    if (request.triggerPrice !== 0n) {
      return fail(reject('INVALID_ORDER_PRICE', 'a Limit order has no trigger price'));
    }
  } else {
    const bad = checkPrice(spec, request.triggerPrice, 'trigger price');
    if (bad) return fail(bad);
  }
  const badQty = checkQuantity(spec, request.quantity);
  if (badQty) return fail(badQty);
  if (managed && !isStopOrTake) {
    return fail(reject('INVALID_REQUEST', 'only StopLoss and TakeProfit orders can be managed'));
  }
  if (request.parentCloid !== null && !managed) {
    return fail(reject('INVALID_REQUEST', 'parentCloid is only valid on a managed TP/SL'));
  }
  if (postOnly && (orderType !== 'Limit' || timeInForce === 'IOC' || timeInForce === 'FOK')) {
    return fail(
      reject('INVALID_TIME_IN_FORCE', 'post-only needs a resting Limit order (GTC, GTD or DAY)'),
    );
  }
  // Checked in this order, so the first bad field is the one named.
  const badCloid =
    checkCloid('cloid', request.cloid) ?? checkCloid('parentCloid', request.parentCloid);
  if (badCloid) return fail(badCloid);
  let expireTime: number | null = null;
  if (timeInForce === 'GTD') {
    const ms = request.expiry * 1000n;
    if (request.expiry <= 0n || ms <= BigInt(time)) {
      return fail(reject('INVALID_TIME_IN_FORCE', 'GTD expiry must be in the future'));
    }
    expireTime = ms > MAX_SAFE_MS ? Number.MAX_SAFE_INTEGER : Number(ms);
  } else {
    if (request.expiry !== 0n) {
      return fail(reject('INVALID_TIME_IN_FORCE', `expiry must be 0 for ${timeInForce}`));
    }
    if (timeInForce === 'DAY') expireTime = (Math.floor(time / DAY_MS) + 1) * DAY_MS;
  }
  return {
    ok: true,
    order: {
      spec,
      side: request.isBuy ? 'Buy' : 'Sell',
      orderType,
      timeInForce,
      marginMode: (request.flags & OrderFlags.ISOLATED) !== 0 ? 'Isolated' : 'Cross',
      // StopLoss and TakeProfit close a position, so they are reduce-only by nature.
      reduceOnly: (request.flags & OrderFlags.REDUCE_ONLY) !== 0 || isStopOrTake,
      postOnly,
      managed,
      price: request.price,
      triggerPrice: request.triggerPrice,
      quantity: request.quantity,
      expireTime,
      cloid: request.cloid,
      parentCloid: request.parentCloid,
    },
  };
}
