/**
 * A deliberately naive price-time order book: one flat array, sorted on every step, no indexes.
 * It exists to be obviously right, so model-based tests can compare the engine's book against
 * it (exchange-core keeps a Naive book for the same reason).
 *
 * @module
 */

/** An order resting in the reference book. */
export interface RefOrder {
  readonly id: number;
  readonly account: string;
  readonly buy: boolean;
  price: bigint;
  /** Remaining quantity. */
  qty: bigint;
  /** Filled quantity. */
  filled: bigint;
  /** Time priority: lower goes first at a price. */
  seq: number;
  readonly postOnly: boolean;
}

/** One fill: the resting order, the incoming order, quantity and (the maker's) price. */
export interface RefFill {
  readonly maker: number;
  readonly taker: number;
  readonly qty: bigint;
  readonly price: bigint;
}

/** What an order did on arrival. */
export interface RefResult {
  readonly fills: RefFill[];
  /** Resting orders cancelled by self-trade prevention, in order. */
  readonly selfTradeCancels: number[];
  /** Whether the remainder now rests. */
  readonly rested: boolean;
  readonly rejected: 'PostOnly' | null;
}

/** Arrival parameters. */
export interface RefArrival {
  readonly id: number;
  readonly account: string;
  readonly buy: boolean;
  readonly price: bigint;
  readonly qty: bigint;
  readonly tif: 'GTC' | 'IOC' | 'FOK';
  readonly postOnly: boolean;
}

/** The naive book. */
export class ReferenceBook {
  orders: RefOrder[] = [];
  private seq = 0;

  /** Resting orders of one side, best first. */
  side(buy: boolean): RefOrder[] {
    return this.orders
      .filter((o) => o.buy === buy)
      .sort((a, b) =>
        a.price === b.price
          ? a.seq - b.seq
          : buy
            ? a.price > b.price
              ? -1
              : 1
            : a.price < b.price
              ? -1
              : 1,
      );
  }

  private crosses(arrival: { buy: boolean; price: bigint }, resting: RefOrder): boolean {
    return arrival.buy ? resting.price <= arrival.price : resting.price >= arrival.price;
  }

  /** Places an order. */
  place(a: RefArrival): RefResult {
    const opposite = this.side(!a.buy).filter((o) => this.crosses(a, o));
    if (a.postOnly && opposite.length > 0) {
      return { fills: [], selfTradeCancels: [], rested: false, rejected: 'PostOnly' };
    }
    if (a.tif === 'FOK') {
      let available = 0n;
      for (const o of opposite) if (o.account !== a.account) available += o.qty;
      if (available < a.qty)
        return { fills: [], selfTradeCancels: [], rested: false, rejected: null };
    }
    let left = a.qty;
    const fills: RefFill[] = [];
    const selfTradeCancels: number[] = [];
    for (const o of opposite) {
      if (left === 0n) break;
      if (o.account === a.account) {
        selfTradeCancels.push(o.id);
        this.remove(o.id);
        continue;
      }
      const q = o.qty < left ? o.qty : left;
      fills.push({ maker: o.id, taker: a.id, qty: q, price: o.price });
      o.qty -= q;
      o.filled += q;
      left -= q;
      if (o.qty === 0n) this.remove(o.id);
    }
    let rested = false;
    if (left > 0n && a.tif === 'GTC') {
      this.orders.push({
        id: a.id,
        account: a.account,
        buy: a.buy,
        price: a.price,
        qty: left,
        filled: a.qty - left,
        seq: ++this.seq,
        postOnly: a.postOnly,
      });
      rested = true;
    }
    return { fills, selfTradeCancels, rested, rejected: null };
  }

  /** Cancels a resting order; false when it is not resting. */
  cancel(id: number): boolean {
    return this.remove(id);
  }

  /**
   * Amends a resting GTC order: a new price or a larger total loses time priority, a pure
   * decrease keeps it; a new price that crosses trades like an arrival. Returns null when the
   * order is not resting or the new total does not exceed the filled quantity.
   */
  replace(id: number, price: bigint, total: bigint): RefResult | null {
    const o = this.orders.find((x) => x.id === id);
    if (o === undefined || total <= o.filled) return null;
    const newLeaves = total - o.filled;
    if (price === o.price && newLeaves <= o.qty) {
      o.qty = newLeaves;
      return { fills: [], selfTradeCancels: [], rested: true, rejected: null };
    }
    if (o.postOnly && this.side(!o.buy).some((x) => this.crosses({ buy: o.buy, price }, x))) {
      return { fills: [], selfTradeCancels: [], rested: true, rejected: 'PostOnly' };
    }
    this.remove(id);
    const filledBefore = o.filled;
    const r = this.place({
      id,
      account: o.account,
      buy: o.buy,
      price,
      qty: newLeaves,
      tif: 'GTC',
      postOnly: o.postOnly,
    });
    const again = this.orders.find((x) => x.id === id);
    if (again !== undefined) again.filled += filledBefore;
    return r;
  }

  private remove(id: number): boolean {
    const i = this.orders.findIndex((o) => o.id === id);
    if (i < 0) return false;
    this.orders.splice(i, 1);
    return true;
  }
}
