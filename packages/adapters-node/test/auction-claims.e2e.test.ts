/**
 * Claims racing for the last lots of a liquidation auction, over real sockets (engine-rules 7.3,
 * protocol.md section 5): claims from two wallets sent at once are taken one at a time in
 * arrival order; the one that no longer fits is refused with the remaining quantity in its message
 * (its nonce consumed, nothing else changed), and the auction shows exactly the claims that won.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshNonce, type Msg, Wallet, WsClient } from './support/client.js';
import { limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

const LIQ = 7;
const units = (n: number): bigint => BigInt(Math.round(n * 10_000));

describe('claims racing for the last lots', () => {
  let t: TestVenue;
  let md: WsClient;
  afterAll(async () => {
    await md.close();
    await t.close();
  });

  let auctionId: string;
  const sockets = new Map<Wallet, WsClient>();
  beforeAll(async () => {
    t = await startTestVenue();
    const listed = await t.admin('POST', '/admin/instruments', {
      id: LIQ,
      symbol: 'LIQ-PERP',
      tickSize: '0.5',
      lotSize: '0.0001',
      quantityDecimals: 4,
      maxLeverage: 20,
      defaultLeverage: 20,
      openInterestCap: '100',
      // Long enough that the price path does not matter to the test.
      liquidation: { auctionDurationMs: 3_600_000 },
    });
    expect(listed.status).toBe(200);
    await t.oracle({ 'LIQ-PERP': '1000' });
    const [alice, bob] = [t.wallet(0), t.wallet(1)];
    for (const w of [alice, bob]) {
      await t.invite(w);
      await t.fund(w, w === alice ? '100' : '10000');
    }
    const b = await t.connect(bob);
    const a = await t.connect(alice);
    await b.request({
      type: 'placeOrder',
      signature: await bob.sign('Order', limitOrder(false, px(1000), units(1), { market: LIQ })),
    });
    await a.request({
      type: 'placeOrder',
      signature: await alice.sign(
        'Order',
        limitOrder(true, px(1000), units(1), { market: LIQ, timeInForce: 2 }),
      ),
    });
    for (const [buy, price] of [
      [true, 890],
      [false, 940],
    ] as const) {
      await b.request({
        type: 'placeOrder',
        signature: await bob.sign('Order', limitOrder(buy, px(price), units(1), { market: LIQ })),
      });
    }
    md = await WsClient.connect(t.venue.marketdata);
    await md.request({ type: 'subscribe', channel: 'liquidations' });
    await t.oracle({ 'LIQ-PERP': '915' });
    const live = await md.waitFor((m) => m.type === 'liquidationAuction' && m.status === 'Live');
    expect(live).toMatchObject({ instrument: 'LIQ-PERP', side: 'Buy', remaining: '1' });
    auctionId = live.auctionId as string;
  });

  const claimant = async (i: number): Promise<Wallet> => {
    const w = t.wallet(i);
    await t.invite(w);
    await t.fund(w, '10000');
    sockets.set(w, await t.connect(w));
    return w;
  };
  const claim = async (w: Wallet, quantity: number): Promise<Msg> =>
    sockets.get(w)!.request({
      type: 'claimLiquidation',
      signature: await w.sign('ClaimLiquidation', {
        auctionId: BigInt(auctionId),
        quantity: units(quantity),
        maxPrice: px(1000),
        nonce: freshNonce(),
        deadline: Wallet.deadline(),
      }),
    });

  it('takes one of two claims that do not both fit, and names what is left to the other', async () => {
    const [carol, dave] = [await claimant(2), await claimant(3)];
    expect(await claim(carol, 0.4)).toMatchObject({ type: 'claimAck', quantity: '0.4' });
    // 0.6 left; 0.5 each, sent together: the first to arrive wins, the other no longer fits.
    const [c, d] = await Promise.all([claim(carol, 0.5), claim(dave, 0.5)]);
    const answers = [c, d].map((m) => m.type).sort();
    expect(answers).toEqual(['claimAck', 'error']);
    const lost = [c, d].find((m) => m.type === 'error')!;
    expect(lost).toMatchObject({
      code: 4034,
      message: "INVALID_ORDER_QUANTITY: claim of 0.5 exceeds the auction's remaining 0.1",
    });
    // The channel saw the start and exactly the two claims that won.
    await md.request({ type: 'ping' });
    expect(
      md.inbox.filter((m) => m.type === 'liquidationAuction').map((m) => [m.remaining, m.status]),
    ).toEqual([
      ['1', 'Live'],
      ['0.6', 'Live'],
      ['0.1', 'Live'],
    ]);
    // The loser takes the 0.1 left: the auction is fully claimed and settles at once.
    const loser = lost === c ? carol : dave;
    expect(await claim(loser, 0.1)).toMatchObject({ type: 'claimAck', quantity: '0.1' });
    const ended = await md.waitFor((m) => m.type === 'liquidationAuction' && m.status === 'Ended');
    expect(ended.remaining).toBe('0');
    const size = async (w: Wallet) =>
      (
        (await t.api('GET', `/account_summary?wallet=${w.address}`)).body.assetPositions as Msg[]
      ).find((p) => p.instrument === 'LIQ-PERP')?.szi;
    const winner = loser === carol ? dave : carol;
    expect(await size(winner)).toBe(winner === carol ? '0.9' : '0.5');
    expect(await size(loser)).toBe(loser === carol ? '0.5' : '0.1');
  });
});
