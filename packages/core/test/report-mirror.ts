/**
 * A client's picture of its orders, built only from execution reports (research 6.4.3), and the
 * checks that the report stream is a complete and consistent log of every order's life.
 *
 * {@link ReportMirror.apply} takes one command's events in order and checks each report against
 * what the mirror already holds: seq +1 per account and execIds increasing; one `OrderAccepted`
 * (or one `OrderRejected` and nothing else) first; fills only on a triggered or plain working
 * order, each adding its `lastQty` to cumQty and `lastQty x lastPx` to the filled notional (so
 * avgPx is exact), `OrderFilled` exactly when leaves reach zero; `OrderReplaced.previous` and
 * `origCloid` equal to what the mirror held; exactly one terminal report, after which only a
 * `TradeBust` may name the order; position continuity of every fill (`positionBefore` is what
 * the earlier reports left). {@link ReportMirror.compare} then checks the mirror's working orders
 * against the engine state, field by field (the state is read for that comparison only).
 *
 * The engine's own amends are reports too: `OrderReplaced` with reason `ReduceOnly` (a re-clamp),
 * `PositionChanged` (a waiting managed TP/SL on a position sized by it), `ParentFilled` or
 * `ParentBust` (a waiting child sized by its entry's fills, the entry working or ended); the
 * mirror checks each size against the rule (docs/risk-engine.md, research 6.4.3 invariant 4)
 * from report data only. What it still derives, because no order field shows it: a fill of an
 * entry arms its waiting children, a bust that leaves a working entry no fill disarms them, and
 * a replace that renames an entry renames its children's `parentCloid`.
 * A bust of a fill of an order that already ended lowers its cumQty and quantity by the fill and
 * with no fill left makes it `Cancelled` with reason `Bust` (docs/protocol-decisions.md).
 */
import type {
  EngineEvent,
  EngineState,
  ExecutionReport,
  Fill,
  MarginMode,
  Order,
  OrderView,
} from '../src/index.js';
import { replacer } from '../src/testing/index.js';

/** What the mirror holds for one order. */
interface Mirrored {
  /** The order as the reports (and the derivations above) say it is. */
  view: OrderView;
  working: boolean;
  /** Kind of the terminal report, once there was one. */
  ended: string | null;
  /** Non-busted fills by trade id (two legs of one trade can be this order's only by a bug). */
  readonly fills: Map<number, { qty: bigint; price: bigint }>;
  fillQty: bigint;
  fillNotional: bigint;
  /**
   * A managed child sized by a fill of its entry since it was placed, or placed after one (the
   * engine arms it then).
   */
  armed: boolean;
  /** The reports that named the order, short (failure messages). */
  readonly log: string[];
}

const CANCEL_REASONS = new Set([
  'User',
  'IOC',
  'FOK',
  'ReduceOnly',
  'InsufficientMargin',
  'SelfTrade',
  'Liquidation',
  'PositionClosed',
  'ParentCancelled',
  'SiblingFilled',
  'NoLiquidity',
  'MarketClosed',
  'OICap',
  'MaxLeverage',
  'Admin',
]);

/** Fields of a working order a client can know and the engine state must agree on. */
const COMPARED = [
  'orderId',
  'account',
  'market',
  'side',
  'orderType',
  'timeInForce',
  'marginMode',
  'reduceOnly',
  'postOnly',
  'managed',
  'parentCloid',
  'entryOrderId',
  'createdTime',
  'expireTime',
  'cloid',
  'price',
  'triggerPrice',
  'quantity',
  'cumQty',
  'filledNotional',
  'ordStatus',
] as const satisfies readonly (keyof OrderView & keyof Order)[];

/** Fields no report may change. */
const FIXED = [
  'account',
  'market',
  'side',
  'orderType',
  'timeInForce',
  'marginMode',
  'reduceOnly',
  'postOnly',
  'managed',
  'entryOrderId',
  'createdTime',
  'expireTime',
] as const satisfies readonly (keyof OrderView)[];

const abs = (x: bigint): bigint => (x < 0n ? -x : x);
const show = (x: unknown): string => JSON.stringify(x, replacer);

export class ReportMirror {
  readonly orders = new Map<number, Mirrored>();
  /** Signed position size per `account/market/mode`, from the reports' fills and busts. */
  readonly positions = new Map<string, bigint>();
  private readonly seqs = new Map<string, number>();
  private lastExecId = 0;
  /** Reports seen, by kind (statistics). */
  readonly kinds = new Map<string, number>();

  private fail(what: string, r?: ExecutionReport): never {
    const ids = new Set<number>();
    if (r !== undefined && 'order' in r) ids.add(r.order.orderId);
    if (r?.kind === 'TradeBust') ids.add(r.orderId);
    for (const m of /order (\d+)/g[Symbol.matchAll](what)) ids.add(Number(m[1]));
    for (const id of [...ids]) {
      const entry = this.orders.get(id)?.view.entryOrderId;
      if (entry !== null && entry !== undefined) ids.add(entry);
    }
    const logs = [...ids].map((id) => `  #${id}: ${this.orders.get(id)?.log.join(' | ') ?? '-'}`);
    throw new Error(
      `report mirror: ${what}${r === undefined ? '' : `\nreport: ${show(r)}`}\nearlier reports:\n${logs.join('\n')}`,
    );
  }

  private note(r: ExecutionReport): void {
    const v = 'order' in r ? r.order : r.kind === 'TradeBust' ? r.workingOrder : undefined;
    const id = 'order' in r ? r.order.orderId : r.kind === 'TradeBust' ? r.orderId : 0;
    const m = this.orders.get(id);
    if (m === undefined) return;
    const fill =
      'fill' in r && r.fill !== undefined
        ? ` fill ${r.fill.quantity}@${r.fill.price} t${r.fill.tradeId}`
        : '';
    const fig =
      v === undefined
        ? ''
        : ` ${v.ordStatus}${v.reason ? `:${v.reason}` : ''} q${v.quantity} c${v.cumQty}`;
    m.log.push(`${r.kind}@${r.time}${fig}${fill}`);
  }

  private scope(account: string, market: number, mode: MarginMode): string {
    return `${account}/${market}/${mode}`;
  }

  position(account: string, market: number, mode: MarginMode): bigint {
    return this.positions.get(this.scope(account, market, mode)) ?? 0n;
  }

  /** A fill moves its scope's position from what the earlier reports left. */
  private moveBy(account: string, fill: Fill, r: ExecutionReport): void {
    const key = this.scope(account, fill.market, fill.marginMode);
    const before = this.positions.get(key) ?? 0n;
    if (fill.positionBefore !== before)
      this.fail(`${key}: fill positionBefore ${fill.positionBefore}, reports left ${before}`, r);
    const after = before + (fill.side === 'Buy' ? fill.quantity : -fill.quantity);
    if (fill.positionAfter !== after)
      this.fail(`${key}: fill positionAfter ${fill.positionAfter}, expected ${after}`, r);
    if (fill.quantity <= 0n) this.fail('fill of no quantity', r);
    this.setPosition(key, after);
  }

  private setPosition(key: string, size: bigint): void {
    this.positions.set(key, size);
  }

  private known(id: number, r: ExecutionReport): Mirrored {
    const m = this.orders.get(id);
    if (m === undefined) this.fail(`order ${id} was never accepted`, r);
    return m;
  }

  private working(id: number, r: ExecutionReport): Mirrored {
    const m = this.known(id, r);
    if (!m.working) this.fail(`order ${id} already ended with ${m.ended}`, r);
    return m;
  }

  /** The snapshot keeps every field no report changes. */
  private sameFixed(m: Mirrored, v: OrderView, r: ExecutionReport): void {
    for (const k of FIXED) {
      if (m.view[k] !== v[k]) this.fail(`${k} changed from ${show(m.view[k])}`, r);
    }
    if (v.account !== r.account) this.fail('report on another account', r);
  }

  /** The snapshot has the figures the mirror expects (quantity: unless `quantity` is false). */
  private sameFigures(
    m: Mirrored,
    v: OrderView,
    r: ExecutionReport,
    expect: Partial<OrderView>,
  ): void {
    const want: Partial<OrderView> = {
      price: m.view.price,
      triggerPrice: m.view.triggerPrice,
      quantity: m.view.quantity,
      cumQty: m.view.cumQty,
      filledNotional: m.view.filledNotional,
      cloid: m.view.cloid,
      parentCloid: m.view.parentCloid,
      ...expect,
    };
    for (const [k, x] of Object.entries(want) as [keyof OrderView, unknown][]) {
      if (v[k] !== x) this.fail(`${k} ${show(v[k])}, mirror expects ${show(x)}`, r);
    }
  }

  private adopt(m: Mirrored, v: OrderView): void {
    m.view = v;
    if (m.fillQty !== v.cumQty || m.fillNotional !== v.filledNotional) {
      this.fail(
        `order ${v.orderId}: fills sum to ${m.fillQty} (notional ${m.fillNotional}), cumQty ${v.cumQty} (notional ${v.filledNotional})`,
      );
    }
  }

  /** Applies one command's events in order, checking each report. */
  apply(events: readonly EngineEvent[]): void {
    // The account an order request's outcome answered: the ack names the command's last report
    // for it, so no report of it may follow (a fired child, a liquidation's cancel).
    let answered: string | undefined;
    for (const e of events) {
      if (e.type === 'outcome') {
        if (e.ok && (e.kind === 'order' || e.kind === 'cancel' || e.kind === 'replace')) {
          const seq = this.seqs.get(e.order.account) ?? 0;
          if (e.seq !== seq) this.fail(`outcome seq ${e.seq}, last report of the account ${seq}`);
          answered = e.order.account;
        }
        continue;
      }
      if (e.type !== 'executionReport') continue;
      if (e.account === answered)
        this.fail('a report after the outcome that answered its account', e);
      this.report(e);
    }
  }

  private tally(what: string): void {
    this.kinds.set(what, (this.kinds.get(what) ?? 0) + 1);
  }

  private report(r: ExecutionReport): void {
    this.tally(r.kind);
    const seq = (this.seqs.get(r.account) ?? 0) + 1;
    if (r.seq !== seq) this.fail(`seq ${r.seq}, expected ${seq}`, r);
    this.seqs.set(r.account, seq);
    if (r.execId <= this.lastExecId) this.fail(`execId not above ${this.lastExecId}`, r);
    this.lastExecId = r.execId;
    this.check(r);
    this.note(r);
  }

  private check(r: ExecutionReport): void {
    switch (r.kind) {
      case 'OrderAccepted': {
        const v = r.order;
        if (this.orders.has(v.orderId)) this.fail(`order ${v.orderId} reported before`, r);
        const status = v.orderType === 'Limit' ? 'New' : 'Untriggered';
        if (v.ordStatus !== status) this.fail(`accepted as ${v.ordStatus}, not ${status}`, r);
        if (v.cumQty !== 0n || v.filledNotional !== 0n) this.fail('accepted with fills', r);
        if (v.quantity <= 0n) this.fail('accepted without quantity', r);
        if (v.account !== r.account) this.fail('report on another account', r);
        // A child placed after its entry's first fill is sized by the entry's fills and armed
        // at once (engine rules 6).
        const entry =
          v.managed && v.entryOrderId !== null ? this.orders.get(v.entryOrderId) : undefined;
        const entryFilled = entry?.working === true ? entry.view.cumQty : 0n;
        if (entryFilled > 0n && v.quantity !== entryFilled)
          this.fail(`a child accepted at ${v.quantity}, its entry has filled ${entryFilled}`, r);
        this.orders.set(v.orderId, {
          view: v,
          working: true,
          ended: null,
          fills: new Map(),
          fillQty: 0n,
          fillNotional: 0n,
          armed: entryFilled > 0n,
          log: [],
        });
        return;
      }
      case 'OrderRejected': {
        const v = r.order;
        if (this.orders.has(v.orderId)) this.fail(`order ${v.orderId} reported before`, r);
        if (v.ordStatus !== 'Rejected') this.fail(`rejected as ${v.ordStatus}`, r);
        if (v.cumQty !== 0n) this.fail('rejected with fills', r);
        this.orders.set(v.orderId, {
          view: v,
          working: false,
          ended: r.kind,
          fills: new Map(),
          fillQty: 0n,
          fillNotional: 0n,
          armed: false,
          log: [],
        });
        return;
      }
      case 'OrderTriggered': {
        const v = r.order;
        const m = this.working(v.orderId, r);
        this.sameFixed(m, v, r);
        if (m.view.ordStatus !== 'Untriggered') this.fail(`triggered from ${m.view.ordStatus}`, r);
        if (v.ordStatus !== 'New') this.fail(`triggered to ${v.ordStatus}`, r);
        if (r.markPrice === undefined) this.fail('trigger without its mark', r);
        // A managed TP/SL on a position fires for the whole position (engine-rules 5).
        const quantity =
          m.view.managed && m.view.parentCloid === null
            ? v.cumQty + abs(this.position(v.account, v.market, v.marginMode))
            : m.view.quantity;
        this.sameFigures(m, v, r, { quantity });
        this.adopt(m, v);
        return;
      }
      case 'OrderPartiallyFilled':
      case 'OrderFilled': {
        const v = r.order;
        const f = r.fill;
        if (f === undefined) this.fail('fill report without a fill', r);
        const m = this.working(v.orderId, r);
        this.sameFixed(m, v, r);
        const from = m.view.ordStatus;
        if (from !== 'New' && from !== 'PartiallyFilled') this.fail(`fill while ${from}`, r);
        if (f.side !== v.side || f.market !== v.market || f.marginMode !== v.marginMode)
          this.fail('fill on another side, market or mode than its order', r);
        if (m.fills.has(f.tradeId)) this.fail(`trade ${f.tradeId} filled the order twice`, r);
        if (v.price > 0n && (v.side === 'Buy' ? f.price > v.price : f.price < v.price))
          this.fail(`fill at ${f.price} beyond the limit ${v.price}`, r);
        m.fills.set(f.tradeId, { qty: f.quantity, price: f.price });
        m.fillQty += f.quantity;
        m.fillNotional += f.quantity * f.price;
        const cumQty = m.view.cumQty + f.quantity;
        const done = cumQty === m.view.quantity;
        if (cumQty > m.view.quantity) this.fail(`cumQty ${cumQty} over ${m.view.quantity}`, r);
        if ((r.kind === 'OrderFilled') !== done)
          this.fail(`${r.kind} with leaves ${m.view.quantity - cumQty}`, r);
        this.sameFigures(m, v, r, {
          cumQty,
          filledNotional: m.view.filledNotional + f.quantity * f.price,
          ordStatus: done ? 'Filled' : 'PartiallyFilled',
        });
        this.adopt(m, v);
        if (done) {
          m.working = false;
          m.ended = r.kind;
        }
        this.moveBy(r.account, f, r);
        this.armChildren(v);
        return;
      }
      case 'OrderCancelled':
      case 'OrderExpired': {
        const v = r.order;
        const m = this.working(v.orderId, r);
        this.sameFixed(m, v, r);
        const status = r.kind === 'OrderCancelled' ? 'Cancelled' : 'Expired';
        if (r.kind === 'OrderExpired') {
          if (v.reason !== v.timeInForce || (v.reason !== 'GTD' && v.reason !== 'DAY'))
            this.fail(`expired with reason ${v.reason}`, r);
        } else if (v.reason === null || !CANCEL_REASONS.has(v.reason)) {
          this.fail(`cancelled with reason ${v.reason}`, r);
        }
        this.tally(`${r.kind}:${v.reason}`);
        this.sameFigures(m, v, r, { ordStatus: status });
        this.adopt(m, v);
        m.working = false;
        m.ended = r.kind;
        return;
      }
      case 'OrderReplaced': {
        const v = r.order;
        const m = this.working(v.orderId, r);
        this.sameFixed(m, v, r);
        const p = r.previous;
        if (
          p.price !== m.view.price ||
          p.triggerPrice !== m.view.triggerPrice ||
          p.quantity !== m.view.quantity
        )
          this.fail(
            `previous ${show(p)}, mirror held ${show({ price: m.view.price, triggerPrice: m.view.triggerPrice, quantity: m.view.quantity })}`,
            r,
          );
        if (r.origCloid !== m.view.cloid) this.fail(`origCloid, mirror held ${m.view.cloid}`, r);
        if (v.quantity <= v.cumQty) this.fail('replaced to no leaves', r);
        if (v.reason !== null) this.tally(`OrderReplaced:${v.reason}`);
        if (v.reason === 'ReduceOnly') {
          // A system re-clamp: only the quantity falls.
          if (v.quantity >= p.quantity) this.fail('re-clamp without a cut', r);
          this.sameFigures(m, v, r, { quantity: v.quantity });
        } else if (v.reason !== null) {
          // A waiting managed TP/SL re-sized by the engine: only the quantity changes, to the size
          // its rule gives.
          if (!m.view.managed || m.view.ordStatus !== 'Untriggered')
            this.fail(`${v.reason} of an order that is not a waiting managed TP/SL`, r);
          this.sameFigures(m, v, r, { quantity: this.restatedSize(m, v.reason, r) });
          if (v.quantity === p.quantity) this.fail('re-sized to its own size', r);
        } else {
          if (m.view.ordStatus !== 'Untriggered' && v.triggerPrice !== p.triggerPrice)
            this.fail('a working order changed its trigger price', r);
          this.sameFigures(m, v, r, {
            price: v.price,
            triggerPrice: v.triggerPrice,
            quantity: v.quantity,
            cloid: v.cloid,
            ordStatus: m.view.ordStatus,
          });
        }
        this.adopt(m, v);
        // The entry's managed children follow its new cloid (research 6.3 rule 4).
        if (!v.managed && r.origCloid !== null && v.cloid !== r.origCloid) {
          for (const c of this.orders.values()) {
            if (c.working && c.view.managed && c.view.entryOrderId === v.orderId) {
              c.view = { ...c.view, parentCloid: v.cloid };
              this.tally('derived: child follows the entry cloid');
            }
          }
        }
        return;
      }
      case 'TradeBust': {
        const f = r.fill;
        const signed = f.side === 'Buy' ? f.quantity : -f.quantity;
        const key = this.scope(r.account, r.market, r.marginMode);
        const before = this.positions.get(key) ?? 0n;
        if (r.positionAfter !== before - signed)
          this.fail(`${key}: bust leaves ${r.positionAfter}, reports held ${before}`, r);
        this.setPosition(key, r.positionAfter);
        if (r.orderId === 0) {
          if (r.workingOrder !== undefined) this.fail('system fill bust with an order', r);
          return;
        }
        const m = this.known(r.orderId, r);
        const fill = m.fills.get(r.tradeId);
        if (fill === undefined || fill.qty !== f.quantity || fill.price !== f.price)
          this.fail(`bust of a fill order ${r.orderId} never reported: ${show(fill)}`, r);
        m.fills.delete(r.tradeId);
        m.fillQty -= fill.qty;
        m.fillNotional -= fill.qty * fill.price;
        // Engine-rules 8: cumQty and quantity drop together (nothing is put back on the book).
        const cumQty = m.view.cumQty - fill.qty;
        let { ordStatus, reason } = m.view;
        if (cumQty === 0n && ordStatus === 'PartiallyFilled') ordStatus = 'New';
        if (cumQty === 0n && !m.working) {
          ordStatus = 'Cancelled';
          reason = 'Bust';
        }
        const after: OrderView = {
          ...m.view,
          cumQty,
          quantity: m.view.quantity - fill.qty,
          filledNotional: m.view.filledNotional - fill.qty * fill.price,
          ordStatus,
          reason,
        };
        this.tally(
          `bust of ${m.working ? 'a working' : 'an ended'} order${cumQty === 0n ? ', no fill left' : ''}`,
        );
        if (m.working) {
          const w = r.workingOrder;
          if (w === undefined) this.fail('bust of a working order without the order', r);
          this.sameFixed(m, w, r);
          this.sameFigures(m, w, r, {
            quantity: after.quantity,
            cumQty,
            filledNotional: after.filledNotional,
            ordStatus,
          });
          this.adopt(m, w);
          // A bust that leaves a working entry no fill disarms its children (they wait for its
          // next fill, as if it had never filled).
          if (cumQty === 0n) this.disarmChildren(w);
        } else {
          if (r.workingOrder !== undefined) this.fail('bust of an ended order with an order', r);
          this.adopt(m, after);
        }
        return;
      }
      case 'Liquidation':
      case 'ADL':
        this.moveBy(r.account, r.fill, r);
        return;
      case 'LiquidationClaim':
        if (r.fill !== undefined) this.moveBy(r.account, r.fill, r);
        else if (r.status === 'Settled') this.fail('settled claim without a fill', r);
        return;
      case 'Funding': {
        const held = this.position(r.account, r.market, r.marginMode);
        if (r.positionSize !== held)
          this.fail(`funding on ${r.positionSize}, reports left ${held}`, r);
        return;
      }
      default:
        return;
    }
  }

  /**
   * The size an engine re-size (`OrderReplaced` with `reason`) must give a waiting managed TP/SL:
   * its position's for `PositionChanged`, its entry's filled quantity for `ParentFilled` (which
   * arms it) and `ParentBust` (an armed child only).
   */
  private restatedSize(m: Mirrored, reason: string, r: ExecutionReport): bigint {
    const v = m.view;
    if (reason === 'PositionChanged') {
      if (v.parentCloid !== null) this.fail('a child of an entry sized by the position', r);
      const size = abs(this.position(v.account, v.market, v.marginMode));
      if (size === 0n) this.fail('sized to a closed position', r);
      return size;
    }
    if (reason !== 'ParentFilled' && reason !== 'ParentBust') this.fail(`restated as ${reason}`, r);
    // A fill that ends the entry still sizes its children (its report came just before).
    const entry = v.entryOrderId === null ? undefined : this.orders.get(v.entryOrderId);
    if (entry === undefined) this.fail(`${reason} without its entry`, r);
    if (entry.view.cumQty === 0n) this.fail(`${reason} of an entry with no fill`, r);
    if (reason === 'ParentBust' && !m.armed) this.fail('a bust re-sized an unarmed child', r);
    m.armed = true;
    this.tally(`restated: ${reason}`);
    return entry.view.cumQty;
  }

  /**
   * A fill of an entry order arms its waiting managed children (research 6.4.3 invariant 4: they
   * are sized by its cumQty from then on; the sizes come as reports).
   */
  private armChildren(entry: OrderView): void {
    if (entry.managed || entry.cloid === null) return;
    for (const c of this.orders.values()) {
      if (
        c.working &&
        c.view.managed &&
        c.view.entryOrderId === entry.orderId &&
        c.view.ordStatus === 'Untriggered'
      )
        c.armed = true;
    }
  }

  /** The working waiting children of an entry that a bust left without fills are unarmed. */
  private disarmChildren(entry: OrderView): void {
    for (const c of this.orders.values()) {
      if (c.working && c.view.managed && c.view.entryOrderId === entry.orderId) c.armed = false;
    }
  }

  /** After a command: the mirror's working orders are exactly the engine's, field by field. */
  compare(state: EngineState): void {
    let count = 0;
    state.orders.forEach((o, id) => {
      count++;
      const m = this.orders.get(id);
      if (m === undefined) this.fail(`order ${id} works but was never reported`);
      if (!m.working) this.fail(`order ${id} works but ended with ${m.ended}`);
      for (const k of COMPARED) {
        if (m.view[k] !== o[k])
          this.fail(`order ${id}: ${k} is ${show(o[k])}, the reports say ${show(m.view[k])}`);
      }
      if (o.quantity <= o.cumQty) this.fail(`order ${id} works with no leaves`);
    });
    let working = 0;
    for (const m of this.orders.values()) if (m.working) working++;
    if (working !== count) {
      const gone = [...this.orders.values()]
        .filter((m) => m.working && state.orders.get(m.view.orderId) === undefined)
        .map((m) => m.view.orderId);
      this.fail(`orders ${gone.join(', ')} ended without a terminal report`);
    }
  }
}
