/**
 * Events: what a command did. Execution reports go to one account's trading stream; the outcome
 * answers the request that carried the command; the rest feed market data and account pushes.
 * Events carry immutable snapshots (an order in a report shows that moment, forever).
 *
 * @module
 */

import type { ReferralError } from '../access/referral.js';
import type { ErrorCodeValue } from '../errors.js';
import type { MarginMode, Order, Referral, ReferralCode, Side } from './types.js';

/** An immutable snapshot of an order at one moment, as reports and outcomes carry it. */
export type OrderView = Readonly<Omit<Order, 'edit' | 'slot' | 'armed'>>;

/** Takes a snapshot of an order. */
export function viewOf(o: Order): OrderView {
  return {
    orderId: o.orderId,
    account: o.account,
    market: o.market,
    side: o.side,
    orderType: o.orderType,
    timeInForce: o.timeInForce,
    marginMode: o.marginMode,
    reduceOnly: o.reduceOnly,
    postOnly: o.postOnly,
    managed: o.managed,
    parentCloid: o.parentCloid,
    createdTime: o.createdTime,
    expireTime: o.expireTime,
    cloid: o.cloid,
    price: o.price,
    triggerPrice: o.triggerPrice,
    quantity: o.quantity,
    cumQty: o.cumQty,
    filledNotional: o.filledNotional,
    ordStatus: o.ordStatus,
    reason: o.reason,
    updatedTime: o.updatedTime,
  };
}

/** Execution report kinds (research 6.4.3, plus `LiquidationClaim`). */
export type ExecKind =
  | 'OrderAccepted'
  | 'OrderRejected'
  | 'OrderTriggered'
  | 'OrderPartiallyFilled'
  | 'OrderFilled'
  | 'OrderCancelled'
  | 'OrderExpired'
  | 'OrderReplaced'
  | 'TradeBust'
  | 'Liquidation'
  | 'ADL'
  | 'LiquidationClaim'
  | 'Funding'
  | 'DepositMargin'
  | 'WithdrawMargin'
  | 'TransferMargin'
  | 'UpdateLeverage';

/** One side of a fill as its account sees it (research 6.4.2 `Trade`). */
export interface Fill {
  readonly tradeId: number;
  readonly market: number;
  readonly side: Side;
  readonly marginMode: MarginMode;
  /** Raw quantity. */
  readonly quantity: bigint;
  /** Raw price. */
  readonly price: bigint;
  /** Cash leg, micro-units, rounded half-even once per fill. */
  readonly quote: bigint;
  readonly liquidity: 'Maker' | 'Taker';
  /** Micro-units charged; negative is a rebate. */
  readonly fee: bigint;
  /** On the reducing part, before fee, micro-units (half-even, display). */
  readonly realizedPnl: bigint;
  readonly positionBefore: bigint;
  readonly positionAfter: bigint;
  readonly time: number;
}

/** Fields every execution report has. */
interface ReportBase {
  readonly type: 'executionReport';
  readonly account: string;
  /** Per account, +1 per report. */
  readonly seq: number;
  /** Unique across the venue. */
  readonly execId: number;
  readonly time: number;
}

/** An order lifecycle report. */
export interface OrderReport extends ReportBase {
  readonly kind:
    | 'OrderAccepted'
    | 'OrderTriggered'
    | 'OrderPartiallyFilled'
    | 'OrderFilled'
    | 'OrderCancelled'
    | 'OrderExpired';
  readonly order: OrderView;
  readonly fill?: Fill | undefined;
  /** `OrderTriggered`: the mark price that fired it. */
  readonly markPrice?: bigint | undefined;
}

/** A business rejection after signature and nonce checks. */
export interface OrderRejectedReport extends ReportBase {
  readonly kind: 'OrderRejected';
  readonly order: OrderView;
  readonly code: ErrorCodeValue;
  readonly message: string;
}

/** An accepted amend. */
export interface OrderReplacedReport extends ReportBase {
  readonly kind: 'OrderReplaced';
  readonly order: OrderView;
  readonly origCloid: string | null;
  readonly previous: {
    readonly price: bigint;
    readonly triggerPrice: bigint;
    readonly quantity: bigint;
  };
}

/** Completion of a margin or leverage command. */
export interface CommandReport extends ReportBase {
  readonly kind: 'DepositMargin' | 'WithdrawMargin' | 'TransferMargin' | 'UpdateLeverage';
  readonly commandId: number;
  readonly status: 'Completed' | 'Failed';
  readonly market: number;
  readonly marginMode: MarginMode;
  /** Micro-units (deposit, withdrawal, transfer). */
  readonly amount?: bigint | undefined;
  readonly direction?: 'crossToIsolated' | 'isolatedToCross' | undefined;
  /** x100 (leverage updates). */
  readonly leverage?: number | undefined;
  readonly previousLeverage?: number | undefined;
  readonly txHash?: string | undefined;
  readonly code?: ErrorCodeValue | undefined;
  readonly message?: string | undefined;
}

/** Every execution report. */
export type ExecutionReport =
  | OrderReport
  | OrderRejectedReport
  | OrderReplacedReport
  | CommandReport;

/** The answer to the request that carried the command (exactly one per command). */
export type Outcome =
  | {
      readonly type: 'outcome';
      readonly ok: false;
      readonly code: ErrorCodeValue;
      readonly message: string;
      /** A 4041 names what it could, so the client needs no extra query. */
      readonly orderId?: number | undefined;
      readonly cloid?: string | null | undefined;
      /** Business refusals of margin commands still get a command id (status `Rejected`). */
      readonly commandId?: number | undefined;
      /** Whether the signed request's nonce was consumed. */
      readonly nonceConsumed: boolean;
      /** The 422 reason of a refused referral application. */
      readonly referralError?: ReferralError | undefined;
    }
  | {
      readonly type: 'outcome';
      readonly ok: true;
      readonly kind: 'order' | 'cancel' | 'replace';
      readonly order: OrderView;
      readonly origCloid?: string | null | undefined;
      /** Seq of the last report this command produced for the account. */
      readonly seq: number;
    }
  | {
      readonly type: 'outcome';
      readonly ok: true;
      readonly kind: 'cancelAll';
      readonly cancelled: number;
      readonly seq: number;
    }
  | {
      readonly type: 'outcome';
      readonly ok: true;
      readonly kind: 'command';
      readonly commandId: number;
      readonly status: 'Submitted';
    }
  | {
      readonly type: 'outcome';
      readonly ok: true;
      readonly kind: 'referralCode';
      readonly code: ReferralCode;
    }
  | {
      readonly type: 'outcome';
      readonly ok: true;
      readonly kind: 'referral';
      readonly referral: Referral;
    }
  | {
      readonly type: 'outcome';
      readonly ok: true;
      readonly kind: 'authenticated';
      readonly account: string;
      /** Whether this authentication created the account. */
      readonly created: boolean;
    }
  | { readonly type: 'outcome'; readonly ok: true; readonly kind: 'done' };

/** An account's position, margin or balance changed: a spec push trigger. */
export interface AccountChanged {
  readonly type: 'accountChanged';
  readonly account: string;
  readonly time: number;
}

/** A market's book changed (market-data `seq`). */
export interface BookChanged {
  readonly type: 'bookChanged';
  readonly market: number;
  readonly bookSeq: number;
}

/** A public trade print. */
export interface TradePrint {
  readonly type: 'trade';
  readonly market: number;
  readonly tradeId: number;
  readonly price: bigint;
  readonly quantity: bigint;
  readonly takerSide: Side;
  readonly time: number;
}

/** New index and mark prices. */
export interface MarkChanged {
  readonly type: 'markChanged';
  readonly market: number;
  readonly index: bigint;
  readonly mark: bigint;
  readonly time: number;
}

/** A market was listed, changed, paused or resumed. */
export interface MarketChanged {
  readonly type: 'marketChanged';
  readonly market: number;
}

/** Every event. */
export type EngineEvent =
  | ExecutionReport
  | Outcome
  | AccountChanged
  | BookChanged
  | TradePrint
  | MarkChanged
  | MarketChanged;
