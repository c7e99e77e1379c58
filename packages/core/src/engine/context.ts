/**
 * The write session of one `reduce` (or one batch): the state being built, the events produced so
 * far, and copy-on-write accessors. Every mutation of engine state goes through these accessors,
 * which copy a record the first time this session writes it and mutate it in place afterwards.
 *
 * @module
 */
import type { ReferralError } from '../access/referral.js';
import type { ErrorCodeValue } from '../errors.js';
import { type Edit, newEdit } from '../persistent/edit.js';
import {
  type EngineEvent,
  type ExecutionReport,
  type Fill,
  type OrderReport,
  type OrderView,
  viewOf,
} from './events.js';
import { copyAccount, copyLevel, copyMarket, copyOrder } from './records.js';
import type { Account, EngineState, Level, MarginMode, Market, Order } from './types.js';

/** A (account, market, mode) scope queued for the order rules that follow a position. */
export interface PendingScope {
  readonly account: string;
  readonly market: number;
  readonly mode: MarginMode;
}

/** Distributes `Omit` over a union, so each report kind keeps its own fields. */
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;
/** An execution report before the context numbers it. */
export type ReportDraft = DistributiveOmit<
  ExecutionReport,
  'type' | 'seq' | 'execId' | 'account' | 'time'
>;

/**
 * The root record of a write session: a shallow copy of `state` (and of its counters) owned by
 * `edit`. Written out field by field: every copy gets one object shape, and the compiler checks
 * that a new state field is not forgotten. An object spread of the root cost about twice as much.
 */
function ownedCopy(state: EngineState, edit: Edit): EngineState {
  return {
    edit,
    time: state.time,
    commandCount: state.commandCount,
    rulesVersion: state.rulesVersion,
    counters: {
      order: state.counters.order,
      trade: state.counters.trade,
      exec: state.counters.exec,
      command: state.counters.command,
      liquidation: state.counters.liquidation,
      auction: state.counters.auction,
    },
    settings: state.settings,
    markets: state.markets,
    symbols: state.symbols,
    accounts: state.accounts,
    orders: state.orders,
    cloids: state.cloids,
    cloidLog: state.cloidLog,
    expiries: state.expiries,
    referralCodes: state.referralCodes,
    referrals: state.referrals,
    nonces: state.nonces,
    nonceLog: state.nonceLog,
    pending: state.pending,
    fundingDue: state.fundingDue,
    auctions: state.auctions,
    trades: state.trades,
    tradeLogHead: state.tradeLogHead,
    feePool: state.feePool,
    insuranceFund: state.insuranceFund,
    totalDeposits: state.totalDeposits,
    totalWithdrawals: state.totalWithdrawals,
  };
}

/** The mutable context handlers write through. */
export class Ctx {
  readonly edit: Edit;
  /** The state under construction; owned by {@link edit}. */
  state: EngineState;
  /** Events of the current command. */
  events: EngineEvent[];
  /** Time of the current command, ms. */
  time: number;
  // Per-command scratch; short arrays (usually 0-2 entries) beat Sets and Maps here.
  /** Accounts whose position, margin or balance changed in the current command. */
  private changed: string[] = [];
  /**
   * The same accounts as a set once there are many (a funding settlement or a liquidation sweep
   * marks every holder): a scan of the list per mark made those commands quadratic.
   */
  private changedSet: Set<string> | null = null;
  /** Markets whose book changed in the current command. */
  private books: Market[] = [];
  /** Scopes whose position changed and whose reduce-only and managed orders need a look. */
  private scopes: PendingScope[] = [];
  /** Markets whose mark moved in the current command: their holders get liquidation checks. */
  movedMarkets: number[] = [];
  /**
   * Current version of each account read in this session. Every change of `state.accounts`
   * goes through this class, so the cache never goes stale; it saves re-hashing addresses.
   */
  private readonly accountCache: Map<string, Account> = new Map();
  /**
   * The last account looked up, in front of {@link accountCache}: a command reads the same one
   * or two accounts many times, and comparing the same string object is cheaper than a hash
   * look-up. Updated by every method that stores an account version.
   */
  private lastAddress: string | null = null;
  private lastAccount: Account | undefined = undefined;
  /**
   * Trade-log pruning cursor seen by `pruneTrades` in this session and the time of the record it
   * stopped at: while the cursor stays there, nothing is due before that time plus retention.
   * Records never change their time, so this is a pure cache of the state.
   */
  tradePruneHead = -1;
  tradePruneTime = 0;
  /**
   * Whether fills are written to the trade log. A throw-away trial match (FOK) turns this off:
   * nothing reads the log during matching, and a trial's appends would make the real session's
   * next append copy the log's shared chunk.
   */
  recordsTrades = true;

  constructor(state: EngineState) {
    this.edit = newEdit();
    this.state = ownedCopy(state, this.edit);
    this.events = [];
    this.time = state.time;
  }

  /**
   * Records a new last trade of `market`. Where the market has no mark yet, its positions are
   * valued at the last trade (`valuationPrice`), so a new price moves every holder's equity as a
   * mark move does: the market joins {@link movedMarkets} and its holders get liquidation checks.
   */
  setLastTrade(market: Market, price: bigint): void {
    if (
      market.prices.mark === null &&
      market.lastTrade !== price &&
      !this.movedMarkets.includes(market.spec.id)
    ) {
      this.movedMarkets.push(market.spec.id);
    }
    market.lastTrade = price;
  }

  /** Starts a command: clears per-command scratch. */
  begin(time: number): void {
    this.events = [];
    this.time = time;
    // Assigning `length` is a slow runtime call even on empty arrays; replace only when used.
    if (this.changed.length !== 0) {
      this.changed = [];
      this.changedSet = null;
    }
    if (this.books.length !== 0) this.books = [];
    if (this.scopes.length !== 0) this.scopes = [];
    if (this.movedMarkets.length !== 0) this.movedMarkets = [];
    if (this.armedMarkets.length !== 0) this.armedMarkets = [];
  }

  /** Markets where this command armed a trigger order after placement (an entry's child). */
  private armedMarkets: number[] = [];

  /** Records that a trigger order of `market` was armed during the command (see `fireArmed`). */
  triggerArmed(market: number): void {
    if (!this.armedMarkets.includes(market)) this.armedMarkets.push(market);
  }

  /** Whether {@link triggerArmed} recorded a market not taken yet. */
  hasArmedMarkets(): boolean {
    return this.armedMarkets.length !== 0;
  }

  /** Takes the markets recorded by {@link triggerArmed}. */
  takeArmedMarkets(): number[] {
    const out = this.armedMarkets;
    if (out.length !== 0) this.armedMarkets = [];
    return out;
  }

  /** Accounts marked for a push so far in the current command, first-touch order. */
  changedAccounts(): readonly string[] {
    return this.changed;
  }

  /**
   * Finishes a command: one `bookChanged` per market whose book changed and one
   * `accountChanged` per touched account, in first-touch order.
   */
  end(): EngineEvent[] {
    for (const market of this.books) {
      this.events.push({ type: 'bookChanged', market: market.spec.id, bookSeq: market.bookSeq });
    }
    for (const account of this.changed) {
      this.events.push({ type: 'accountChanged', account, time: this.time });
    }
    if (this.books.length !== 0) this.books = [];
    if (this.changed.length !== 0) {
      this.changed = [];
      this.changedSet = null;
    }
    return this.events;
  }

  /** Records a change of a writable market's book: `bookSeq` rises once per command. */
  bookTouched(market: Market): void {
    if (this.books.includes(market)) return;
    market.bookSeq++;
    this.books.push(market);
  }

  /** Queues a scope whose position changed, for the reduce-only and managed order rules. */
  positionChanged(account: string, market: number, mode: MarginMode): void {
    for (const s of this.scopes) {
      if (s.account === account && s.market === market && s.mode === mode) return;
    }
    this.scopes.push({ account, market, mode });
  }

  /** Takes the queued scopes. */
  takePendingScopes(): PendingScope[] {
    const out = this.scopes;
    this.scopes = [];
    return out;
  }

  /** Marks an account for an account-summary push (spec push triggers only). */
  accountChanged(address: string): void {
    const set = this.changedSet;
    if (set !== null) {
      if (set.has(address)) return;
      set.add(address);
      this.changed.push(address);
      return;
    }
    // A few accounts per command is the common case: a short scan, no set.
    if (this.changed.includes(address)) return;
    this.changed.push(address);
    if (this.changed.length >= 32) this.changedSet = new Set(this.changed);
  }

  // ---- ids -------------------------------------------------------------------------------

  /** Allocates the next order id. */
  nextOrderId(): number {
    return ++this.state.counters.order;
  }

  /** Allocates the next trade id. */
  nextTradeId(): number {
    return ++this.state.counters.trade;
  }

  /** Allocates the next liquidation id. */
  nextLiquidationId(): number {
    return ++this.state.counters.liquidation;
  }

  /** Allocates the next auction id. */
  nextAuctionId(): number {
    return ++this.state.counters.auction;
  }

  /** Allocates the next command id. */
  nextCommandId(): number {
    return ++this.state.counters.command;
  }

  // ---- markets ----------------------------------------------------------------------------

  /** A market for reading. */
  market(id: number): Market | undefined {
    return this.state.markets.get(id);
  }

  /** A market this session may mutate (its level arrays included). */
  writableMarket(id: number): Market {
    const m = this.state.markets.get(id);
    if (m === undefined) throw new Error(`unknown market ${id}`);
    if (m.edit === this.edit) return m;
    const w = copyMarket(m, this.edit);
    this.state.markets = this.state.markets.set(this.edit, id, w);
    return w;
  }

  /** A level of a writable market that this session may mutate; `index` is its array index. */
  writableLevel(market: Market, levels: Level[], index: number): Level {
    const l = levels[index] as Level;
    if (l.edit === this.edit) return l;
    // The copy keeps the spent prefix: `compact` bounds it, at points batching cannot move.
    const w = copyLevel(l, this.edit);
    levels[index] = w;
    void market;
    return w;
  }

  // ---- accounts ---------------------------------------------------------------------------

  /** An account for reading. */
  account(address: string): Account | undefined {
    if (address === this.lastAddress) return this.lastAccount;
    let a = this.accountCache.get(address);
    if (a === undefined) {
      a = this.state.accounts.get(address);
      if (a !== undefined) this.accountCache.set(address, a);
    }
    this.lastAddress = address;
    this.lastAccount = a;
    return a;
  }

  /** An account this session may mutate (its small arrays included). */
  writableAccount(address: string): Account {
    const a = this.account(address);
    if (a === undefined) throw new Error(`unknown account ${address}`);
    if (a.edit === this.edit) return a;
    const w = copyAccount(a, this.edit);
    this.state.accounts = this.state.accounts.set(this.edit, address, w);
    this.accountCache.set(address, w);
    this.lastAddress = address;
    this.lastAccount = w;
    return w;
  }

  /** Stores a new account. */
  putAccount(account: Account): void {
    this.state.accounts = this.state.accounts.set(this.edit, account.address, account);
    this.accountCache.set(account.address, account);
    this.lastAddress = account.address;
    this.lastAccount = account;
  }

  // ---- orders -----------------------------------------------------------------------------

  /** A working order for reading. */
  order(id: number): Order | undefined {
    return this.state.orders.get(id);
  }

  /** A working order this session may mutate. */
  writableOrder(id: number): Order {
    const o = this.state.orders.get(id);
    if (o === undefined) throw new Error(`unknown order ${id}`);
    if (o.edit === this.edit) return o;
    const w = copyOrder(o, this.edit);
    this.state.orders = this.state.orders.set(this.edit, id, w);
    return w;
  }

  /** Stores a new working order. */
  putOrder(order: Order): void {
    this.state.orders = this.state.orders.set(this.edit, order.orderId, order);
  }

  /** Forgets a working order that ended. */
  deleteOrder(id: number): void {
    this.state.orders = this.state.orders.delete(this.edit, id);
  }

  // ---- events -----------------------------------------------------------------------------

  /** Numbers and emits an execution report for `account`; returns its seq. */
  report(account: string, draft: ReportDraft): number {
    const seq = ++this.writableAccount(account).reportSeq;
    const execId = ++this.state.counters.exec;
    this.events.push({
      ...draft,
      type: 'executionReport',
      account,
      seq,
      execId,
      time: this.time,
    } as ExecutionReport);
    return seq;
  }

  /**
   * Fast path of {@link report} for order lifecycle reports (one object shape). The report
   * carries a snapshot of the order as it is now.
   */
  orderReport(
    account: string,
    kind: OrderReport['kind'],
    order: Order,
    fill?: Fill,
    markPrice?: bigint,
  ): number {
    return this.orderReportOf(account, kind, viewOf(order), fill, markPrice);
  }

  /** Emits an order lifecycle report carrying an existing snapshot. */
  orderReportOf(
    account: string,
    kind: OrderReport['kind'],
    view: OrderView,
    fill?: Fill,
    markPrice?: bigint,
  ): number {
    const seq = ++this.writableAccount(account).reportSeq;
    const execId = ++this.state.counters.exec;
    const event: OrderReport = {
      type: 'executionReport',
      account,
      seq,
      execId,
      time: this.time,
      kind,
      order: view,
      fill,
      markPrice,
    };
    this.events.push(event);
    return seq;
  }

  /** Emits any non-report event. */
  emit(event: EngineEvent): void {
    this.events.push(event);
  }

  /** Emits a refusal outcome. */
  fail(
    code: ErrorCodeValue,
    message: string,
    extra: {
      nonceConsumed?: boolean;
      orderId?: number;
      cloid?: string | null;
      commandId?: number;
      referralError?: ReferralError;
    } = {},
  ): void {
    this.events.push({
      type: 'outcome',
      ok: false,
      code,
      message,
      nonceConsumed: extra.nonceConsumed ?? false,
      ...(extra.orderId === undefined ? {} : { orderId: extra.orderId }),
      ...(extra.cloid === undefined ? {} : { cloid: extra.cloid }),
      ...(extra.commandId === undefined ? {} : { commandId: extra.commandId }),
      ...(extra.referralError === undefined ? {} : { referralError: extra.referralError }),
    });
  }
}
