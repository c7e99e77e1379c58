/**
 * The engine's re-sizing of a waiting managed TP/SL reaches the client over the trading socket
 * as `OrderReplaced` with a reason, and the order history shows the new size: a client keeps its
 * orders right from the reports, without re-implementing the sizing rules.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Wallet, WsClient } from './support/client.js';
import {
  btc,
  cancelOrder,
  cloid,
  placeOrder,
  px,
  startTestVenue,
  type TestVenue,
} from './support/fixture.js';

type Row = Record<string, unknown>;
const STOP_LOSS = 2;
const TAKE_PROFIT = 3;
const IOC = 2;
const MANAGED = 8;

describe('managed TP/SL re-sizing over the wire', () => {
  let t: TestVenue;
  let bob: Wallet;
  let carol: Wallet;
  let b: WsClient;
  let c: WsClient;

  beforeAll(async () => {
    t = await startTestVenue();
    await t.oracle({ 'BTC-PERP': '65000' });
    [bob, carol] = [t.wallet(1), t.wallet(2)];
    for (const w of [bob, carol]) await t.invite(w);
    await t.fund(bob, '20000');
    await t.fund(carol, '20000');
    [b, c] = [await t.connect(bob), await t.connect(carol)];
    expect((await c.request({ type: 'subscribeTrading' })).type).toBe('subscribeTradingSuccess');
  });
  afterAll(async () => t.close());

  const order = placeOrder;
  const row = async (orderId: string): Promise<Row> => {
    const r = await t.api('GET', `/historic/orders?wallet=${carol.address}&orderId=${orderId}`);
    return (r.body.orders as Row[])[0] as Row;
  };
  const replaced = (orderId: string, reason: string) =>
    c.waitFor(
      (m) =>
        m.type === 'executionReport' &&
        m.kind === 'OrderReplaced' &&
        (m.order as Row).orderId === orderId &&
        (m.order as Row).reason === reason,
    );

  it("an entry's fill sizes its child (ParentFilled); a position change sizes a TP on the position (PositionChanged)", async () => {
    const entryCloid = cloid(41);
    const entry = await order(carol, c, {
      isBuy: 1,
      price: px(65000),
      quantity: btc(0.03),
      cloid: entryCloid,
    });
    const child = await order(carol, c, {
      isBuy: 0,
      orderType: STOP_LOSS,
      price: 0n,
      triggerPrice: px(60000),
      quantity: btc(0.03),
      flags: MANAGED,
      parentCloid: entryCloid,
    });

    // Bob sells 0.01 into the entry: the child now protects 0.01.
    await order(bob, b, { isBuy: 0, price: px(65000), quantity: btc(0.01), timeInForce: IOC });
    const sized = await replaced(child, 'ParentFilled');
    expect(sized).toMatchObject({
      origCloid: null,
      previous: { quantity: '0.03', price: null, triggerPrice: '60000' },
      order: { quantity: '0.01', cumQty: '0', leavesQty: '0.01', ordStatus: 'Untriggered' },
    });
    // It comes after the entry's fill report, in seq order.
    const fill = c
      .reports('OrderPartiallyFilled')
      .find((m) => (m.order as Row).orderId === entry) as Row;
    expect(sized.seq as number).toBeGreaterThan(fill.seq as number);
    expect(await row(child)).toMatchObject({ quantity: '0.01', leavesQty: '0.01' });

    // The entry is cancelled; a TakeProfit on the position follows the position from then on.
    await cancelOrder(carol, c, entry);
    const tp = await order(carol, c, {
      isBuy: 0,
      orderType: TAKE_PROFIT,
      price: 0n,
      triggerPrice: px(70000),
      quantity: btc(0.01),
      flags: MANAGED,
    });
    // Carol sells 0.004 to Bob's bid: the position is 0.006, and so is the TP.
    await order(bob, b, { isBuy: 1, price: px(64000), quantity: btc(0.004) });
    await order(carol, c, { isBuy: 0, price: px(64000), quantity: btc(0.004), timeInForce: IOC });
    expect(await replaced(tp, 'PositionChanged')).toMatchObject({
      previous: { quantity: '0.01' },
      order: { quantity: '0.006', leavesQty: '0.006', ordStatus: 'Untriggered' },
    });
    expect(await row(tp)).toMatchObject({ quantity: '0.006', leavesQty: '0.006' });
  });
});
