/**
 * The per-account cap on working orders (`VenueSettings.maxWorkingOrdersPerAccount`, our rule
 * beyond the spec, docs/protocol-decisions.md): an order that could rest is refused with 4000
 * once the account holds the most allowed, counting resting and untriggered orders of every
 * market and margin mode, managed children included; IOC and FOK limit orders, amends and the
 * liquidation's system fills pass. Each case runs with a cap of 3 and would fail on a build
 * without the cap.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { EngineEvent, Order, OrderRejectedReport } from '../src/index.js';
import {
  BTC_SETTINGS,
  cloid,
  ETH_SETTINGS,
  type OrderSpec,
  TestVenue,
  wallet,
} from '../src/testing/index.js';

const BTC = 'BTC-PERP';
const ETH = 'ETH-PERP';
const A = wallet(0xa1);
const B = wallet(0xb1);
const CAP = 3;
const AT_CAP = `INVALID_REQUEST: account has ${CAP} working orders, the most allowed is ${CAP}`;

/** A bid far below the market: it rests and never fills. */
const farBid = (price = '40000'): OrderSpec => ({ side: 'Buy', qty: '0.001', price });

const workingOf = (v: TestVenue, account: string): number =>
  v.state.accounts.get(account)!.orders.size;

/** A's working limit order in `market` (the only one there). */
function orderIn(v: TestVenue, market: number): Order {
  let found: Order | undefined;
  v.state.orders.forEach((o) => {
    if (o.account === A && o.market === market && o.orderType === 'Limit') found = o;
  });
  if (found === undefined) throw new Error(`A has no order in market ${market}`);
  return found;
}

const rejectedOf = (events: readonly EngineEvent[]): OrderRejectedReport | undefined =>
  events.find(
    (e): e is OrderRejectedReport => e.type === 'executionReport' && e.kind === 'OrderRejected',
  );

describe(`a cap of ${CAP} working orders per account`, () => {
  let v: TestVenue;
  beforeEach(() => {
    v = new TestVenue({ settings: { maxWorkingOrdersPerAccount: CAP }, checkPurity: true });
    v.list(BTC_SETTINGS);
    v.list(ETH_SETTINGS);
    for (const w of [A, B]) {
      v.open(w);
      v.fund(w, '100000');
    }
    v.fund(A, '5000', ETH);
    v.oracle({ [BTC]: '50000', [ETH]: '3000' });
  });

  /** Fills A's allowance with one order of each kind: cross limit, isolated limit, a stop. */
  function fillToCap(): void {
    v.expectOk(v.place(A, BTC, farBid()));
    v.expectOk(v.place(A, ETH, { side: 'Sell', qty: '0.1', price: '4000', isolated: true }));
    v.expectOk(
      v.place(A, BTC, {
        side: 'Buy',
        qty: '0.001',
        price: '56000',
        trigger: '55000',
        type: 'StopLimit',
      }),
    );
    expect(workingOf(v, A)).toBe(CAP);
  }

  it('refuses the next resting order with 4000 and the counts; only the nonce is spent', () => {
    fillToCap();
    const before = v.state;
    const auth = { nonce: BigInt(v.time), deadline: BigInt(Math.floor(v.time / 1000) + 60) };
    const refused = v.place(A, BTC, farBid('41000'), { auth });
    expect(v.outcome(refused)).toMatchObject({
      ok: false,
      code: 4000,
      message: AT_CAP,
      nonceConsumed: true,
    });
    // The refused attempt's trace, as for every business refusal: a Rejected report.
    expect(rejectedOf(refused)).toMatchObject({
      code: 4000,
      message: AT_CAP,
      order: { ordStatus: 'Rejected', reason: 'TooManyOrders' },
    });
    // Nothing rests or holds: the working orders, the account's list and the books are the same
    // objects as before; the nonce is in the used set.
    expect(v.state.orders).toBe(before.orders);
    expect(v.state.accounts.get(A)!.orders).toBe(before.accounts.get(A)!.orders);
    expect(v.state.accounts.get(A)!.orderTotals).toEqual(before.accounts.get(A)!.orderTotals);
    expect(v.state.accounts.get(A)!.crossCash).toBe(before.accounts.get(A)!.crossCash);
    expect(v.state.markets).toBe(before.markets);
    expect(v.state.nonces.has(`${A}|${auth.nonce}`)).toBe(true);
    const replay = v.place(A, BTC, farBid('41000'), { auth });
    expect(v.outcome(replay)).toMatchObject({ ok: false, code: 4002 });
  });

  it('counts untriggered orders of every kind, managed children included', () => {
    // A position for the position-sized TP/SL.
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '0.01', price: '50000' }));
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '0.01', price: '50000', tif: 'IOC' }));
    v.expectOk(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '0.01',
        trigger: '45000',
        type: 'StopLoss',
        reduceOnly: true,
      }),
    );
    v.expectOk(
      v.place(A, BTC, {
        side: 'Sell',
        qty: '0.01',
        trigger: '60000',
        type: 'TakeProfit',
        managed: true,
        reduceOnly: true,
      }),
    );
    v.expectOk(v.place(A, BTC, farBid()));
    // A trigger order every other rule accepts (another stop-loss of 0.01 on the 0.01 position
    // would be refused first: the reduce-only orders of one sweep may not close more than it).
    const refused = v.place(A, BTC, {
      side: 'Sell',
      qty: '0.01',
      price: '43900',
      trigger: '44000',
      type: 'StopLimit',
    });
    expect(v.outcome(refused)).toMatchObject({ ok: false, code: 4000, message: AT_CAP });
  });

  it("an entry order's TP/SL children count one by one: the one past the cap is refused", () => {
    v.expectOk(v.place(A, BTC, { ...farBid('45000'), qty: '0.01', cloid: cloid(1) }));
    const child = (type: 'StopLoss' | 'TakeProfit', trigger: string) =>
      v.place(A, BTC, {
        side: 'Sell',
        qty: '0.01',
        trigger,
        type,
        managed: true,
        reduceOnly: true,
        parentCloid: cloid(1),
      });
    v.expectOk(child('StopLoss', '40000'));
    v.expectOk(v.place(A, ETH, { side: 'Buy', qty: '0.1', price: '2000' }));
    const tp = child('TakeProfit', '60000');
    expect(v.outcome(tp)).toMatchObject({ ok: false, code: 4000, message: AT_CAP });
    // The entry and its stop are untouched.
    expect(workingOf(v, A)).toBe(CAP);
  });

  it('a cancel, a fill and an expiry each free a slot', () => {
    fillToCap();
    const bid = orderIn(v, 1);
    v.expectOk(v.cancel(A, BTC, { orderId: bid.orderId }));
    v.expectOk(v.place(A, BTC, { side: 'Buy', qty: '0.001', price: '49000' }));
    expect(workingOf(v, A)).toBe(CAP);
    // B sells into A's 49,000 bid: it fills and ends.
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '0.001', price: '49000', tif: 'IOC' }));
    expect(workingOf(v, A)).toBe(CAP - 1);
    v.expectOk(
      v.place(A, BTC, { ...farBid(), tif: 'GTD', expiry: Math.floor(v.time / 1000) + 60 }),
    );
    expect(v.outcome(v.place(A, BTC, farBid('41000')))).toMatchObject({ ok: false, code: 4000 });
    v.advance(61_000);
    expect(workingOf(v, A)).toBe(CAP - 1);
    v.expectOk(v.place(A, BTC, farBid('41000')));
  });

  it('passes IOC and FOK orders at the cap, which never rest; refuses a crossing GTC', () => {
    fillToCap();
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '0.002', price: '50000' }));
    const ioc = v.place(A, BTC, { side: 'Buy', qty: '0.001', price: '50000', tif: 'IOC' });
    expect(v.reports(ioc, A).map((r) => r.kind)).toEqual(['OrderAccepted', 'OrderFilled']);
    const fok = v.place(A, BTC, { side: 'Buy', qty: '0.001', price: '50000', tif: 'FOK' });
    expect(v.reports(fok, A).map((r) => r.kind)).toEqual(['OrderAccepted', 'OrderFilled']);
    // An IOC that finds nothing is accepted and cancelled, as without the cap.
    const empty = v.place(A, BTC, { side: 'Buy', qty: '0.001', price: '49000', tif: 'IOC' });
    expect(v.reports(empty, A).map((r) => r.kind)).toEqual(['OrderAccepted', 'OrderCancelled']);
    expect(workingOf(v, A)).toBe(CAP);
    // A GTC that would cross may rest a remainder, so it counts (decided at placement, before
    // any matching): an account at the cap takes with IOC.
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '0.001', price: '50000' }));
    const gtc = v.place(A, BTC, { side: 'Buy', qty: '0.001', price: '50000' });
    expect(v.outcome(gtc)).toMatchObject({ ok: false, code: 4000, message: AT_CAP });
    // A stop-limit with IOC still waits untriggered: it counts too.
    const stopIoc = v.place(A, BTC, {
      side: 'Buy',
      qty: '0.001',
      price: '56000',
      trigger: '55000',
      type: 'StopLimit',
      tif: 'IOC',
    });
    expect(v.outcome(stopIoc)).toMatchObject({ ok: false, code: 4000 });
  });

  it('passes an amend at the cap: it adds no order', () => {
    fillToCap();
    const bid = orderIn(v, 1);
    const amended = v.run({
      type: 'replaceOrder',
      account: A,
      market: 1,
      orderId: BigInt(bid.orderId),
      origCloid: null,
      price: v.request(BTC, farBid('42000')).price,
      triggerPrice: 0n,
      quantity: v.request(BTC, { side: 'Buy', qty: '0.002' }).quantity,
      cloid: null,
    });
    v.expectOk(amended);
    expect(v.reports(amended, A).map((r) => r.kind)).toEqual(['OrderReplaced']);
    expect(workingOf(v, A)).toBe(CAP);
    // A new order is still refused: the amend passed at the cap, not below it.
    expect(v.outcome(v.place(A, BTC, farBid('41000')))).toMatchObject({ ok: false, code: 4000 });
  });

  it('is per account: another account places while A is at the cap', () => {
    fillToCap();
    expect(v.outcome(v.place(A, BTC, farBid('41000')))).toMatchObject({ ok: false, code: 4000 });
    v.expectOk(v.place(B, BTC, farBid()));
  });

  it('liquidates an account at the cap: its orders are cancelled and its position closed', () => {
    v.fund(B, '1000000');
    const C = wallet(0xc1);
    v.open(C);
    v.fund(C, '550');
    // C: 0.1 long at 50,000 (5,000 of notional on 550) and two resting bids: three orders.
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '0.1', price: '50000' }));
    v.expectOk(v.place(C, BTC, { side: 'Buy', qty: '0.1', price: '50000', tif: 'IOC' }));
    v.expectOk(v.place(C, BTC, farBid('30000')));
    v.expectOk(v.place(C, BTC, farBid('30500')));
    v.expectOk(v.place(C, BTC, { side: 'Sell', qty: '0.1', price: '60000', reduceOnly: true }));
    expect(workingOf(v, C)).toBe(CAP);
    expect(v.outcome(v.place(C, BTC, farBid('31000')))).toMatchObject({ ok: false, code: 4000 });
    // B's bid, above C's bankruptcy price, takes the liquidation's market step.
    v.expectOk(v.place(B, BTC, { side: 'Buy', qty: '0.1', price: '44600' }));
    v.expectOk(v.place(B, BTC, { side: 'Sell', qty: '0.001', price: '45000' }));
    const crash = v.oracle({ [BTC]: '44500' });
    const reports = v.reports(crash, C);
    expect(reports.map((r) => r.kind)).toEqual([
      'OrderCancelled',
      'OrderCancelled',
      'OrderCancelled',
      'Liquidation',
    ]);
    expect(reports.map((r) => ('order' in r ? r.order.reason : null))).toEqual([
      'Liquidation',
      'Liquidation',
      'Liquidation',
      null,
    ]);
    expect(workingOf(v, C)).toBe(0);
    expect(v.state.accounts.get(C)!.positions.find((p) => p.market === 1)?.size ?? 0n).toBe(0n);
  });
});

describe('setVenueSettings', () => {
  let v: TestVenue;
  beforeEach(() => {
    v = new TestVenue({ checkPurity: true });
    v.list(BTC_SETTINGS);
    v.open(A);
    v.fund(A, '100000');
    v.oracle({ [BTC]: '50000' });
  });

  it('starts at the default of 1,000', () => {
    expect(v.state.settings.maxWorkingOrdersPerAccount).toBe(1_000);
  });

  it('a lowered cap cancels nothing; the account places again once below it', () => {
    for (const price of ['40000', '40500', '41000']) v.expectOk(v.place(A, BTC, farBid(price)));
    v.expectOk(v.run({ type: 'setVenueSettings', maxWorkingOrdersPerAccount: 1 }));
    expect(workingOf(v, A)).toBe(3);
    expect(v.outcome(v.place(A, BTC, farBid('41500')))).toMatchObject({
      ok: false,
      code: 4000,
      message: 'INVALID_REQUEST: account has 3 working orders, the most allowed is 1',
    });
    v.expectOk(v.run({ type: 'cancelAll', account: A, market: 0 }));
    v.expectOk(v.place(A, BTC, farBid('41500')));
    expect(v.outcome(v.place(A, BTC, farBid('42000')))).toMatchObject({ ok: false, code: 4000 });
  });

  it('refuses a cap below 1 or not a whole number, and changes nothing', () => {
    const before = v.state;
    expect(
      v.outcome(v.run({ type: 'setVenueSettings', maxWorkingOrdersPerAccount: 0 })),
    ).toMatchObject({
      ok: false,
      code: 4000,
      message: 'INVALID_REQUEST: maxWorkingOrdersPerAccount must be at least 1, not 0',
    });
    expect(
      v.outcome(v.run({ type: 'setVenueSettings', maxWorkingOrdersPerAccount: 2.5 })),
    ).toMatchObject({ ok: false, code: 4000 });
    expect(v.state.settings).toBe(before.settings);
  });
});
