/**
 * `GET /api/candles` over a real socket on a venue whose clock the test moves (protocol-decisions
 * "Candle history and tickers over REST"): UTC-aligned candles, contiguous and closed once, the
 * empty ones at the previous close; `startTime` and `endTime` bound `openTime` inclusively; the
 * default page is the last 500, `limit` goes to 1,000 and no further.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/engine/clock.js';
import { btc, limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

type Candle = Record<string, unknown> & { openTime: number; closeTime: number };
const M = 60_000;

describe('candle history over REST', () => {
  let t: TestVenue;
  let clock: ManualClock;
  /** Start of the minute of the only trade. */
  let m0: number;
  let tradeTime: number;

  beforeAll(async () => {
    // Near wall time (signed requests carry wall-clock nonces), 30 s into a minute.
    tradeTime = Math.floor(Date.now() / M) * M + 30_000;
    m0 = tradeTime - 30_000;
    clock = new ManualClock(tradeTime);
    t = await startTestVenue({ clock });
    await t.oracle({ 'BTC-PERP': '65000' });
    const [alice, bob] = [t.wallet(0), t.wallet(1)];
    for (const w of [alice, bob]) {
      await t.invite(w);
      await t.fund(w, '10000');
    }
    const [a, b] = [await t.connect(alice), await t.connect(bob)];
    expect(
      await b.request({
        type: 'placeOrder',
        signature: await bob.sign('Order', limitOrder(false, px(65000), btc(0.1))),
      }),
    ).toMatchObject({ type: 'orderAck' });
    expect(
      await a.request({
        type: 'placeOrder',
        signature: await alice.sign(
          'Order',
          limitOrder(true, px(65000), btc(0.1), { timeInForce: 2 }),
        ),
      }),
    ).toMatchObject({ type: 'orderAck', order: { ordStatus: 'Filled' } });
    // 1,200 minutes later (no signed request after this): 1,200 closed one-minute candles and
    // the open one.
    clock.advance(1_200 * M);
  });
  afterAll(async () => t.close());

  const candles = async (query: string): Promise<Candle[]> => {
    const r = await t.api('GET', `/candles?instrument=BTC-PERP&${query}`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.candles as Candle[];
  };
  const empty = (openTime: number, closed = true) => ({
    instrument: 'BTC-PERP',
    interval: '1m',
    openTime,
    closeTime: openTime + M - 1,
    open: '65000',
    high: '65000',
    low: '65000',
    close: '65000',
    volume: '0',
    quoteVolume: '0',
    trades: 0,
    closed,
  });

  it('by default the last 500, oldest first, contiguous, ending with the open candle', async () => {
    const page = await candles('interval=1m');
    expect(page).toHaveLength(500);
    expect(page.map((c) => (c.openTime - m0) / M)).toEqual(
      Array.from({ length: 500 }, (_, i) => 701 + i),
    );
    expect(page[499]).toEqual(empty(m0 + 1_200 * M, false));
    expect(page[0]).toEqual(empty(m0 + 701 * M));
    expect(page.filter((c) => c.closed === false)).toHaveLength(1);
  });

  it('limit goes up to 1,000; 1,001 is refused naming the parameter', async () => {
    const page = await candles('interval=1m&limit=1000');
    expect(page).toHaveLength(1_000);
    expect(page[0]!.openTime).toBe(m0 + 201 * M);
    expect(page[999]!.openTime).toBe(m0 + 1_200 * M);
    const r = await t.api('GET', '/candles?instrument=BTC-PERP&interval=1m&limit=1001');
    expect(r.status).toBe(400);
    expect(String(r.body.error)).toMatch(/^limit must be in 1\.\.1000/);
  });

  it('startTime and endTime bound openTime, both inclusive', async () => {
    const traded = {
      instrument: 'BTC-PERP',
      interval: '1m',
      openTime: m0,
      closeTime: m0 + M - 1,
      open: '65000',
      high: '65000',
      low: '65000',
      close: '65000',
      volume: '0.1',
      quoteVolume: '6500',
      trades: 1,
      closed: true,
    };
    // With startTime: the first `limit` from there.
    expect(await candles(`interval=1m&startTime=${m0}&limit=3`)).toEqual([
      traded,
      empty(m0 + M),
      empty(m0 + 2 * M),
    ]);
    // Equal bounds are one candle, not a refusal.
    expect(await candles(`interval=1m&startTime=${m0 + M}&endTime=${m0 + M}`)).toEqual([
      empty(m0 + M),
    ]);
    // Without startTime: the last `limit` up to endTime, which is included.
    expect(await candles(`interval=1m&endTime=${m0 + M}`)).toEqual([traded, empty(m0 + M)]);
    // A startTime inside a minute starts at the next candle.
    expect((await candles(`interval=1m&startTime=${m0 + 1}&limit=1`))[0]!.openTime).toBe(m0 + M);
    // Before the first trade there is nothing.
    expect(await candles(`interval=1m&endTime=${m0 - 1}`)).toEqual([]);
  });

  it('every interval is UTC-aligned, closeTime = openTime + interval - 1', async () => {
    const lengths: Record<string, number> = { '5m': 5 * M, '1h': 60 * M, '4h': 240 * M };
    for (const [interval, ms] of Object.entries(lengths)) {
      const page = await candles(`interval=${interval}&limit=1000`);
      const first = page[0]!;
      expect(first.openTime, interval).toBe(Math.floor(tradeTime / ms) * ms);
      expect(first).toMatchObject({ volume: '0.1', trades: 1, closed: true });
      for (const [i, c] of page.entries()) {
        expect(c.openTime, interval).toBe(first.openTime + i * ms);
        expect(c.closeTime, interval).toBe(c.openTime + ms - 1);
      }
      const last = page[page.length - 1]!;
      expect(last.closed).toBe(false);
      expect(last.openTime).toBe(Math.floor(clock.now() / ms) * ms);
    }
  });
});
