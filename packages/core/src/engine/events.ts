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
  return viewAs(o, o.ordStatus, o.reason, o.updatedTime);
}

/**
 * A snapshot of an order with its status, reason and update time replaced (an order that just
 * ended). Built field by field like {@link viewOf}, so every snapshot shares one object shape.
 */
export function viewAs(
  o: Order,
  ordStatus: Order['ordStatus'],
  reason: string | null,
  updatedTime: number,
): OrderView {
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
    entryOrderId: o.entryOrderId,
    createdTime: o.createdTime,
    expireTime: o.expireTime,
    cloid: o.cloid,
    price: o.price,
    triggerPrice: o.triggerPrice,
    quantity: o.quantity,
    cumQty: o.cumQty,
    filledNotional: o.filledNotional,
    ordStatus,
    reason,
    updatedTime,
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

/** Funding settled for one position (research 6.4.4). */
export interface FundingReport extends ReportBase {
  readonly kind: 'Funding';
  readonly market: number;
  readonly marginMode: MarginMode;
  /** The funding time settled, ms (the operator's settle-now uses the command time). */
  readonly fundingTime: number;
  /** Rate per interval, rate scale (1e18), signed: positive means longs pay. */
  readonly fundingRate: bigint;
  /** Signed position size, raw. */
  readonly positionSize: bigint;
  /** Index (oracle) price the payment used, raw. */
  readonly indexPrice: bigint;
  /** Mark at settlement, raw; `null` before the first oracle. */
  readonly markPrice: bigint | null;
  /** Micro-units, signed: + received, - paid. */
  readonly payment: bigint;
}

/** How a liquidation fill happened. */
export type LiquidationMethod = 'Market' | 'Auction' | 'ADL';

/** The engine closed (part of) this account's position in a liquidated scope. */
export interface LiquidationReport extends ReportBase {
  readonly kind: 'Liquidation';
  readonly liquidationId: number;
  readonly market: number;
  readonly marginMode: MarginMode;
  readonly method: LiquidationMethod;
  /** Mark when the liquidation was triggered, raw. */
  readonly markPrice: bigint;
  /** The position's liquidation price when triggered, raw (half-even), `null` if none. */
  readonly liquidationPrice: bigint | null;
  /** Liquidation fee of this fill paid to the insurance fund, micro-units. */
  readonly penalty: bigint;
  /** The system fill (`liquidity` Taker; `fee` 0, the fee is `penalty`). */
  readonly fill: Fill;
}

/** Auto-deleveraging reduced this account's position (the counterparty side of an ADL fill). */
export interface AdlReport extends ReportBase {
  readonly kind: 'ADL';
  /** The liquidation that needed the ADL. */
  readonly adlId: number;
  readonly market: number;
  readonly marginMode: MarginMode;
  /** 1-based place in the ADL queue. */
  readonly rank: number;
  /**
   * Price is the bankruptcy price (recomputed after any insurance-fund cover), or a capped price when
   * the counterparty's own scope could not absorb more (docs/risk-engine.md).
   */
  readonly fill: Fill;
}

/** A liquidation-auction claim settled (with its fill) or released (no fill). */
export interface LiquidationClaimReport extends ReportBase {
  readonly kind: 'LiquidationClaim';
  readonly auctionId: number;
  readonly market: number;
  readonly status: 'Settled' | 'Released';
  /** Claimed quantity, raw, and the claim price, raw. */
  readonly quantity: bigint;
  readonly price: bigint;
  /** The margin reservation released, micro-units. */
  readonly reserve: bigint;
  readonly fill?: Fill | undefined;
}

/** A reported fill was reversed (research 6.4.3 `TradeBust`). */
export interface TradeBustReport extends ReportBase {
  readonly kind: 'TradeBust';
  readonly tradeId: number;
  readonly market: number;
  readonly marginMode: MarginMode;
  /** The order that traded (0 for a system fill). */
  readonly orderId: number;
  /** The order after the bust, when it is still working. */
  readonly workingOrder?: OrderView | undefined;
  /** The busted fill as this account saw it. */
  readonly fill: Fill;
  readonly bustReason: string;
  /** Signed position size after the bust, raw. */
  readonly positionAfter: bigint;
}

/** Every execution report. */
export type ExecutionReport =
  | OrderReport
  | OrderRejectedReport
  | OrderReplacedReport
  | CommandReport
  | FundingReport
  | LiquidationReport
  | AdlReport
  | LiquidationClaimReport
  | TradeBustReport;

/** One position's funding payment, in a settlement outcome. */
export interface FundingPayment {
  readonly account: string;
  readonly marginMode: MarginMode;
  readonly positionSize: bigint;
  readonly payment: bigint;
}

/** One market's funding settlement. */
export interface FundingSettlement {
  readonly market: number;
  readonly fundingTime: number;
  /** Rate per interval, rate scale. */
  readonly rate: bigint;
  /** Average premium of the samples used, rate scale; 0 without samples. */
  readonly premium: bigint;
  readonly sampleCount: number;
  /** Index price used, raw; `null` (nothing paid) before the first oracle. */
  readonly indexPrice: bigint | null;
  readonly payments: readonly FundingPayment[];
  /** Rounding residue sent to the insurance fund (payers round up, receivers down), micro. */
  readonly residue: bigint;
}

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
      /**
       * Whether the refusal came after admission: the signed request's nonce (its `auth`) is
       * consumed and the command counts, so `reduceAll` reports it as a change (a command without
       * `auth` has no nonce to consume, yet counts all the same). False for a refusal before
       * admission, which changes nothing but time-driven work that fell due.
       */
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
  | {
      readonly type: 'outcome';
      readonly ok: true;
      readonly kind: 'funding';
      readonly settlements: readonly FundingSettlement[];
    }
  | {
      readonly type: 'outcome';
      readonly ok: true;
      readonly kind: 'liquidation';
      readonly liquidationId: number;
      readonly account: string;
      readonly market: number;
      readonly marginMode: MarginMode;
      /** How far the process got within the command. */
      readonly result: LiquidationResult;
    }
  | {
      readonly type: 'outcome';
      readonly ok: true;
      readonly kind: 'claim';
      readonly auctionId: number;
      readonly quantity: bigint;
      readonly price: bigint;
      /** Seq of the last report this command produced for the claimant (0 when none). */
      readonly seq: number;
    }
  | {
      readonly type: 'outcome';
      readonly ok: true;
      readonly kind: 'bust';
      readonly tradeId: number;
      readonly market: number;
      readonly accounts: readonly string[];
    }
  | {
      readonly type: 'outcome';
      readonly ok: true;
      readonly kind: 'insuranceTransfer';
      /** Both venue pools after the transfer, micro-units. */
      readonly insuranceFund: bigint;
      readonly feePool: bigint;
    }
  | {
      readonly type: 'outcome';
      readonly ok: true;
      readonly kind: 'feePayout';
      readonly account: string;
      /** Paid, micro-units, and the fee pool after. */
      readonly amount: bigint;
      readonly feePool: bigint;
    }
  | { readonly type: 'outcome'; readonly ok: true; readonly kind: 'done' };

/**
 * Where a liquidation stopped: healthy again after the book, waiting in auctions, or closed by
 * ADL (the scope is then flat).
 */
export type LiquidationResult = 'Healthy' | 'Auction' | 'Closed';

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

/**
 * A liquidation auction as the market-data `liquidations` channel shows it (engine units):
 * the same shape as the service's `LiveAuction`.
 */
export interface AuctionView {
  readonly auctionId: number;
  readonly market: number;
  /** The side a claimant takes (`Buy` when a long is being liquidated). */
  readonly side: Side;
  /** Quantity still to claim, raw. */
  readonly remaining: bigint;
  /** Current auction price, raw. */
  readonly price: bigint;
  readonly startPrice: bigint;
  readonly endPrice: bigint;
  readonly endTime: number;
  readonly status: 'Live' | 'Ended';
}

/** An auction started, was claimed or ended. */
export interface AuctionChanged {
  readonly type: 'auction';
  readonly auction: AuctionView;
}

/** A liquidation started (automatically or by the operator). */
export interface LiquidationStarted {
  readonly type: 'liquidationStarted';
  readonly liquidationId: number;
  readonly account: string;
  readonly market: number;
  readonly marginMode: MarginMode;
  readonly manual: boolean;
  /** Scope equity and maintenance margin when triggered, micro-units. */
  readonly equity: bigint;
  readonly maintenanceMargin: bigint;
  readonly time: number;
}

/** Funding settled in a market (market data, audit). */
export interface FundingSettled {
  readonly type: 'fundingSettled';
  readonly settlement: FundingSettlement;
}

/** A trade was busted: the history store flags it (both accounts also get `TradeBust`). */
export interface TradeBusted {
  readonly type: 'tradeBusted';
  readonly tradeId: number;
  readonly market: number;
  readonly accounts: readonly string[];
  readonly reason: string;
  readonly time: number;
}

/**
 * The insurance fund changed: a liquidation fee came in, a deficit was paid, a funding residue
 * came in, or the operator moved collateral from or to the fee pool (`Transfer`).
 */
export interface InsuranceChanged {
  readonly type: 'insurance';
  /** Signed change, micro-units, and the balance after. */
  readonly delta: bigint;
  readonly balance: bigint;
  readonly reason: 'LiquidationFee' | 'Deficit' | 'FundingResidue' | 'Transfer';
  readonly time: number;
}

/**
 * The last resort of rule 7.5: a liquidated scope, flat, still owed more than the insurance fund
 * held; the venue's fee pool (its own trading revenue) paid what it could. Emitted whenever such
 * a deficit remains after the fund, even when the fee pool paid nothing, so a `debt` above zero
 * (the venue's shortfall, left on the account) is always reported.
 */
export interface BackstopPaid {
  readonly type: 'backstop';
  readonly account: string;
  readonly marginMode: MarginMode;
  /** Market id for an isolated scope, 0 for cross. */
  readonly market: number;
  /** Paid from the fee pool into the scope's pool, micro-units (>= 0). */
  readonly amount: bigint;
  /** Fee pool balance after the payment. */
  readonly feePool: bigint;
  /** What stays unpaid on the scope's pool, micro-units (>= 0). */
  readonly debt: bigint;
  readonly time: number;
}

/** Every event. */
export type EngineEvent =
  | ExecutionReport
  | Outcome
  | AccountChanged
  | BookChanged
  | TradePrint
  | MarkChanged
  | MarketChanged
  | AuctionChanged
  | LiquidationStarted
  | FundingSettled
  | TradeBusted
  | InsuranceChanged
  | BackstopPaid;
