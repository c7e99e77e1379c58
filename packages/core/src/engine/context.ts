/**
 * The write session of one `reduce` (or one batch): the state being built, the events produced so
 * far, and copy-on-write accessors. Every mutation of engine state goes through these accessors,
 * which copy a record the first time this session writes it and mutate it in place afterwards.
 *
 * @module
 */
import type { ErrorCodeValue } from '../errors.js';
import { type Edit, newEdit } from '../persistent/edit.js';
import type { EngineEvent, ExecutionReport } from './events.js';
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

/** The mutable context handlers write through. */
export class Ctx {
  readonly edit: Edit;
  /** The state under construction; owned by {@link edit}. */
  state: EngineState;
  /** Events of the current command. */
  events: EngineEvent[];
  /** Time of the current command, ms. */
  time: number;
  /** Accounts whose position, margin or balance changed in the current command. */
  private changed: Set<string> = new Set();
  /** Markets whose book changed in the current command. */
  private books: Map<number, Market> = new Map();
  /** Scopes whose position changed and whose reduce-only and managed orders need a look. */
  private scopes: Map<string, PendingScope> = new Map();

  constructor(state: EngineState) {
    this.edit = newEdit();
    this.state = { ...state, edit: this.edit };
    this.events = [];
    this.time = state.time;
  }

  /** Starts a command: clears per-command scratch. */
  begin(time: number): void {
    this.events = [];
    this.time = time;
    this.changed.clear();
    this.books.clear();
    this.scopes.clear();
  }

  /**
   * Finishes a command: one `bookChanged` per market whose book changed and one
   * `accountChanged` per touched account, in first-touch order.
   */
  end(): EngineEvent[] {
    for (const market of this.books.values()) {
      this.events.push({ type: 'bookChanged', market: market.spec.id, bookSeq: market.bookSeq });
    }
    for (const account of this.changed) {
      this.events.push({ type: 'accountChanged', account, time: this.time });
    }
    this.books.clear();
    this.changed.clear();
    return this.events;
  }

  /** Records a change of a writable market's book: `bookSeq` rises once per command. */
  bookTouched(market: Market): void {
    const known = this.books.get(market.spec.id);
    if (known === market) return;
    if (known === undefined) market.bookSeq++;
    this.books.set(market.spec.id, market);
  }

  /** Queues a scope whose position changed, for the reduce-only and managed order rules. */
  positionChanged(account: string, market: number, mode: MarginMode): void {
    const key = `${account}|${market}|${mode}`;
    if (!this.scopes.has(key)) this.scopes.set(key, { account, market, mode });
  }

  /** Takes the queued scopes. */
  takePendingScopes(): PendingScope[] {
    const out = [...this.scopes.values()];
    this.scopes.clear();
    return out;
  }

  /** Marks an account for an account-summary push (spec push triggers only). */
  accountChanged(address: string): void {
    this.changed.add(address);
  }

  // ---- ids -------------------------------------------------------------------------------

  /** Allocates the next order id. */
  nextOrderId(): number {
    const c = this.state.counters;
    this.state.counters = { ...c, order: c.order + 1 };
    return c.order + 1;
  }

  /** Allocates the next trade id. */
  nextTradeId(): number {
    const c = this.state.counters;
    this.state.counters = { ...c, trade: c.trade + 1 };
    return c.trade + 1;
  }

  /** Allocates the next command id. */
  nextCommandId(): number {
    const c = this.state.counters;
    this.state.counters = { ...c, command: c.command + 1 };
    return c.command + 1;
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
    const w: Market = {
      ...m,
      edit: this.edit,
      bids: m.bids.slice(),
      asks: m.asks.slice(),
      triggersAbove: m.triggersAbove.slice(),
      triggersBelow: m.triggersBelow.slice(),
    };
    this.state.markets = this.state.markets.set(this.edit, id, w);
    return w;
  }

  /** A level of a writable market that this session may mutate; `index` is its array index. */
  writableLevel(market: Market, levels: Level[], index: number): Level {
    const l = levels[index] as Level;
    if (l.edit === this.edit) return l;
    // Copying drops the spent prefix, so a level's array stays proportional to its live orders.
    const start = l.head - l.base;
    const w: Level = { ...l, edit: this.edit, ids: l.ids.slice(start), base: l.head };
    levels[index] = w;
    void market;
    return w;
  }

  // ---- accounts ---------------------------------------------------------------------------

  /** An account for reading. */
  account(address: string): Account | undefined {
    return this.state.accounts.get(address);
  }

  /** An account this session may mutate (its small arrays included). */
  writableAccount(address: string): Account {
    const a = this.state.accounts.get(address);
    if (a === undefined) throw new Error(`unknown account ${address}`);
    if (a.edit === this.edit) return a;
    const w: Account = {
      ...a,
      edit: this.edit,
      isolated: a.isolated.slice(),
      positions: a.positions.slice(),
      leverage: a.leverage.slice(),
      orderTotals: a.orderTotals.slice(),
    };
    this.state.accounts = this.state.accounts.set(this.edit, address, w);
    return w;
  }

  /** Stores a new account. */
  putAccount(account: Account): void {
    this.state.accounts = this.state.accounts.set(this.edit, account.address, account);
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
    const w: Order = { ...o, edit: this.edit };
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

  /**
   * Numbers and emits an execution report for `account`. The order it carries is published:
   * a later change in this session copies it, so the report keeps showing this moment.
   */
  report(account: string, draft: ReportDraft): number {
    const acct = this.writableAccount(account);
    const seq = acct.reportSeq + 1;
    acct.reportSeq = seq;
    const c = this.state.counters;
    this.state.counters = { ...c, exec: c.exec + 1 };
    if ('order' in draft) (draft.order as Order).edit = null;
    this.events.push({
      ...draft,
      type: 'executionReport',
      account,
      seq,
      execId: c.exec + 1,
      time: this.time,
    } as ExecutionReport);
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
    });
  }
}
