/**
 * The history reads over real sockets (research 6.7, protocol.md sections 6-7): a trade bust
 * reaches the rows of orders that already ended (engine-rules section 8, "the order's cumQty
 * drops"), paging is stable while orders change, and a malformed cursor is refused.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Msg, Wallet, WsClient } from './support/client.js';
import {
  btc,
  cancelOrder,
  limitOrder,
  placeOrder,
  px,
  startTestVenue,
  type TestVenue,
} from './support/fixture.js';

type Row = Record<string, unknown>;
const IOC = 2;

async function until<T>(read: () => Promise<T>, ok: (v: T) => boolean, ms = 5_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (ok(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('a trade bust in the order history', () => {
  let t: TestVenue;
  let dir: string;
  let bob: Wallet; // maker
  let carol: Wallet; // taker
  let b: WsClient;
  let c: WsClient;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'perp-history-'));
    t = await startTestVenue({ dataDir: dir, snapshots: false });
    await t.oracle({ 'BTC-PERP': '65000' });
    [bob, carol] = [t.wallet(1), t.wallet(2)];
    for (const w of [bob, carol]) await t.invite(w);
    await t.fund(bob, '20000');
    await t.fund(carol, '20000');
    [b, c] = [await t.connect(bob), await t.connect(carol)];
  });
  afterAll(async () => {
    await t.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const order = placeOrder;
  const row = async (w: Wallet, orderId: string): Promise<Row> => {
    const r = await t.api('GET', `/historic/orders?wallet=${w.address}&orderId=${orderId}`);
    return (r.body.orders as Row[])[0] as Row;
  };
  const tradesOf = async (w: Wallet, orderId: string): Promise<Row[]> =>
    (await t.api('GET', `/account/trades?wallet=${w.address}&orderId=${orderId}`)).body
      .trades as Row[];
  const bust = async (tradeId: unknown) => {
    const r = await t.admin('POST', `/admin/trades/${String(tradeId)}/bust`, { reason: 'test' });
    expect(r.status).toBe(200);
  };
  const fields = (r: Row) => ({
    ordStatus: r.ordStatus,
    reason: r.reason,
    quantity: r.quantity,
    cumQty: r.cumQty,
    leavesQty: r.leavesQty,
    avgPx: r.avgPx,
  });

  it('a filled order whose only fill is busted ends Cancelled with reason Bust, on both sides', async () => {
    const maker = await order(bob, b, { isBuy: 0, price: px(70000), quantity: btc(0.01) });
    const taker = await order(carol, c, {
      isBuy: 1,
      price: px(70000),
      quantity: btc(0.01),
      timeInForce: IOC,
    });
    const [trade] = await until(
      () => tradesOf(carol, taker),
      (r) => r.length === 1,
    );
    expect(fields(await row(carol, taker))).toMatchObject({ ordStatus: 'Filled', cumQty: '0.01' });
    const closedTime = (await row(carol, taker)).closedTime;
    await bust(trade!.tradeId);
    for (const [w, id] of [
      [carol, taker],
      [bob, maker],
    ] as const) {
      const r = await until(
        () => row(w, id),
        (x) => x.ordStatus !== 'Filled',
      );
      expect(fields(r)).toEqual({
        ordStatus: 'Cancelled',
        reason: 'Bust',
        quantity: '0',
        cumQty: '0',
        leavesQty: '0',
        avgPx: null,
      });
    }
    const after = await row(carol, taker);
    expect(after.closedTime).toBe(closedTime);
    expect(after.updatedTime as number).toBeGreaterThanOrEqual(closedTime as number);
  });

  it('the TradeBust report of an ended order carries the order as restated, live and on replay', async () => {
    const live = await t.connect(carol);
    await live.request({ type: 'subscribeTrading' });
    await order(bob, b, { isBuy: 0, price: px(71000), quantity: btc(0.02) });
    const taker = await order(carol, c, {
      isBuy: 1,
      price: px(71000),
      quantity: btc(0.02),
      timeInForce: IOC,
    });
    const [trade] = await until(
      () => tradesOf(carol, taker),
      (r) => r.length === 1,
    );
    await bust(trade!.tradeId);
    const isBust = (m: Msg) =>
      m.type === 'executionReport' &&
      m.kind === 'TradeBust' &&
      (m.trade as Row | undefined)?.tradeId === trade!.tradeId;
    const pushed = await live.waitFor(isBust);
    // The engine keeps only working orders; the filled order is restated from its last report
    // with the engine's rule, as the order history restates it.
    const restated = {
      orderId: taker,
      ordStatus: 'Cancelled',
      reason: 'Bust',
      quantity: '0',
      cumQty: '0',
      leavesQty: '0',
      avgPx: null,
    };
    expect(pushed.order).toMatchObject(restated);
    const { closedTime: _closed, ...historyRow } = await row(carol, taker);
    expect(pushed.order).toEqual(historyRow);
    // A client that missed it gets the same report from the replay buffer.
    const late = await t.connect(carol);
    await late.request({ type: 'subscribeTrading', fromSeq: Number(pushed.seq) - 1 });
    expect(await late.waitFor(isBust)).toEqual({ ...pushed, replay: true });
  });

  it('a filled order with three fills, one busted: cumQty and avgPx from the two left, exact', async () => {
    // Asks 0.01 @ 65000, 0.02 @ 65000.5, 0.01 @ 65001; the taker buys all 0.04.
    const firstMaker = await order(bob, b, { isBuy: 0, price: px(65000), quantity: btc(0.01) });
    await order(bob, b, { isBuy: 0, price: px('65000.5'), quantity: btc(0.02) });
    const lastMaker = await order(bob, b, { isBuy: 0, price: px(65001), quantity: btc(0.01) });
    const taker = await order(carol, c, {
      isBuy: 1,
      price: px(65001),
      quantity: btc(0.04),
      timeInForce: IOC,
    });
    const trades = await until(
      () => tradesOf(carol, taker),
      (r) => r.length === 3,
    );
    expect(fields(await row(carol, taker))).toMatchObject({
      ordStatus: 'Filled',
      cumQty: '0.04',
      avgPx: '65000.5',
    });
    const first = trades.find((x) => x.lastPx === '65000');
    await bust(first!.tradeId);
    const r = await until(
      () => row(carol, taker),
      (x) => x.cumQty !== '0.04',
    );
    // (0.02 x 65000.5 + 0.01 x 65001) / 0.03, half-even at 18 decimals.
    expect(fields(r)).toEqual({
      ordStatus: 'Filled',
      reason: null,
      quantity: '0.03',
      cumQty: '0.03',
      leavesQty: '0',
      avgPx: '65000.666666666666666667',
    });
    // The other makers' orders are untouched; the busted maker's ends Cancelled/Bust.
    expect(fields(await row(bob, lastMaker))).toMatchObject({
      ordStatus: 'Filled',
      cumQty: '0.01',
    });
    expect(fields(await row(bob, firstMaker))).toMatchObject({
      ordStatus: 'Cancelled',
      reason: 'Bust',
    });
    // The trade rows keep the busted fill, flagged.
    const flagged = (await tradesOf(carol, taker)).filter((x) => x.busted === true);
    expect(flagged.map((x) => x.tradeId)).toEqual([first!.tradeId]);
    expect(flagged[0]).toMatchObject({ bustReason: 'test', bustTime: expect.any(Number) });
    expect(flagged[0]!.bustTime as number).toBeGreaterThanOrEqual(flagged[0]!.time as number);
    const kept = (await tradesOf(carol, taker)).filter((x) => x.tradeId !== first!.tradeId);
    expect(kept).toMatchObject([
      { busted: false, bustTime: null, bustReason: null },
      { busted: false, bustTime: null, bustReason: null },
    ]);
  });

  it('an IOC cancelled after two fills keeps its reason until its last fill is busted', async () => {
    await order(bob, b, { isBuy: 0, price: px(66000), quantity: btc(0.01) });
    await order(bob, b, { isBuy: 0, price: px('66000.5'), quantity: btc(0.01) });
    const taker = await order(carol, c, {
      isBuy: 1,
      price: px('66000.5'),
      quantity: btc(0.05),
      timeInForce: IOC,
    });
    const trades = await until(
      () => tradesOf(carol, taker),
      (r) => r.length === 2,
    );
    expect(fields(await row(carol, taker))).toEqual({
      ordStatus: 'Cancelled',
      reason: 'IOC',
      quantity: '0.05',
      cumQty: '0.02',
      leavesQty: '0',
      avgPx: '66000.25',
    });
    await bust(trades.find((x) => x.lastPx === '66000')!.tradeId);
    expect(
      fields(
        await until(
          () => row(carol, taker),
          (x) => x.cumQty === '0.01',
        ),
      ),
    ).toEqual({
      ordStatus: 'Cancelled',
      reason: 'IOC',
      quantity: '0.04',
      cumQty: '0.01',
      leavesQty: '0',
      avgPx: '66000.5',
    });
    await bust(trades.find((x) => x.lastPx === '66000.5')!.tradeId);
    expect(
      fields(
        await until(
          () => row(carol, taker),
          (x) => x.cumQty === '0',
        ),
      ),
    ).toEqual({
      ordStatus: 'Cancelled',
      reason: 'Bust',
      quantity: '0.03',
      cumQty: '0',
      leavesQty: '0',
      avgPx: null,
    });
  });

  it('rebuilds the same rows from the journal after a restart', async () => {
    const read = async () =>
      Promise.all(
        [bob, carol].map(
          async (w) =>
            (await t.api('GET', `/historic/orders?wallet=${w.address}&limit=500`)).body.orders,
        ),
      );
    const before = await read();
    await t.close();
    t = await startTestVenue({ dataDir: dir, snapshots: false });
    expect(await read()).toEqual(before);
  });
});

describe('paging the history', () => {
  let t: TestVenue;
  let alice: Wallet;
  let bob: Wallet;
  let a: WsClient;
  let b: WsClient;
  const ids: string[] = [];

  beforeAll(async () => {
    t = await startTestVenue();
    await t.oracle({ 'BTC-PERP': '65000' });
    [alice, bob] = [t.wallet(0), t.wallet(1)];
    for (const w of [alice, bob]) await t.invite(w);
    await t.fund(alice, '20000');
    await t.fund(bob, '20000');
    [a, b] = [await t.connect(alice), await t.connect(bob)];
    // Four resting bids, oldest first, each in its own millisecond.
    for (let i = 0; i < 4; i++) {
      const r = await a.request({
        type: 'placeOrder',
        signature: await alice.sign('Order', limitOrder(true, px(60000 + i), btc(0.01))),
      });
      ids.push((r.order as Row).orderId as string);
      await new Promise((r) => setTimeout(r, 3));
    }
  });
  afterAll(async () => t.close());

  const cancel = (orderId: string) => cancelOrder(alice, a, orderId);
  const ordersPage = async (query: string) =>
    (await t.api('GET', `/historic/orders?wallet=${alice.address}&${query}`)).body as {
      orders: Row[];
      nextCursor: string | null;
    };

  it('pages orders newest-created first; an order updated between pages is neither skipped nor repeated', async () => {
    const first = await ordersPage('limit=2');
    expect(first.orders.map((o) => o.orderId)).toEqual([ids[3], ids[2]]);
    expect(first.nextCursor).toEqual(expect.any(String));
    // Both an order already served and one not yet served change while the client pages.
    await cancel(ids[0]!);
    await cancel(ids[3]!);
    const second = await ordersPage(`limit=2&cursor=${first.nextCursor}`);
    expect(second.orders.map((o) => o.orderId)).toEqual([ids[1], ids[0]]);
    expect(second.orders[1]).toMatchObject({ ordStatus: 'Cancelled', reason: 'User' });
    expect(second.nextCursor).toBeNull();
    // A walk one row at a time sees every order once.
    const seen: unknown[] = [];
    let cursor: string | null = null;
    do {
      const p = await ordersPage(`limit=1${cursor === null ? '' : `&cursor=${cursor}`}`);
      seen.push(...p.orders.map((o) => o.orderId));
      cursor = p.nextCursor;
    } while (cursor !== null && seen.length < 10);
    expect(seen).toEqual([...ids].reverse());
  });

  it('applies startTime and endTime to the creation time', async () => {
    const all = (await ordersPage('limit=500')).orders;
    const created = (id: string) => all.find((o) => o.orderId === id)!.createdTime as number;
    // ids[0] was cancelled after ids[2] was created: it is still in a window ending there.
    const before = await ordersPage(`endTime=${created(ids[2]!)}`);
    expect(before.orders.map((o) => o.orderId)).toEqual([ids[1], ids[0]]);
    const from = await ordersPage(`startTime=${created(ids[2]!)}`);
    expect(from.orders.map((o) => o.orderId)).toEqual([ids[3], ids[2]]);
  });

  it('pages trades by fill time and execId; a bust between pages moves nothing', async () => {
    // Bob lifts alice's two remaining bids in one sweep: two fills in the same millisecond.
    const sweep = await b.request({
      type: 'placeOrder',
      signature: await bob.sign(
        'Order',
        limitOrder(false, px(60000), btc(0.02), { timeInForce: IOC }),
      ),
    });
    expect(sweep).toMatchObject({ order: { ordStatus: 'Filled' } });
    const trades = async (query: string) =>
      (await t.api('GET', `/account/trades?wallet=${alice.address}&${query}`)).body as {
        trades: Row[];
        nextCursor: string | null;
      };
    const all = await until(
      () => trades('limit=500'),
      (p) => p.trades.length === 2,
    );
    const first = await trades('limit=1');
    expect(first.trades.map((x) => x.execId)).toEqual([all.trades[0]!.execId]);
    await t.admin('POST', `/admin/trades/${String(first.trades[0]!.tradeId)}/bust`, {
      reason: 'test',
    });
    const second = await trades(`limit=1&cursor=${first.nextCursor}`);
    expect(second.trades.map((x) => x.execId)).toEqual([all.trades[1]!.execId]);
    expect(second.nextCursor).toBeNull();
  });

  it('refuses a cursor it did not issue with 400 naming the cursor; an empty cursor is page 1', async () => {
    const ordersCursor = (await ordersPage('limit=1')).nextCursor!;
    const tradesCursor = (await t.api('GET', `/account/trades?wallet=${alice.address}&limit=1`))
      .body.nextCursor as string;
    const bad = [
      'zzzz',
      `${ordersCursor}!`,
      Buffer.from('o:1:x').toString('base64url'),
      Buffer.from('1:2').toString('base64url'),
    ];
    for (const path of ['/historic/orders', '/account/trades', '/historic/trades']) {
      for (const cursor of bad) {
        const r = await t.api('GET', `${path}?wallet=${alice.address}&cursor=${cursor}`);
        expect(r.status).toBe(400);
        expect(r.body).toEqual({ error: 'cursor must be a nextCursor returned by this endpoint' });
      }
      const empty = await t.api('GET', `${path}?wallet=${alice.address}&cursor=`);
      expect(empty.status).toBe(200);
    }
    // A cursor of one read is not one of the other.
    const crossed = await t.api(
      'GET',
      `/account/trades?wallet=${alice.address}&cursor=${ordersCursor}`,
    );
    expect(crossed.status).toBe(400);
    const crossedBack = await t.api(
      'GET',
      `/historic/orders?wallet=${alice.address}&cursor=${tradesCursor}`,
    );
    expect(crossedBack.status).toBe(400);
  });
});
