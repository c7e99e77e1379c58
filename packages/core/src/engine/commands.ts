/**
 * Commands: everything that can change the engine's state. Every command carries its `time`
 * (ms, stamped by the adapter's sequencer); nothing else tells the core what time it is.
 * Order and margin commands arrive with their signature already verified by an adapter (see
 * `auth/`), so they carry the signer's wallet and the signed fields as plain values.
 *
 * @module
 */
import type { Instrument } from '../instruments/instrument.js';
import type { MarginMode, MarketStatus } from './types.js';

/** Freshness fields of a signed request; the engine checks and consumes the nonce. */
export interface RequestAuth {
  /** Wallet nonce, ms. */
  readonly nonce: bigint;
  /** Signed deadline, seconds. */
  readonly deadline: bigint;
}

/** The fields of a signed Order struct (research 7.3.2), raw integers as signed. */
export interface OrderRequest {
  readonly market: number;
  readonly isBuy: boolean;
  /** 0 Limit, 1 StopLimit, 2 StopLoss, 3 TakeProfit; anything else is refused with 4030. */
  readonly orderType: number;
  /** 0 GTC, 1 GTD, 2 IOC, 3 FOK, 4 DAY; anything else is refused with 4031. */
  readonly timeInForce: number;
  /** Raw price (1e18). */
  readonly price: bigint;
  /** Raw trigger price (1e18); 0 for Limit. */
  readonly triggerPrice: bigint;
  /** Raw quantity (10^quantityDecimals). */
  readonly quantity: bigint;
  /** Bit 0 isolated, bit 1 reduce-only, bit 2 post-only, bit 3 managed TP/SL. */
  readonly flags: number;
  /** GTD expiry, seconds; 0 otherwise. */
  readonly expiry: bigint;
  /** `0x` + 32 hex, or `null` for none. */
  readonly cloid: string | null;
  readonly parentCloid: string | null;
}

/** Flag bits of the Order struct. */
export const OrderFlags = {
  ISOLATED: 1,
  REDUCE_ONLY: 2,
  POST_ONLY: 4,
  MANAGED: 8,
} as const;

/** Places an order. */
export interface PlaceOrderCommand {
  readonly type: 'placeOrder';
  readonly time: number;
  /** Lowercase wallet address of the (verified) signer. */
  readonly account: string;
  readonly order: OrderRequest;
  readonly auth?: RequestAuth | undefined;
}

/** Cancels one order by venue id or by cloid (exactly one of them). */
export interface CancelOrderCommand {
  readonly type: 'cancelOrder';
  readonly time: number;
  readonly account: string;
  readonly market: number;
  /** Venue order id, or 0n. */
  readonly orderId: bigint;
  /** Client order id, or `null`. */
  readonly cloid: string | null;
  readonly auth?: RequestAuth | undefined;
}

/** Amends price, trigger price and total quantity of a working order. */
export interface ReplaceOrderCommand {
  readonly type: 'replaceOrder';
  readonly time: number;
  readonly account: string;
  readonly market: number;
  readonly orderId: bigint;
  readonly origCloid: string | null;
  readonly price: bigint;
  readonly triggerPrice: bigint;
  /** New total quantity; must exceed the order's cumQty. */
  readonly quantity: bigint;
  /** New cloid, or `null` to keep the current one. */
  readonly cloid: string | null;
  readonly auth?: RequestAuth | undefined;
}

/** Cancels every working order of the account in one market, or in all (`market` 0). */
export interface CancelAllCommand {
  readonly type: 'cancelAll';
  readonly time: number;
  readonly account: string;
  readonly market: number;
  readonly auth?: RequestAuth | undefined;
}

/** Oracle (index) prices from the price feed; recomputes marks and fires triggers. */
export interface OracleCommand {
  readonly type: 'oracle';
  readonly time: number;
  readonly prices: readonly { readonly market: number; readonly price: bigint }[];
}

/** Lists a new market or replaces the settings of an existing one. */
export interface SetInstrumentCommand {
  readonly type: 'setInstrument';
  readonly time: number;
  readonly instrument: Instrument;
}

/** Pauses or resumes a market. */
export interface SetMarketStatusCommand {
  readonly type: 'setMarketStatus';
  readonly time: number;
  readonly market: number;
  readonly status: MarketStatus;
}

/** Creates the trading account of a wallet if it does not exist yet. */
export interface OpenAccountCommand {
  readonly type: 'openAccount';
  readonly time: number;
  readonly account: string;
}

/** Where margin lives: the cross pool, or one market's isolated pool. */
export interface MarginTarget {
  readonly mode: MarginMode;
  /** Market id for `Isolated`, 0 for `Cross`. */
  readonly market: number;
}

/** A deposit authorised by permit + vault signature; settles later through the chain adapter. */
export interface DepositCommand {
  readonly type: 'deposit';
  readonly time: number;
  readonly account: string;
  /** Micro-units. */
  readonly amount: bigint;
  readonly target: MarginTarget;
  readonly auth?: RequestAuth | undefined;
}

/** The chain adapter's result for a deposit or a withdrawal. */
export interface SettlementCommand {
  readonly type: 'settleDeposit' | 'settleWithdrawal';
  readonly time: number;
  readonly commandId: number;
  readonly success: boolean;
  readonly txHash?: string | undefined;
  /** Why the chain refused it, when it did. */
  readonly reason?: string | undefined;
}

/** A withdrawal to the wallet; the amount is debited at acceptance. */
export interface WithdrawCommand {
  readonly type: 'withdraw';
  readonly time: number;
  readonly account: string;
  readonly amount: bigint;
  readonly target: MarginTarget;
  readonly auth?: RequestAuth | undefined;
}

/** Moves collateral between the cross pool and one market's isolated pool. */
export interface TransferMarginCommand {
  readonly type: 'transferMargin';
  readonly time: number;
  readonly account: string;
  readonly amount: bigint;
  readonly market: number;
  readonly direction: 'crossToIsolated' | 'isolatedToCross';
  readonly auth?: RequestAuth | undefined;
}

/** Sets the leverage of one (market, mode) scope. */
export interface UpdateLeverageCommand {
  readonly type: 'updateLeverage';
  readonly time: number;
  readonly account: string;
  readonly market: number;
  readonly mode: MarginMode;
  /** x100. */
  readonly leverage: number;
  readonly auth?: RequestAuth | undefined;
}

/** Operator: mints an invite code (a generated one when `code` is absent). */
export interface CreateReferralCodeCommand {
  readonly type: 'createReferralCode';
  readonly time: number;
  readonly code?: string | undefined;
  readonly kind: 'system' | 'attributed';
  readonly owner?: string | undefined;
  readonly maxUses: number;
}

/** Operator: revokes an invite code. */
export interface RevokeReferralCodeCommand {
  readonly type: 'revokeReferralCode';
  readonly time: number;
  readonly code: string;
}

/** `POST /referral/apply` after its headers and personal_sign signature were verified. */
export interface ApplyReferralCommand {
  readonly type: 'applyReferral';
  readonly time: number;
  /** Lowercase wallet (the recovered signer). */
  readonly wallet: string;
  readonly code: string;
  /** The `x-nonce` header. */
  readonly nonce: string;
  /** The `x-timestamp` header, ms. */
  readonly timestamp: number;
}

/** WebSocket `authenticate` after its personal_sign signature was verified. */
export interface AuthenticateCommand {
  readonly type: 'authenticate';
  readonly time: number;
  readonly account: string;
  /** The signed ms nonce. */
  readonly nonce: bigint;
}

/** Advances time with nothing else to do: applies due expiries. */
export interface TickCommand {
  readonly type: 'tick';
  readonly time: number;
}

/**
 * Declares the engine rules the commands after it are reduced under (a venue journals one when a
 * build with other rules opens its journal; {@link ENGINE_RULES_VERSION}). The reducer records
 * it in `state.rulesVersion`; replaying commands declared under other rules is the host's call.
 */
export interface DeclareRulesCommand {
  readonly type: 'declareRules';
  readonly time: number;
  /** A positive whole number. */
  readonly version: number;
  /**
   * How many commands right before it (declarations among them included) were themselves
   * replayed under `version` when it was journaled (a host that replayed records of other rules
   * because the operator said so, onto the state it recovered): a later replay of those under
   * `version` reproduces the state everything after was built on. The commands before them keep
   * the rules they were declared under.
   */
  readonly replayed?: number | undefined;
}

/**
 * Operator: settles funding now (`POST /admin/funding/settle`) for one market or all (`market`
 * 0 or absent): one full interval's rate from the samples so far; the hourly schedule is not
 * moved (engine-rules section 6).
 */
export interface SettleFundingCommand {
  readonly type: 'settleFunding';
  readonly time: number;
  readonly market?: number | undefined;
}

/**
 * Operator: starts the liquidation of a scope (`POST /admin/liquidate`). Refused when the scope
 * is not liquidatable, unless `force`.
 */
export interface LiquidateCommand {
  readonly type: 'liquidate';
  readonly time: number;
  readonly account: string;
  readonly mode: MarginMode;
  /** Market id for `Isolated`; ignored (0) for `Cross`. */
  readonly market: number;
  readonly force?: boolean | undefined;
}

/**
 * A signed ClaimLiquidation (0x0b): claim part of a live auction at its current price, never
 * above `maxPrice` for a buy (below for a sell). The claim reserves initial margin on the
 * claimant's cross pool and settles when the auction ends or is fully claimed.
 */
export interface ClaimLiquidationCommand {
  readonly type: 'claimLiquidation';
  readonly time: number;
  readonly account: string;
  readonly auctionId: number;
  /** Raw quantity units. */
  readonly quantity: bigint;
  /** Raw price (1e18). */
  readonly maxPrice: bigint;
  readonly auth?: RequestAuth | undefined;
}

/** Operator: busts a trade by id (`POST /admin/trades/:tradeId/bust`), engine-rules section 8. */
export interface BustTradeCommand {
  readonly type: 'bustTrade';
  readonly time: number;
  readonly tradeId: number;
  readonly reason: string;
}

/**
 * Operator: moves collateral between the venue's own pools (`POST /admin/insurance-fund/transfer`),
 * from the fee pool into the insurance fund or back (see `risk/venue-funds.ts`).
 */
export interface InsuranceTransferCommand {
  readonly type: 'insuranceTransfer';
  readonly time: number;
  readonly direction: 'ToInsuranceFund' | 'ToFeePool';
  /** Micro-units, > 0. */
  readonly amount: bigint;
}

/**
 * Operator: pays collateral from the fee pool into an account's cross pool
 * (`POST /admin/fee-pool/payout`): revenue out to the operator's own account, which withdraws
 * it like any collateral, or a compensation (see `risk/venue-funds.ts`).
 */
export interface FeePayoutCommand {
  readonly type: 'feePayout';
  readonly time: number;
  /** Lowercase wallet address of an existing account. */
  readonly account: string;
  /** Micro-units, > 0. */
  readonly amount: bigint;
}

/**
 * Operator: changes the venue-wide settings an operator may set (a host journals one at start-up
 * when its configuration differs from the state's, so a replay applies it at the same place).
 */
export interface SetVenueSettingsCommand {
  readonly type: 'setVenueSettings';
  readonly time: number;
  /** See `VenueSettings.maxWorkingOrdersPerAccount`; at least 1. */
  readonly maxWorkingOrdersPerAccount: number;
}

/** Every command the engine accepts. */
export type Command =
  | PlaceOrderCommand
  | CancelOrderCommand
  | ReplaceOrderCommand
  | CancelAllCommand
  | OracleCommand
  | SetInstrumentCommand
  | SetMarketStatusCommand
  | OpenAccountCommand
  | DepositCommand
  | SettlementCommand
  | WithdrawCommand
  | TransferMarginCommand
  | UpdateLeverageCommand
  | CreateReferralCodeCommand
  | RevokeReferralCodeCommand
  | ApplyReferralCommand
  | AuthenticateCommand
  | TickCommand
  | DeclareRulesCommand
  | SettleFundingCommand
  | LiquidateCommand
  | ClaimLiquidationCommand
  | BustTradeCommand
  | InsuranceTransferCommand
  | FeePayoutCommand
  | SetVenueSettingsCommand;
