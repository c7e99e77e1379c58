/**
 * The history reads over real sockets (research 6.7, protocol.md sections 6-7): a trade bust
 * reaches the rows of orders that already ended (engine-rules section 8, "the order's cumQty
 * drops"), paging is stable while orders change, and a malformed cursor is refused.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Wallet, WsClient } from './support/client.js';
import { btc, limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

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

  const order = async (w: Wallet, ws: WsClient, fields: Record<string, bigint | number>) => {
    const { isBuy, price, quantity, ...extra } = fields;
    const r = await ws.request({
      type: 'placeOrder',
      signature: await w.sign(
        'Order',
        limitOrder(isBuy === 1, price as bigint, quantity as bigint, extra),
      ),
    });
    expect(r.type).toBe('orderAck');
    return (r.order as Row).orderId as string;
  };
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
