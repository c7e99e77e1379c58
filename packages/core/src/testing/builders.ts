/**
 * Friendly builders for commands, for tests, simulations and the demo: human decimal strings in,
 * raw signed-struct integers out.
 *
 * @module
 */
import type { OrderRequest } from '../engine/commands.js';
import { OrderFlags } from '../engine/commands.js';
import { ORDER_TYPES, type OrderType, TIME_IN_FORCES, type TimeInForce } from '../engine/types.js';
import type { Instrument, InstrumentSettings } from '../instruments/instrument.js';
import { buildInstrument } from '../instruments/instrument.js';
import { PRICE_DECIMALS, parseDecimal } from '../units/decimal.js';

/** Parses a decimal string at `decimals` places or throws (test input is trusted). */
export function units(text: string, decimals: number): bigint {
  const r = parseDecimal(text, decimals, true);
  if (!r.ok) throw new RangeError(`bad decimal "${text}" at ${decimals} decimals: ${r.error}`);
  return r.value;
}

/** A price string as raw 1e18 units. */
export function px(text: string): bigint {
  return units(text, PRICE_DECIMALS);
}

/** A collateral string as micro-units. */
export function usd(text: string): bigint {
  return units(text, 6);
}

/** Builds an instrument or throws. */
export function instrument(settings: InstrumentSettings): Instrument {
  const r = buildInstrument(settings);
  if (!r.ok) throw new Error(r.error);
  return r.instrument;
}

/**
 * A whole-lot perp for golden cases: tick 0.5, lot 1, 20x (maintenance 2.5 %) and 20x by
 * default, no trading fees and no liquidation fee, so hand-computed numbers stay in round units.
 */
export function wholeLotSettings(symbol: string, id = 1): InstrumentSettings {
  return {
    id,
    symbol,
    tickSize: '0.5',
    lotSize: '1',
    quantityDecimals: 0,
    maxLeverage: 20,
    defaultLeverage: 20,
    openInterestCap: '1000000',
    makerFeeRate: '0',
    takerFeeRate: '0',
    liquidation: { feeRate: '0' },
  };
}

/** Settings of a BTC-like perp used across tests: tick 0.5, lot 0.001 at 4 decimals, 40x. */
export const BTC_SETTINGS: InstrumentSettings = {
  id: 1,
  symbol: 'BTC-PERP',
  tickSize: '0.5',
  lotSize: '0.001',
  quantityDecimals: 4,
  maxLeverage: 40,
  defaultLeverage: 10,
  openInterestCap: '1000',
};

/** Settings of an ETH-like perp: tick 0.01, lot 0.001, 25x. */
export const ETH_SETTINGS: InstrumentSettings = {
  id: 2,
  symbol: 'ETH-PERP',
  tickSize: '0.01',
  lotSize: '0.001',
  quantityDecimals: 3,
  maxLeverage: 25,
  defaultLeverage: 5,
  openInterestCap: '100000',
};

/** Human description of an order for {@link orderRequest}. */
export interface OrderSpec {
  side: 'Buy' | 'Sell';
  /** Decimal quantity in base units. */
  qty: string;
  /** Decimal price; omit (or '0') for a market-style TP/SL. */
  price?: string | undefined;
  trigger?: string | undefined;
  type?: OrderType | undefined;
  tif?: TimeInForce | undefined;
  reduceOnly?: boolean | undefined;
  postOnly?: boolean | undefined;
  isolated?: boolean | undefined;
  managed?: boolean | undefined;
  /** GTD expiry, seconds. */
  expiry?: number | undefined;
  cloid?: string | null | undefined;
  parentCloid?: string | null | undefined;
}

/** A cloid from a small integer: `0x` + 32 hex digits. */
export function cloid(n: number): string {
  return `0x${n.toString(16).padStart(32, '0')}`;
}

/** Builds the signed-struct fields of an order on `spec`'s market. */
export function orderRequest(spec: Instrument, o: OrderSpec): OrderRequest {
  const flags =
    (o.isolated ? OrderFlags.ISOLATED : 0) |
    (o.reduceOnly ? OrderFlags.REDUCE_ONLY : 0) |
    (o.postOnly ? OrderFlags.POST_ONLY : 0) |
    (o.managed ? OrderFlags.MANAGED : 0);
  return {
    market: spec.id,
    isBuy: o.side === 'Buy',
    orderType: ORDER_TYPES.indexOf(o.type ?? 'Limit'),
    timeInForce: TIME_IN_FORCES.indexOf(o.tif ?? 'GTC'),
    price: o.price === undefined ? 0n : px(o.price),
    triggerPrice: o.trigger === undefined ? 0n : px(o.trigger),
    quantity: units(o.qty, spec.quantityDecimals),
    flags,
    expiry: BigInt(o.expiry ?? 0),
    cloid: o.cloid ?? null,
    parentCloid: o.parentCloid ?? null,
  };
}

/** A deterministic test wallet address from a small integer. */
export function wallet(n: number): string {
  return `0x${n.toString(16).padStart(40, '0')}`;
}
