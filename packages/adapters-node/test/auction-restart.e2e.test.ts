/**
 * A liquidation auction across a venue restart, over real sockets with a manual clock
 * (engine-rules 7.3, protocol.md sections 5-6): the auction resumes after a restart from the
 * journal alone and from a snapshot with the same price path (start, end, end time, the price at
 * a later clock time), its claims and their reservations kept; it settles at its end by the wake
 * timer, at each claim's own price, the unclaimed rest deleveraged at the bankruptcy price as it is
 * then. Claims are `source` `Liquidation` in `/account/trades` on both sides
 * (docs/protocol-decisions.md, "Market data").
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/engine/clock.js';
import { freshNonce, type Msg, Wallet, WsClient } from './support/client.js';
import { limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

const LIQ = 7;
const units = (n: number): bigint => BigInt(Math.round(n * 10_000));
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function until(condition: () => Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

/** The live auctions a fresh `liquidations` subscriber gets, priced at the venue's clock. */
async function liveAuctions(t: TestVenue): Promise<Msg[]> {
  const md = await WsClient.connect(t.venue.marketdata);
  await md.request({ type: 'subscribe', channel: 'liquidations' });
  await md.request({ type: 'ping' });
  const out = md.inbox.filter((m) => m.type === 'liquidationAuction');
  await md.close();
  return out;
}

describe('a liquidation auction across a restart', () => {
  for (const restart of ['journal', 'snapshot'] as const) {
    it(`resumes from the ${restart} on the same price path and settles its claims at the end`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'perp-auction-'));
      dirs.push(dir);
      // `atClose: false` leaves every record to replay; the default writes a snapshot at the stop.
      const snapshots = restart === 'journal' ? { atClose: false } : {};
      let clock = new ManualClock(Date.now());
      const start = () => startTestVenue({ dataDir: dir, clock, snapshots });
      let t = await start();
      const listed = await t.admin('POST', '/admin/instruments', {
        id: LIQ,
        symbol: 'LIQ-PERP',
        tickSize: '0.5',
        lotSize: '0.0001',
        quantityDecimals: 4,
        maxLeverage: 20,
        defaultLeverage: 20,
        openInterestCap: '100',
        liquidation: { auctionDurationMs: 60_000 },
      });
      expect(listed.status).toBe(200);
      await t.oracle({ 'LIQ-PERP': '1000' });
      const [alice, bob, carol, dave] = [0, 1, 2, 3].map((i) => t.wallet(i)) as [
        Wallet,
        Wallet,
        Wallet,
        Wallet,
      ];
      for (const w of [alice, bob, carol, dave]) {
        await t.invite(w);
        await t.fund(w, w === alice ? '100' : '10000');
      }
      const b = await t.connect(bob);
      await b.request({
        type: 'placeOrder',
        signature: await bob.sign('Order', limitOrder(false, px(1000), units(1), { market: LIQ })),
      });
      const a = await t.connect(alice);
      const fill = await a.request({
        type: 'placeOrder',
        signature: await alice.sign(
          'Order',
          limitOrder(true, px(1000), units(1), { market: LIQ, timeInForce: 2 }),
        ),
      });
      expect(fill).toMatchObject({ type: 'orderAck', order: { ordStatus: 'Filled' } });
      // Alice: cash -900.45 (100 less the 1000 bought and its 0.45 fee). Bob's bid is below her
      // bankruptcy price, so at mark 915 (equity 14.55 < maintenance 22.875) the market step
      // fills nothing and the whole long goes to auction, from 915 to 915 - 14.55 = 900.45.
      await b.request({
        type: 'placeOrder',
        signature: await bob.sign('Order', limitOrder(true, px(890), units(1), { market: LIQ })),
      });
      await b.request({
        type: 'placeOrder',
        signature: await bob.sign('Order', limitOrder(false, px(940), units(1), { market: LIQ })),
      });
      await t.oracle({ 'LIQ-PERP': '915' });
      const t0 = clock.now();
      const path = {
        type: 'liquidationAuction',
        auctionId: '1',
        instrument: 'LIQ-PERP',
        side: 'Buy',
        startPrice: '915',
        endPrice: '900.45',
        endTime: t0 + 60_000,
        status: 'Live',
      };
      expect(await liveAuctions(t)).toEqual([{ ...path, remaining: '1', price: '915' }]);

      const claim = async (ws: WsClient, w: Wallet, quantity: bigint) =>
        ws.request({
          type: 'claimLiquidation',
          signature: await w.sign('ClaimLiquidation', {
            auctionId: 1n,
            quantity,
            maxPrice: px(1000),
            nonce: freshNonce(),
            deadline: Wallet.deadline(),
          }),
        });
      // A quarter of the way: 915 - 14.55 / 4.
      clock.set(t0 + 15_000);
      let c = await t.connect(carol);
      expect(await claim(c, carol, units(0.3))).toMatchObject({
        type: 'claimAck',
        auctionId: '1',
        quantity: '0.3',
        price: '911.3625',
      });
      // Reserved: 0.3 x 911.3625 / 20 = 13.6704375, rounded up to the micro-unit.
      const withdrawable = async () =>
        (await t.api('GET', `/account_summary?wallet=${carol.address}`)).body.withdrawable;
      expect(await withdrawable()).toBe('9986.329562');
      const before = await t.stateHash();
      await t.close();
      const snapshotFiles = (readdirSync(dir, { recursive: true }) as string[]).filter((f) =>
        f.endsWith('.snap'),
      );
      expect(snapshotFiles.length).toBe(restart === 'snapshot' ? 1 : 0);

      // Back up half-way through: the same auction, its claim and its reservation.
      clock = new ManualClock(t0 + 30_000);
      t = await start();
      expect(await t.stateHash()).toEqual(before);
      expect(await liveAuctions(t)).toEqual([{ ...path, remaining: '0.7', price: '907.725' }]);
      expect(await withdrawable()).toBe('9986.329562');
      c = await t.connect(carol);
      await c.request({ type: 'subscribeTrading' });
      const d = await t.connect(dave);
      await d.request({ type: 'subscribeTrading' });
      expect(await claim(d, dave, units(0.2))).toMatchObject({
        type: 'claimAck',
        quantity: '0.2',
        price: '907.725',
      });
      const md = await WsClient.connect(t.venue.marketdata);
      await md.request({ type: 'subscribe', channel: 'liquidations' });

      // The end: the wake timer settles it.
      clock.set(t0 + 60_000);
      const ended = await md.waitFor(
        (m) => m.type === 'liquidationAuction' && m.status === 'Ended',
      );
      expect(ended).toEqual({ ...path, status: 'Ended', remaining: '0.5', price: '900.45' });
      await md.close();
      const settled = async (ws: WsClient) =>
        (await ws.waitFor((m) => m.kind === 'LiquidationClaim')) as Msg & { trade: Msg };
      expect(await settled(c)).toMatchObject({
        auctionId: '1',
        instrument: 'LIQ-PERP',
        status: 'Settled',
        quantity: '0.3',
        price: '911.3625',
        trade: { side: 'Buy', lastQty: '0.3', lastPx: '911.3625', fee: '0', positionAfter: '0.3' },
      });
      expect(await settled(d)).toMatchObject({
        status: 'Settled',
        quantity: '0.2',
        price: '907.725',
        trade: { lastQty: '0.2', lastPx: '907.725', positionAfter: '0.2' },
      });
      await until(async () => (await withdrawable()) !== '9986.329562');
      // Alice after both claims (less their 0.5% fees 1.367044 and 0.907725): equity 9.728981
      // on 0.5 left, below its maintenance margin 11.4375, so the rest goes to ADL (Bob, the
      // only short) at 915 - 9.728981 / 0.5 = 895.542038, and she ends flat at zero.
      const trades = async (w: Wallet) =>
        (
          (await t.api('GET', `/account/trades?wallet=${w.address}&instrument=LIQ-PERP`)).body
            .trades as Record<string, unknown>[]
        ).map((r) => [r.source, r.side, r.lastQty, r.lastPx]);
      expect(await trades(alice)).toEqual([
        ['Liquidation', 'Sell', '0.5', '895.542038'],
        ['Liquidation', 'Sell', '0.2', '907.725'],
        ['Liquidation', 'Sell', '0.3', '911.3625'],
        ['Order', 'Buy', '1', '1000'],
      ]);
      expect(await trades(carol)).toEqual([['Liquidation', 'Buy', '0.3', '911.3625']]);
      expect((await trades(bob))[0]).toEqual(['ADL', 'Buy', '0.5', '895.542038']);
      const summary = (await t.api('GET', `/account_summary?wallet=${alice.address}`)).body;
      expect(summary).toMatchObject({ assetPositions: [], withdrawable: '0' });
      expect((summary.crossMarginSummary as Msg).accountValue).toBe('0');
      await t.close();
    });
  }
});
