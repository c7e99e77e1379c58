/**
 * Engine values to their JSON wire form (research 6.1 and 6.4.2, adopted by protocol.md):
 * canonical decimal strings in human units, u64 ids as decimal strings, addresses lowercase,
 * times as integer milliseconds.
 *
 * @module
 */
import {
  type EngineState,
  type ExecutionReport,
  type Fill,
  formatCollateral,
  formatDecimal,
  formatPrice,
  formatRational,
  type Instrument,
  type OrderView,
  ratio,
} from '@perp/core';

/** The wire `Order` object of research 6.4.2. */
export interface WireOrder {
  orderId: string;
  cloid: string | null;
  account: string;
  instrument: string;
  market: number;
  side: 'Buy' | 'Sell';
  orderType: string;
  timeInForce: string;
  marginMode: string;
  price: string | null;
  triggerPrice: string | null;
  quantity: string;
  cumQty: string;
  leavesQty: string;
  avgPx: string | null;
  reduceOnly: boolean;
  postOnly: boolean;
  managed: boolean;
  parentCloid: string | null;
  expireTime: number | null;
  ordStatus: string;
  reason: string | null;
  createdTime: number;
  updatedTime: number;
}

/** Resolves a market id to its instrument (live or delisted). */
export type SpecOf = (market: number) => Instrument;

/** A resolver over a state's markets. */
export function specsOf(state: EngineState): SpecOf {
  return (market) => {
    const m = state.markets.get(market);
    if (m === undefined) throw new Error(`unknown market ${market}`);
    return m.spec;
  };
}

const TERMINAL = new Set(['Filled', 'Cancelled', 'Expired', 'Rejected']);

/** Average fill price: `filledNotional / cumQty`, half-even at 18 decimals; `null` unfilled. */
export function averagePrice(order: OrderView): string | null {
  if (order.cumQty === 0n) return null;
  return formatRational(ratio(order.filledNotional, order.cumQty * 10n ** 18n), 18);
}

/** An order snapshot on the wire. */
export function wireOrder(order: OrderView, spec: Instrument): WireOrder {
  const qd = spec.quantityDecimals;
  return {
    orderId: String(order.orderId),
    cloid: order.cloid,
    account: order.account,
    instrument: spec.symbol,
    market: order.market,
    side: order.side,
    orderType: order.orderType,
    timeInForce: order.timeInForce,
    marginMode: order.marginMode,
    price: order.price === 0n ? null : formatPrice(order.price),
    triggerPrice: order.triggerPrice === 0n ? null : formatPrice(order.triggerPrice),
    quantity: formatDecimal(order.quantity, qd),
    cumQty: formatDecimal(order.cumQty, qd),
    leavesQty: TERMINAL.has(order.ordStatus)
      ? '0'
      : formatDecimal(order.quantity - order.cumQty, qd),
    avgPx: averagePrice(order),
    reduceOnly: order.reduceOnly,
    postOnly: order.postOnly,
    managed: order.managed,
    parentCloid: order.parentCloid,
    expireTime: order.expireTime,
    ordStatus: order.ordStatus,
    reason: order.reason,
    createdTime: order.createdTime,
    updatedTime: order.updatedTime,
  };
}

/** The wire `Trade` object of research 6.4.2. */
export interface WireTrade {
  tradeId: string;
  instrument: string;
  side: 'Buy' | 'Sell';
  lastQty: string;
  lastPx: string;
  quoteQty: string;
  liquidity: 'Maker' | 'Taker';
  fee: string;
  realizedPnl: string;
  positionBefore: string;
  positionAfter: string;
  time: number;
}

/** One side of a fill on the wire. */
export function wireTrade(fill: Fill, spec: Instrument): WireTrade {
  const qd = spec.quantityDecimals;
  return {
    tradeId: String(fill.tradeId),
    instrument: spec.symbol,
    side: fill.side,
    lastQty: formatDecimal(fill.quantity, qd),
    lastPx: formatPrice(fill.price),
    quoteQty: formatCollateral(fill.quote),
    liquidity: fill.liquidity,
    fee: formatCollateral(fill.fee),
    realizedPnl: formatCollateral(fill.realizedPnl),
    positionBefore: formatDecimal(fill.positionBefore, qd),
    positionAfter: formatDecimal(fill.positionAfter, qd),
    time: fill.time,
  };
}

/** An execution report on the wire (`type: executionReport`). */
export function wireReport(
  report: ExecutionReport,
  specOf: SpecOf,
  replay = false,
): Record<string, unknown> {
  const base: Record<string, unknown> = {
    type: 'executionReport',
    seq: report.seq,
    execId: String(report.execId),
    kind: report.kind,
    account: report.account,
    time: report.time,
  };
  if (replay) base.replay = true;
  if ('order' in report) {
    const spec = specOf(report.order.market);
    base.order = wireOrder(report.order, spec);
    if ('fill' in report && report.fill !== undefined) base.trade = wireTrade(report.fill, spec);
    if (report.kind === 'OrderTriggered') {
      base.triggerPrice = formatPrice(report.order.triggerPrice);
      if (report.markPrice !== undefined) base.markPrice = formatPrice(report.markPrice);
    } else if (report.kind === 'OrderRejected') {
      base.code = report.code;
      base.message = report.message;
    } else if (report.kind === 'OrderReplaced') {
      base.origCloid = report.origCloid;
      base.previous = {
        price: report.previous.price === 0n ? null : formatPrice(report.previous.price),
        triggerPrice:
          report.previous.triggerPrice === 0n ? null : formatPrice(report.previous.triggerPrice),
        quantity: formatDecimal(report.previous.quantity, spec.quantityDecimals),
      };
    }
    return base;
  }
  // Risk-engine reports (research 6.4.4 kind-specific fields).
  switch (report.kind) {
    case 'Funding': {
      const spec = specOf(report.market);
      base.instrument = spec.symbol;
      base.marginMode = report.marginMode;
      base.fundingTime = report.fundingTime;
      base.fundingRate = formatDecimal(report.fundingRate, 18);
      base.positionSize = formatDecimal(report.positionSize, spec.quantityDecimals);
      base.indexPrice = formatPrice(report.indexPrice);
      base.markPrice = report.markPrice === null ? null : formatPrice(report.markPrice);
      base.payment = formatCollateral(report.payment);
      return base;
    }
    case 'Liquidation': {
      const spec = specOf(report.market);
      base.liquidationId = String(report.liquidationId);
      base.instrument = spec.symbol;
      base.marginMode = report.marginMode;
      base.method = report.method;
      base.markPrice = formatPrice(report.markPrice);
      base.liquidationPrice =
        report.liquidationPrice === null ? null : formatPrice(report.liquidationPrice);
      base.penalty = formatCollateral(report.penalty);
      base.trade = wireTrade(report.fill, spec);
      return base;
    }
    case 'ADL': {
      const spec = specOf(report.market);
      base.adlId = String(report.adlId);
      base.instrument = spec.symbol;
      base.marginMode = report.marginMode;
      base.rank = report.rank;
      base.trade = wireTrade(report.fill, spec);
      return base;
    }
    case 'LiquidationClaim': {
      const spec = specOf(report.market);
      base.auctionId = String(report.auctionId);
      base.instrument = spec.symbol;
      base.status = report.status;
      base.quantity = formatDecimal(report.quantity, spec.quantityDecimals);
      base.price = formatPrice(report.price);
      if (report.fill !== undefined) base.trade = wireTrade(report.fill, spec);
      return base;
    }
    case 'TradeBust': {
      const spec = specOf(report.market);
      // A working order from the engine, or an ended one the replay buffer restated
      // (`read/report-streams.ts`).
      const order = report.workingOrder ?? (report as { endedOrder?: OrderView }).endedOrder;
      if (order !== undefined) base.order = wireOrder(order, spec);
      base.trade = wireTrade(report.fill, spec);
      base.bustReason = report.bustReason;
      base.positionAfter = formatDecimal(report.positionAfter, spec.quantityDecimals);
      return base;
    }
    default:
      break;
  }
  // Margin and leverage command reports: `command_id` keeps the spec's snake_case.
  const r = report;
  base.command_id = r.commandId;
  base.status = r.status;
  base.instrument = r.market === 0 ? null : specOf(r.market).symbol;
  base.marginMode = r.marginMode;
  if (r.amount !== undefined) base.amount = formatCollateral(r.amount);
  if (r.direction !== undefined) base.direction = r.direction;
  if (r.leverage !== undefined) base.leverage = r.leverage;
  if (r.previousLeverage !== undefined) base.previousLeverage = r.previousLeverage;
  if (r.txHash !== undefined) base.txHash = r.txHash;
  if (r.code !== undefined) base.code = r.code;
  if (r.message !== undefined) base.message = r.message;
  return base;
}
