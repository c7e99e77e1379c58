/**
 * The engine's state: plain records inside persistent maps. A record whose `edit` is the current
 * write session's token may be changed in place; any other record is shared with older versions
 * of the state and is copied first (see `engine/write.ts`).
 *
 * @module
 */
import type { Instrument } from '../instruments/instrument.js';
import type { Edit, Owned } from '../persistent/edit.js';
import type { PMap } from '../persistent/hamt.js';
import type { IdList } from '../persistent/id-list.js';
import type { IntMap } from '../persistent/int-map.js';
import type { TimeIdSet } from '../persistent/sorted-set.js';
import type { TradeLog } from '../risk/trade-log.js';

/** Order side. */
export type Side = 'Buy' | 'Sell';
/** Order types of the spec (signed `orderType` 0..3). */
export type OrderType = 'Limit' | 'StopLimit' | 'StopLoss' | 'TakeProfit';
/** Time in force values of the spec (signed `timeInForce` 0..4). */
export type TimeInForce = 'GTC' | 'GTD' | 'IOC' | 'FOK' | 'DAY';
/** Margin mode of a position, an order or a pool. */
export type MarginMode = 'Cross' | 'Isolated';
/** FIX OrdStatus values (research 6.4.3). */
export type OrdStatus =
  | 'Untriggered'
  | 'New'
  | 'PartiallyFilled'
  | 'Filled'
  | 'Cancelled'
  | 'Expired'
  | 'Rejected';

/** Signed order type codes, index = wire value. */
export const ORDER_TYPES: readonly OrderType[] = ['Limit', 'StopLimit', 'StopLoss', 'TakeProfit'];
/** Signed time-in-force codes, index = wire value. */
export const TIME_IN_FORCES: readonly TimeInForce[] = ['GTC', 'GTD', 'IOC', 'FOK', 'DAY'];

/** An order the engine knows: working (`Untriggered`, `New`, `PartiallyFilled`) or just ended. */
export interface Order extends Owned {
  readonly orderId: number;
  readonly account: string;
  readonly market: number;
  readonly side: Side;
  readonly orderType: OrderType;
  readonly timeInForce: TimeInForce;
  readonly marginMode: MarginMode;
  readonly reduceOnly: boolean;
  readonly postOnly: boolean;
  /** Managed TP/SL: sized by its position or by the entry order named by `parentCloid`. */
  readonly managed: boolean;
  readonly parentCloid: string | null;
  /**
   * A managed child's entry order: the id `parentCloid` named when the child was placed (0 for
   * a child converted from an older snapshot whose entry had already ended). The cloid can name
   * a later order once the entry ended and its retention ran out; the id cannot.
   */
  readonly entryOrderId: number | null;
  readonly createdTime: number;
  /** GTD/DAY expiry, ms; `null` for the other TIFs. */
  readonly expireTime: number | null;
  cloid: string | null;
  /** Limit price, raw (1e18). 0 for a market-style StopLoss/TakeProfit until it triggers. */
  price: bigint;
  /** Trigger price, raw; 0 for Limit. */
  triggerPrice: bigint;
  /** Total quantity (FIX OrderQty) after replaces, raw quantity units. */
  quantity: bigint;
  /** Filled quantity over non-busted fills. */
  cumQty: bigint;
  /** Sum of `lastQty x lastPx` (raw x raw) over non-busted fills, for `avgPx`. */
  filledNotional: bigint;
  ordStatus: OrdStatus;
  /** Cause of the last state change (research 6.4.3), `null` when none. */
  reason: string | null;
  updatedTime: number;
  /** Absolute slot in its price level while resting, -1 otherwise. */
  slot: number;
  /**
   * Whether an untriggered order is in its market's trigger lists. Managed children of an entry
   * order wait unarmed until the entry order's first fill.
   */
  armed: boolean;
}

/**
 * A fixed block of {@link LEVEL_CHUNK} slots of a level's FIFO. Chunks are copied one at a time
 * on first write in a session, so a batch that touches a deep level copies the chunks it writes,
 * not the whole queue.
 */
export interface LevelChunk extends Owned {
  /** Order ids; 0 marks an empty or removed slot. Always {@link LEVEL_CHUNK} long. */
  readonly ids: number[];
}

/** log2 of {@link LEVEL_CHUNK}. */
export const LEVEL_CHUNK_SHIFT = 5;
/** Slots per {@link LevelChunk}: a power of two (slot -> chunk is a shift and a mask). */
export const LEVEL_CHUNK = 1 << LEVEL_CHUNK_SHIFT;

/**
 * One price level: a FIFO of order ids in absolute slots (an order keeps its slot while it
 * rests), 0 marking a removed entry that is skipped lazily. Slot `s` lives in
 * `chunks[(s - base) / LEVEL_CHUNK]` at `s % LEVEL_CHUNK`; `base` is a multiple of the chunk size
 * and chunks wholly before `head` are dropped.
 */
export interface Level extends Owned {
  readonly price: bigint;
  chunks: LevelChunk[];
  /** Absolute slot of `chunks[0][0]`. */
  base: number;
  /** First slot that may hold a live order; slots before it are spent. */
  head: number;
  /** One past the last slot used. */
  tail: number;
  /** Live orders on the level. */
  count: number;
  /** Sum of the live orders' leaves quantity. */
  quantity: bigint;
}

/** An untriggered order waiting for the mark price. */
export interface TriggerEntry {
  readonly triggerPrice: bigint;
  readonly orderId: number;
}

/** Mark-price state of a market (engine-rules section 6). */
export interface PriceState {
  /** Last oracle (index) price, raw; `null` before the first oracle command. */
  readonly index: bigint | null;
  readonly indexTime: number;
  /** Mark price, raw; `null` before the first oracle command. */
  readonly mark: bigint | null;
  readonly markTime: number;
  /** EMA of (mid - index), numerator and denominator (exact, see risk/mark.ts). */
  readonly basisEmaNum: bigint;
  readonly basisEmaDen: bigint;
  readonly basisEmaTime: number;
}

/** Funding state of a market (engine-rules section 6). */
export interface FundingState {
  /** The last funding time settled, ms (a multiple of the interval); settled exactly once. */
  readonly lastFundingTime: number;
  /** Sum of the premium samples taken since the last settlement, rate scale (1e18). */
  readonly premiumSum: bigint;
  readonly sampleCount: number;
}

/** Market status: a paused market accepts cancels only. */
export type MarketStatus = 'Active' | 'Paused';

/** A market: settings, book, prices, open interest and untriggered orders. */
export interface Market extends Owned {
  spec: Instrument;
  status: MarketStatus;
  /** Bid levels by ascending price: the best bid is the last element. */
  bids: Level[];
  /** Ask levels by descending price: the best ask is the last element. */
  asks: Level[];
  /** Increases on every book change; the market-data `seq`. */
  bookSeq: number;
  prices: PriceState;
  /** Last trade price, raw; `null` before the first trade. */
  lastTrade: bigint | null;
  /** Sum of long position sizes, raw quantity. */
  openInterest: bigint;
  /** Orders that fire when mark >= trigger (buy stops, sell take-profits), ascending trigger. */
  triggersAbove: TriggerEntry[];
  /** Orders that fire when mark <= trigger (sell stops, buy take-profits), descending trigger. */
  triggersBelow: TriggerEntry[];
  funding: FundingState;
  /**
   * Accounts with a position in this market -> their number of positions here (cross and
   * isolated): funding, liquidation checks on a mark move and ADL look only at these.
   */
  holders: PMap<string, number>;
}

/**
 * A position, keyed by (market, margin mode). Owned by its account: copied with it and changed
 * in place.
 */
export interface Position {
  readonly market: number;
  readonly mode: MarginMode;
  /** Signed size `szi`, raw quantity units. */
  size: bigint;
  /**
   * With {@link entryQty}, the entry price `entryNotional / entryQty`: the size-weighted average
   * of the old entry and each increasing fill since the position was last flat or flipped.
   * Reducing fills leave both alone, so `entryQty` may exceed `|size|` until the next increase
   * re-weights the entry by the size (`entryNotionalAt` in margin/ledger.ts).
   */
  entryNotional: bigint;
  /** The entry price's denominator, raw quantity units (see {@link entryNotional}). */
  entryQty: bigint;
  /** Time the position was opened (ADL tie-break: older first). */
  openedTime: number;
  /** Realized PnL since opened, micro-units (display). */
  realizedPnl: bigint;
  /** Funding received (+) or paid (-) since opened, micro-units (display). */
  fundingSinceOpen: bigint;
}

/**
 * Resting-order totals of one (market, mode) scope, the input to order holds. Owned by its
 * account: copied with it and changed in place.
 */
export interface OrderTotals {
  readonly market: number;
  readonly mode: MarginMode;
  /** Leaves quantity of resting buy orders that are not reduce-only. */
  buyQty: bigint;
  /** Sum of leaves x price over those orders (raw x raw). */
  buyNotional: bigint;
  sellQty: bigint;
  sellNotional: bigint;
  /**
   * Upper bounds on the leaves quantity of any one order counted in the buy (sell) totals; 0 when
   * that side is empty. A hold whose reducing room covers the bound is the side's whole notional,
   * so it needs no walk over the account's orders (`margin/scope.ts` `sideHoldNotional`).
   */
  buyMaxLeaves: bigint;
  sellMaxLeaves: bigint;
  /** Working reduce-only and managed orders of the scope (they follow the position). */
  guardedCount: number;
}

/** A leverage setting away from the instrument default. */
export interface LeverageSetting {
  readonly market: number;
  readonly mode: MarginMode;
  /** x100. */
  readonly leverage: number;
}

/** An isolated margin pool of one market. */
export interface IsolatedPool {
  readonly market: number;
  /** Pool cash `Ri`, micro-units (may be negative while a long is open). */
  readonly cash: bigint;
}

/** One wallet's trading account. */
export interface Account extends Owned {
  /** Lowercase wallet address. */
  readonly address: string;
  readonly createdTime: number;
  /** Last execution-report `seq` assigned to this account. */
  reportSeq: number;
  /** Cross pool cash `Rc`, micro-units. */
  crossCash: bigint;
  isolated: IsolatedPool[];
  positions: Position[];
  leverage: LeverageSetting[];
  orderTotals: OrderTotals[];
  /**
   * Ids of the account's working orders, ascending: ids are handed out in order, so this is
   * oldest first. A chunked persistent list: a write session copies only the chunk it changes,
   * so an account with tens of thousands of orders costs no more per command than one with ten.
   */
  orders: IdList;
  /** Reserved margin of pending liquidation-auction claims, micro-units. */
  claimReserve: bigint;
}

/** A cloid's owner, kept while the order works and for 24 h after acceptance. */
export interface CloidEntry {
  readonly orderId: number;
  readonly acceptedTime: number;
}

/** Venue-wide settings that are not per instrument. */
export interface VenueSettings {
  /** How long a trade stays bustable (its record is kept), ms. */
  readonly tradeRetentionMs: number;
  /** At most this many trade records are kept (oldest dropped first). */
  readonly maxRetainedTrades: number;
  /** Pre-trade and match-time margin checks (off only for book-only simulations). */
  readonly marginChecks: boolean;
  /** How long a cloid stays reserved after its order was accepted, ms. */
  readonly cloidRetentionMs: number;
  /**
   * Most working orders (resting and untriggered, every market and margin mode) one account may
   * hold: a placement that could rest beyond it is refused with 4000. It bounds the memory one
   * account can take, as venues do (Hyperliquid: 1,000 open orders per address). Lowering it
   * cancels nothing; the account places again once it is below.
   */
  readonly maxWorkingOrdersPerAccount: number;
}

/** Monotonic id counters. Ids are JSON-safe integers (below 2^53). */
export interface Counters {
  order: number;
  trade: number;
  exec: number;
  command: number;
  liquidation: number;
  auction: number;
}

/** The whole engine state. Treat as immutable: only `reduce` produces new versions. */
export interface EngineState {
  /** @internal The write session that may mutate this object in place. */
  edit: Edit | null;
  /** Time of the last command, ms. */
  time: number;
  /** Number of commands applied. */
  commandCount: number;
  /**
   * The engine rules the log declared last (`declareRules`), `null` before any declaration: the
   * commands since were reduced under them by whoever wrote the log.
   */
  rulesVersion: number | null;
  counters: Counters;
  settings: VenueSettings;
  markets: PMap<number, Market>;
  /** Symbol -> market id. */
  symbols: PMap<string, number>;
  accounts: PMap<string, Account>;
  /** Working orders by id. */
  orders: IntMap<Order>;
  /** `${account}|${cloid}` -> entry. */
  cloids: PMap<string, CloidEntry>;
  /** Cloid registrations in acceptance order, for pruning after the retention time. */
  cloidLog: { readonly head: number; readonly tail: number; readonly entries: IntMap<string> };
  /** GTD/DAY expiries, ascending by (expireTime, orderId). */
  expiries: TimeIdSet;
  /** Invite codes by code. */
  referralCodes: PMap<string, ReferralCode>;
  /** Applied referrals (app access) by wallet; first touch, never changed. */
  referrals: PMap<string, Referral>;
  /** Consumed wallet nonces `${wallet}|${nonce}` -> arrival time, kept while replayable. */
  nonces: PMap<string, number>;
  /** Consumed nonces in arrival order, for pruning. */
  nonceLog: { readonly head: number; readonly tail: number; readonly entries: IntMap<string> };
  /** Deposits and withdrawals waiting for the chain adapter, by command id. */
  pending: PMap<number, PendingChainCommand>;
  /** Earliest next funding time over all markets, ms; `null` with no market. */
  fundingDue: number | null;
  /** Live liquidation auctions by id. */
  auctions: IntMap<Auction>;
  /**
   * Recent trades by id (bust window), for busts and entry-price rebuilding, column-stored (see
   * {@link TradeLog}); read them as {@link TradeRecord}s through `risk/trades.ts`.
   */
  trades: TradeLog;
  /** Lowest trade id that may still be in `trades` (pruning cursor). */
  tradeLogHead: number;
  /** Fees collected, micro-units. */
  feePool: bigint;
  /** Insurance fund, micro-units. */
  insuranceFund: bigint;
  /** Collateral that entered (settled deposits) and left (accepted withdrawals), micro-units. */
  totalDeposits: bigint;
  totalWithdrawals: bigint;
}

/** A deposit or withdrawal submitted to the chain adapter and not yet settled. */
export interface PendingChainCommand {
  readonly kind: 'deposit' | 'withdrawal';
  readonly commandId: number;
  readonly account: string;
  /** Micro-units. */
  readonly amount: bigint;
  readonly mode: MarginMode;
  /** Market id for isolated, 0 for cross. */
  readonly market: number;
  readonly submittedTime: number;
}

/** An invite code. */
export interface ReferralCode {
  readonly code: string;
  readonly kind: 'system' | 'attributed';
  /** Owner of an attributed code (lowercase address); `null` for system codes. */
  readonly owner: string | null;
  readonly maxUses: number;
  readonly uses: number;
  readonly revoked: boolean;
  readonly createdTime: number;
}

/** A wallet's applied referral: its app access and its immutable attribution. */
export interface Referral {
  readonly wallet: string;
  readonly code: string;
  readonly kind: 'system' | 'attributed';
  readonly referrer: string | null;
  readonly time: number;
}

/** A position's fields just before a fill: where a bust starts rebuilding it. */
export interface PositionSnapshot {
  readonly size: bigint;
  readonly entryNotional: bigint;
  readonly entryQty: bigint;
  readonly openedTime: number;
  readonly realizedPnl: bigint;
  readonly fundingSinceOpen: bigint;
}

/** Where a fill came from. */
export type TradeSource = 'Order' | 'Liquidation' | 'Auction' | 'ADL';

/** One account's side of a recorded trade. */
export interface TradeLeg {
  readonly account: string;
  readonly mode: MarginMode;
  /** The order that traded, 0 for a system fill (liquidation, auction, ADL). */
  readonly orderId: number;
  readonly liquidity: 'Maker' | 'Taker';
  /** Signed size change of the position. */
  readonly signedQty: bigint;
  /** Fee paid to the fee pool (negative: rebate), micro-units. */
  readonly fee: bigint;
  /** Liquidation fee paid to the insurance fund, micro-units. */
  readonly penalty: bigint;
  readonly realizedPnl: bigint;
  /** The position before this fill (kept up to date by busts of earlier trades). */
  readonly before: PositionSnapshot;
}

/** A trade kept for the bust window. */
export interface TradeRecord {
  readonly tradeId: number;
  readonly market: number;
  readonly time: number;
  readonly source: TradeSource;
  /** Raw price and quantity. */
  readonly price: bigint;
  readonly quantity: bigint;
  /** Cash leg, micro-units (the buyer pays it, the seller receives it). */
  readonly quote: bigint;
  /** Maker (or the system counterparty) first, then taker (or the liquidated account). */
  readonly legs: readonly [TradeLeg, TradeLeg];
  readonly busted: boolean;
}

/**
 * A {@link TradeRecord} as the trade log reads and writes it: one flat record, both legs and
 * their "before" positions inline (suffix 0: the first leg, 1: the second). The log itself keeps
 * these fields in columns ({@link TradeLog}) and builds a record on each read. Convert with
 * `tradeOfStored` / `storedOfTrade` (`risk/trades.ts`).
 */
export interface StoredTrade {
  readonly tradeId: number;
  readonly market: number;
  readonly time: number;
  readonly source: TradeSource;
  readonly price: bigint;
  readonly quantity: bigint;
  readonly quote: bigint;
  busted: boolean;
  account0: string;
  mode0: MarginMode;
  orderId0: number;
  liquidity0: 'Maker' | 'Taker';
  signedQty0: bigint;
  fee0: bigint;
  penalty0: bigint;
  realizedPnl0: bigint;
  size0: bigint;
  entryNotional0: bigint;
  entryQty0: bigint;
  openedTime0: number;
  positionPnl0: bigint;
  funding0: bigint;
  account1: string;
  mode1: MarginMode;
  orderId1: number;
  liquidity1: 'Maker' | 'Taker';
  signedQty1: bigint;
  fee1: bigint;
  penalty1: bigint;
  realizedPnl1: bigint;
  size1: bigint;
  entryNotional1: bigint;
  entryQty1: bigint;
  openedTime1: number;
  positionPnl1: bigint;
  funding1: bigint;
}

/** A claim on a liquidation auction, settled when the auction ends or is fully claimed. */
export interface AuctionClaim {
  readonly claimant: string;
  readonly quantity: bigint;
  /** Auction price at claim time, raw. */
  readonly price: bigint;
  /** Initial margin reserved on the claimant's cross pool, micro-units. */
  readonly reserve: bigint;
  readonly time: number;
}

/** A live liquidation auction (engine-rules section 7 step 3). */
export interface Auction {
  readonly auctionId: number;
  readonly liquidationId: number;
  /** The liquidated scope. */
  readonly account: string;
  readonly market: number;
  readonly mode: MarginMode;
  /** The side a claimant takes (`Buy` when a long is being liquidated). */
  readonly side: Side;
  /** Quantity offered and quantity not yet claimed, raw. */
  readonly quantity: bigint;
  readonly remaining: bigint;
  /** Mark at the start, raw. */
  readonly startPrice: bigint;
  /** Bankruptcy price at the start, raw. */
  readonly endPrice: bigint;
  readonly startTime: number;
  readonly endTime: number;
  readonly claims: readonly AuctionClaim[];
  /** Mark and liquidation price when the liquidation was triggered (reports). */
  readonly markPrice: bigint;
  readonly liquidationPrice: bigint | null;
  /** An operator's forced liquidation: the unclaimed rest is deleveraged even if healthy. */
  readonly forced: boolean;
}
