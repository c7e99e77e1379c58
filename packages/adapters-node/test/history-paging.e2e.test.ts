/**
 * The history reads on a venue whose clock the test holds still and then moves (research 6.7,
 * protocol-decisions "History paging"): rows of the same millisecond come newest (highest id)
 * first and page by id; `limit` defaults to 100; `status` selects open, closed or all; without
 * `startTime` a read covers the 7 days up to now, both ends included to the millisecond, except
 * `status=open` and a read by `orderId` or `cloid`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/config.js';
import { ManualClock } from '../src/engine/clock.js';
import { freshNonce, Wallet, type WsClient } from './support/client.js';
import { btc, cloid, limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

type Row = Record<string, unknown>;
interface Page {
  rows: Row[];
  nextCursor: string | null;
}
const WEEK = 7 * 86_400_000;
const BIDS = 103;
const GTD = 1;
const IOC = 2;

// The setup places over a hundred orders from one wallet: above 20 requests per second.
const CONFIG = {
  ...DEFAULT_CONFIG,
  limits: {
    ...DEFAULT_CONFIG.limits,
    walletRequestsPerSecond: 100_000,
    signedRequestsPer5Minutes: 100_000,
    publicReadsPerSecond: 100_000,
  },
};

const byIdDesc = (ids: string[]): string[] =>
  [...ids].sort((x, y) => (BigInt(x) < BigInt(y) ? 1 : BigInt(x) > BigInt(y) ? -1 : 0));

describe('history paging within one millisecond, default limit, status and default window', () => {
  let t: TestVenue;
  let clock: ManualClock;
  let alice: Wallet;
  let bob: Wallet;
  let a: WsClient;
  let b: WsClient;
  /** Alice's bids, in placement order (all at the same engine time). */
  const bids: string[] = [];
  let cancelled: string;
  let sweep: string;
  let bobEth: string;
  let bobGtd: string;
  let placedAt: number;

  beforeAll(async () => {
    placedAt = Date.now();
    clock = new ManualClock(placedAt);
    t = await startTestVenue({ clock, config: CONFIG });
    await t.oracle({ 'BTC-PERP': '65000', 'ETH-PERP': '3000' });
    [alice, bob] = [t.wallet(0), t.wallet(1)];
    for (const w of [alice, bob]) {
      await t.invite(w);
      await t.fund(w, '100000');
    }
    [a, b] = [await t.connect(alice), await t.connect(bob)];
    for (let i = 0; i < BIDS; i++) {
      const r = await a.request({
        type: 'placeOrder',
        signature: await alice.sign(
          'Order',
          limitOrder(true, px(60_000 + i), btc(0.01), { cloid: cloid(i + 1) }),
        ),
      });
      expect(r.type).toBe('orderAck');
      bids.push((r.order as Row).orderId as string);
    }
    // One bid cancelled, the two best lifted by one IOC sell: two fills in one millisecond.
    cancelled = bids[0]!;
    expect(
      await a.request({
        type: 'cancelOrder',
        signature: await alice.sign('Cancel', {
          market: 1,
          orderId: BigInt(cancelled),
          nonce: freshNonce(),
          deadline: Wallet.deadline(),
        }),
      }),
    ).toMatchObject({ type: 'cancelAck' });
    const s = await b.request({
      type: 'placeOrder',
      signature: await bob.sign(
        'Order',
        limitOrder(false, px(60_000 + BIDS - 2), btc(0.02), { timeInForce: IOC }),
      ),
    });
    expect(s).toMatchObject({ type: 'orderAck', order: { ordStatus: 'Filled' } });
    sweep = (s.order as Row).orderId as string;
    // Bob also rests a bid on another market.
    const e = await b.request({
      type: 'placeOrder',
      signature: await bob.sign('Order', limitOrder(true, px(2_990), 100n, { market: 2 })),
    });
    expect(e).toMatchObject({ type: 'orderAck', order: { instrument: 'ETH-PERP' } });
    bobEth = (e.order as Row).orderId as string;
    // And a GTD bid that expires an hour from now.
    const g = await b.request({
      type: 'placeOrder',
      signature: await bob.sign(
        'Order',
        limitOrder(true, px(59_000), btc(0.01), {
          timeInForce: GTD,
          expiry: BigInt(Math.floor(placedAt / 1000) + 3_600),
        }),
      ),
    });
    expect(g).toMatchObject({ type: 'orderAck', order: { ordStatus: 'New' } });
    bobGtd = (g.order as Row).orderId as string;
  });
  afterAll(async () => t.close());

  const read = async (path: string, query: string): Promise<Page> => {
    const r = await t.api('GET', `${path}?${query}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const body = r.body as Record<string, unknown>;
    return {
      rows: (body.orders ?? body.trades) as Row[],
      nextCursor: body.nextCursor as string | null,
    };
  };
  const orders = (w: Wallet, query = '') =>
    read('/historic/orders', `wallet=${w.address}&${query}`);
  const trades = (w: Wallet, query = '') => read('/account/trades', `wallet=${w.address}&${query}`);
  const ids = (p: Page, key = 'orderId') => p.rows.map((r) => r[key] as string);

  it('rows of one millisecond: highest id first; 100 by default; the cursor pages by id', async () => {
    const first = await orders(alice);
    expect(new Set(first.rows.map((r) => r.createdTime))).toEqual(new Set([placedAt]));
    expect(first.rows).toHaveLength(100);
    expect(ids(first)).toEqual(byIdDesc(bids).slice(0, 100));
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await orders(alice, `cursor=${first.nextCursor}`);
    expect(ids(second)).toEqual(byIdDesc(bids).slice(100));
    expect(second.nextCursor).toBeNull();
    // A walk in pages of 10 sees every order once, in the same order.
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const p = await orders(alice, `limit=10${cursor === null ? '' : `&cursor=${cursor}`}`);
      seen.push(...ids(p));
      cursor = p.nextCursor;
    } while (cursor !== null && seen.length <= BIDS);
    expect(seen).toEqual(byIdDesc(bids));
  });

  it('two fills of one sweep: the later execId first, on both sides', async () => {
    for (const w of [alice, bob]) {
      const p = await trades(w);
      expect(p.rows).toHaveLength(2);
      expect(p.rows.map((r) => r.time)).toEqual([placedAt, placedAt]);
      const exec = ids(p, 'execId');
      expect(exec).toEqual(byIdDesc(exec));
      expect(exec[0]).not.toBe(exec[1]);
    }
    // The better bid (placed last, highest price) filled first: it is the older fill.
    const aliceRows = (await trades(alice)).rows;
    expect(aliceRows.map((r) => r.orderId)).toEqual([bids[BIDS - 2], bids[BIDS - 1]]);
    const page1 = await trades(bob, 'limit=1');
    const page2 = await trades(bob, `limit=1&cursor=${page1.nextCursor}`);
    expect([...ids(page1, 'execId'), ...ids(page2, 'execId')]).toEqual(
      ids(await trades(bob), 'execId'),
    );
    expect(page2.nextCursor).toBeNull();
  });

  it('status open, closed and all; all is the default', async () => {
    const all = await orders(alice, 'limit=500');
    expect(all.rows).toHaveLength(BIDS);
    expect(await orders(alice, 'limit=500&status=all')).toEqual(all);
    // The wallet in any case is the same account (protocol.md section 3).
    const upper = `0x${alice.address.slice(2).toUpperCase()}`;
    expect(await read('/historic/orders', `wallet=${upper}&limit=500`)).toEqual(all);
    const closed = await orders(alice, 'status=closed&limit=500');
    expect(new Set(ids(closed))).toEqual(new Set([cancelled, bids[BIDS - 1], bids[BIDS - 2]]));
    expect(closed.rows.every((r) => r.closedTime === placedAt)).toBe(true);
    const open = await orders(alice, 'status=open&limit=500');
    expect(open.rows).toHaveLength(BIDS - 3);
    expect(open.rows.every((r) => r.closedTime === null)).toBe(true);
    expect(ids(open)).toEqual(byIdDesc(ids(open)));
  });

  it('orderId and cloid select one order; a cloid in upper case is the same one', async () => {
    const target = bids[41]!;
    expect(ids(await orders(alice, `orderId=${target}`))).toEqual([target]);
    expect(ids(await orders(alice, `cloid=${cloid(42)}`))).toEqual([target]);
    const upper = `0x${cloid(42).slice(2).toUpperCase()}`;
    expect(ids(await orders(alice, `cloid=${upper}`))).toEqual([target]);
    expect((await orders(bob, `cloid=${cloid(42)}`)).rows).toEqual([]);
  });

  it('instrument selects the orders of one market', async () => {
    expect(ids(await orders(bob))).toEqual([bobGtd, bobEth, sweep]);
    expect(ids(await orders(bob, 'instrument=ETH-PERP'))).toEqual([bobEth]);
    expect(ids(await orders(bob, 'instrument=BTC-PERP'))).toEqual([bobGtd, sweep]);
    expect((await orders(alice, 'instrument=ETH-PERP')).rows).toEqual([]);
  });

  it('trade filters: orderId and cloid select the fills of one order', async () => {
    const lifted = bids[BIDS - 1]!;
    const byOrder = await trades(alice, `orderId=${lifted}`);
    expect(byOrder.rows.map((r) => r.orderId)).toEqual([lifted]);
    const byCloid = await trades(alice, `cloid=${cloid(BIDS - 1)}`);
    expect(byCloid.rows.map((r) => r.orderId)).toEqual([bids[BIDS - 2]]);
    expect((await trades(alice, `cloid=${cloid(1)}`)).rows).toEqual([]);
    expect((await trades(bob, `orderId=${sweep}`)).rows).toHaveLength(2);
    expect((await trades(bob, `orderId=${lifted}`)).rows).toEqual([]);
  });

  it('the deprecated /historic/trades answers the same, pointing at its successor', async () => {
    const query = `wallet=${alice.address}&orderId=${bids[BIDS - 1]}`;
    const old = await t.api('GET', `/historic/trades?${query}`);
    expect(old.body).toEqual((await t.api('GET', `/account/trades?${query}`)).body);
    expect(old.headers.get('deprecation')).toBe('true');
    expect(old.headers.get('link')).toBe('</api/account/trades>; rel="successor-version"');
  });

  // Last: the clock moves past the nonce window, so no signed request can follow.
  it('the default window is the 7 days up to now, both ends included; status=open and lookups by id ignore it', async () => {
    const counts = async () => ({
      orders: (await orders(alice, 'limit=500')).rows.length,
      trades: (await trades(alice)).rows.length,
      open: (await orders(alice, 'status=open&limit=500')).rows.length,
      since0: (await orders(alice, 'startTime=0&limit=500')).rows.length,
    });
    // Rows of this very millisecond are in.
    expect(await counts()).toEqual({ orders: BIDS, trades: 2, open: BIDS - 3, since0: BIDS });
    clock.set(placedAt + WEEK - 1);
    expect(await counts()).toEqual({ orders: BIDS, trades: 2, open: BIDS - 3, since0: BIDS });
    clock.set(placedAt + WEEK);
    expect(await counts()).toEqual({ orders: 0, trades: 0, open: BIDS - 3, since0: BIDS });
    // A read that names its order finds it however old, unless it gives a window of its own.
    const lifted = bids[BIDS - 1]!;
    expect(ids(await orders(alice, `orderId=${cancelled}`))).toEqual([cancelled]);
    expect(ids(await orders(alice, `cloid=${cloid(BIDS)}`))).toEqual([lifted]);
    expect(ids(await orders(alice, `status=closed&orderId=${lifted}`))).toEqual([lifted]);
    expect((await trades(alice, `orderId=${lifted}`)).rows).toHaveLength(1);
    expect((await trades(alice, `cloid=${cloid(BIDS)}`)).rows).toHaveLength(1);
    const since = `startTime=${placedAt + 1}`;
    expect((await orders(alice, `orderId=${cancelled}&${since}`)).rows).toEqual([]);
    expect((await trades(alice, `orderId=${lifted}&${since}`)).rows).toEqual([]);
    // An explicit endTime is exclusive; the 7 days run back from it.
    const at = (q: string) => orders(alice, `limit=500&${q}`).then((p) => p.rows.length);
    expect(await at(`endTime=${placedAt}`)).toBe(0);
    expect(await at(`endTime=${placedAt + 1}`)).toBe(BIDS);
    expect(await at(`endTime=${placedAt + WEEK}`)).toBe(BIDS);
    expect(await at(`endTime=${placedAt + WEEK + 1}`)).toBe(0);
  });

  it('an expired GTD order is closed: listed by status=closed, not by status=open', async () => {
    // The clock is past the expiry (previous test); the venue's wake-up timer expires it.
    const end = Date.now() + 5_000;
    let row: Row | undefined;
    do {
      row = (await orders(bob, `orderId=${bobGtd}&startTime=0`)).rows[0];
      if (row?.ordStatus === 'Expired') break;
      await new Promise((r) => setTimeout(r, 20));
    } while (Date.now() < end);
    expect(row).toMatchObject({ ordStatus: 'Expired', closedTime: expect.any(Number) });
    const open = await orders(bob, 'status=open');
    expect(ids(open)).toEqual([bobEth]);
    const closed = await orders(bob, 'status=closed&startTime=0');
    expect(ids(closed)).toEqual([bobGtd, sweep]);
  });
});
