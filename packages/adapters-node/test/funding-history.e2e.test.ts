/**
 * The funding history reads over real HTTP (docs/protocol-decisions.md, "Funding history"), on a
 * data directory with a manual clock: `GET /api/funding` lists an instrument's settlements
 * oldest first (the schedule's and the operator's settle-now, told apart), `GET
 * /api/account/funding` a wallet's payments newest first, each the `Funding` report the socket
 * pushed with its exact amount, paged by cursor like `/account/trades`. Both answer the same
 * after a restart: a full replay of the journal, the read-model checkpoint beside the snapshot,
 * and the journal re-reduced behind the snapshot when the checkpoint is gone. A one-minute
 * funding interval keeps every clock within the five minutes signed requests allow.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/engine/clock.js';
import { DEFAULT_CONFIG } from '../src/index.js';
import { listCheckpointFiles } from '../src/journal/read-model-files.js';
import { listSnapshotFiles } from '../src/journal/snapshots.js';
import type { StartVenueOptions } from '../src/venue.js';
import type { Msg, Wallet, WsClient } from './support/client.js';
import { btc, limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

const M = 7;
const MINUTE = 60_000;
const units = (n: number): bigint => BigInt(Math.round(n * 10_000));
const CONFIG = {
  ...DEFAULT_CONFIG,
  limits: { ...DEFAULT_CONFIG.limits, publicReadsPerSecond: 100_000 },
};

const dir = mkdtempSync(join(tmpdir(), 'perp-funding-history-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Row = Record<string, unknown>;

/** The wire fields of a `Funding` report that its `/account/funding` row repeats. */
function rowOf(r: Msg, source: 'Scheduled' | 'Operator'): Row {
  return {
    execId: r.execId,
    seq: r.seq,
    instrument: r.instrument,
    market: r.instrument === 'MIN-PERP' ? M : 1,
    marginMode: r.marginMode,
    fundingTime: r.fundingTime,
    time: r.time,
    positionSize: r.positionSize,
    fundingRate: r.fundingRate,
    indexPrice: r.indexPrice,
    markPrice: r.markPrice,
    payment: r.payment,
    source,
  };
}

describe('funding history reads', () => {
  // BTC-PERP pays hourly: neither funding minute of MIN-PERP below may be an hour's start, or
  // BTC-PERP pays there too (the run failed in the last two minutes of every hour). A start up to
  // two minutes ahead of the wall clock keeps signed nonces within their window.
  let startAt = Date.now();
  const nextMinute = (ms: number) => Math.floor(ms / MINUTE) * MINUTE + MINUTE;
  while (nextMinute(startAt) % 3_600_000 === 0 || (nextMinute(startAt) + MINUTE) % 3_600_000 === 0)
    startAt += MINUTE;
  const clock = new ManualClock(startAt);
  // The clock stands still through the setup: every signed request comes before this.
  const f1 = nextMinute(clock.now());
  const manual = f1 + 10_000;
  const f2 = f1 + MINUTE;
  const start = (extra: StartVenueOptions = {}) =>
    startTestVenue({
      dataDir: dir,
      clock,
      config: CONFIG,
      snapshots: { everyRecords: 1_000, everyMs: 0 },
      ...extra,
    });
  let t: TestVenue;
  let alice: Wallet;
  let bob: Wallet;
  let a: WsClient;
  let b: WsClient;
  /** Each wallet's `/account/funding` rows, newest first, made from the reports it was pushed. */
  const expected = new Map<string, Row[]>();

  beforeAll(async () => {
    t = await start();
    const listed = await t.admin('POST', '/admin/instruments', {
      id: M,
      symbol: 'MIN-PERP',
      tickSize: '0.5',
      lotSize: '0.0001',
      quantityDecimals: 4,
      maxLeverage: 20,
      openInterestCap: '100',
      makerFeeRate: '0',
      takerFeeRate: '0',
      funding: { intervalMs: MINUTE },
    });
    expect(listed.status).toBe(200);
    // No book at the oracle: no premium sample, every settlement pays the interest term alone.
    await t.oracle({ 'MIN-PERP': '1000.3', 'BTC-PERP': '65000' });
    [alice, bob] = [t.wallet(0), t.wallet(1)];
    for (const w of [alice, bob]) {
      await t.invite(w);
      await t.fund(w, '10000');
    }
    [a, b] = [await t.connect(alice), await t.connect(bob)];
    for (const s of [a, b]) await s.request({ type: 'subscribeTrading' });
    // Alice long, Bob short: 1.2345 MIN-PERP at 1,000 and 0.01 BTC-PERP at 65,000.
    for (const [market, price, qty] of [
      [M, px(1000), units(1.2345)],
      [1, px(65000), btc(0.01)],
    ] as const) {
      await b.request({
        type: 'placeOrder',
        signature: await bob.sign('Order', limitOrder(false, price, qty, { market })),
      });
      const fill = await a.request({
        type: 'placeOrder',
        signature: await alice.sign(
          'Order',
          limitOrder(true, price, qty, { market, timeInForce: 2 }),
        ),
      });
      expect(fill).toMatchObject({ type: 'orderAck', order: { ordStatus: 'Filled' } });
    }
    expect(t.venue.context.host.state.time).toBeLessThan(f1);

    const funded = async (n: number) => {
      for (const s of [a, b]) await s.waitFor(() => s.reports('Funding').length >= n);
    };
    // The schedule pays MIN-PERP's first minute, the operator settles both instruments now, the
    // schedule pays the next minute.
    clock.set(f1);
    await funded(1);
    clock.set(manual);
    const settled = await t.admin('POST', '/admin/funding/settle', {});
    expect(settled.status).toBe(200);
    await funded(3);
    clock.set(f2);
    await funded(4);
    for (const [w, s] of [
      [alice, a],
      [bob, b],
    ] as const) {
      const reports = s.reports('Funding');
      const sources = ['Scheduled', 'Operator', 'Operator', 'Scheduled'] as const;
      expect(reports.map((r) => [r.instrument, r.fundingTime])).toEqual([
        ['MIN-PERP', f1],
        ['BTC-PERP', manual],
        ['MIN-PERP', manual],
        ['MIN-PERP', f2],
      ]);
      expected.set(w.address, reports.map((r, i) => rowOf(r, sources[i] as never)).reverse());
    }
  }, 60_000);
  afterAll(async () => {
    await t.close();
  });

  const funding = (w: Wallet, query = '') =>
    t.api('GET', `/account/funding?wallet=${w.address}${query}`);

  it('lists a wallet payments newest first, each its Funding report with the exact amount', async () => {
    for (const w of [alice, bob]) {
      const r = await funding(w);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ funding: expected.get(w.address), nextCursor: null });
    }
    // 1.2345 x 1,000.3 x 0.0001 / 480 (one minute of 0.01% per 8 h, the rate truncated at 18
    // decimals) = 257.26 micro-units: the long pays 258, the short gets 257. The settle-now
    // pays a full interval of each: BTC-PERP's hour, 0.01 x 65,000 x 0.0000125 = 0.008125.
    const paid = (await funding(alice)).body.funding as Msg[];
    expect(paid.map((p) => [p.instrument, p.payment, p.source])).toEqual([
      ['MIN-PERP', '-0.000258', 'Scheduled'],
      ['MIN-PERP', '-0.000258', 'Operator'],
      ['BTC-PERP', '-0.008125', 'Operator'],
      ['MIN-PERP', '-0.000258', 'Scheduled'],
    ]);
    const got = (await funding(bob)).body.funding as Msg[];
    expect(got.map((p) => p.payment)).toEqual(['0.000257', '0.000257', '0.008125', '0.000257']);
    expect(got[0]).toMatchObject({ positionSize: '-1.2345', fundingRate: '0.000000208333333333' });
    // A wallet without an account has no payments.
    const stranger = await t.api('GET', `/account/funding?wallet=0x${'5'.repeat(40)}`);
    expect(stranger.body).toEqual({ funding: [], nextCursor: null });
  });

  it('pages by cursor, filters by instrument and fundingTime window', async () => {
    const all = expected.get(alice.address) as Msg[];
    const pages: Msg[] = [];
    let cursor = '';
    for (let i = 0; i < 10; i++) {
      const r = await funding(alice, `&limit=1&cursor=${cursor}`);
      expect(r.status).toBe(200);
      pages.push(...(r.body.funding as Msg[]));
      if (r.body.nextCursor === null) break;
      cursor = r.body.nextCursor as string;
    }
    expect(pages).toEqual(all);
    const page = await funding(alice, '&limit=3');
    expect(page.body.funding).toEqual(all.slice(0, 3));
    expect(page.body.nextCursor).toEqual(expect.any(String));

    const btcOnly = await funding(alice, '&instrument=BTC-PERP');
    expect(btcOnly.body.funding).toEqual(all.filter((r) => r.instrument === 'BTC-PERP'));
    // startTime inclusive, endTime exclusive, on fundingTime (as the trades read on time).
    const window = await funding(alice, `&startTime=${f1}&endTime=${f2}`);
    expect((window.body.funding as Msg[]).map((r) => r.fundingTime)).toEqual([manual, manual, f1]);
    const later = await funding(alice, `&startTime=${manual + 1}`);
    expect(later.body.funding).toEqual(all.slice(0, 1));
  });

  it('refuses bad parameters with 400 naming them', async () => {
    const trades = await t.api('GET', `/account/trades?wallet=${alice.address}&limit=1`);
    const tradeCursor = trades.body.nextCursor as string;
    expect(tradeCursor).toEqual(expect.any(String));
    const cases: [string, RegExp][] = [
      ['/account/funding', /wallet must be a 0x address/],
      ['/account/funding?wallet=0x12', /wallet must be a 0x address/],
      [
        `/account/funding?wallet=${alice.address}&instrument=btc-perp`,
        /instrument must be a listed symbol/,
      ],
      [`/account/funding?wallet=${alice.address}&limit=0`, /limit must be in 1..500/],
      [`/account/funding?wallet=${alice.address}&limit=501`, /limit must be in 1..500/],
      [
        `/account/funding?wallet=${alice.address}&startTime=2&endTime=1`,
        /startTime 2 is after endTime 1/,
      ],
      [
        `/account/funding?wallet=${alice.address}&cursor=${tradeCursor}`,
        /cursor must be a nextCursor/,
      ],
      [`/account/funding?wallet=${alice.address}&cursor=abc`, /cursor must be a nextCursor/],
      [`/account/funding?wallet=${alice.address}&orderId=1`, /orderId does not apply/],
      ['/funding', /instrument is required/],
      ['/funding?instrument=MIN-PERP&limit=1001', /limit must be in 1..1000/],
      ['/funding?instrument=MIN-PERP&startTime=x', /startTime must be an integer/],
      ['/funding?instrument=MIN-PERP&startTime=2&endTime=1', /startTime 2 is after endTime 1/],
    ];
    for (const [path, message] of cases) {
      const r = await t.api('GET', path);
      expect([path, r.status]).toEqual([path, 400]);
      expect(r.body.error).toMatch(message);
    }
    // A cursor of the funding read is refused by the trades read.
    const own = (await funding(alice, '&limit=1')).body.nextCursor as string;
    const crossed = await t.api('GET', `/account/trades?wallet=${alice.address}&cursor=${own}`);
    expect(crossed.status).toBe(400);
    const unknown = await t.api('GET', '/funding?instrument=NOPE-PERP');
    expect(unknown.status).toBe(404);
    expect(unknown.body.error).toMatch(/unknown instrument NOPE-PERP/);
  });

  it('lists an instrument settlements oldest first, the operator one marked, windowed as candles', async () => {
    const r = await t.api('GET', '/funding?instrument=MIN-PERP');
    expect(r.status).toBe(200);
    const row = (fundingTime: number, source: string) => ({
      fundingTime,
      fundingRate: '0.000000208333333333',
      premium: '0',
      samples: 0,
      indexPrice: '1000.3',
      source,
    });
    const all = [row(f1, 'Scheduled'), row(manual, 'Operator'), row(f2, 'Scheduled')];
    expect(r.body).toEqual({ instrument: 'MIN-PERP', funding: all });
    const btcRows = await t.api('GET', '/funding?instrument=BTC-PERP');
    expect(btcRows.body.funding).toEqual([
      {
        fundingTime: manual,
        fundingRate: '0.0000125',
        premium: '0',
        samples: 0,
        indexPrice: '65000',
        source: 'Operator',
      },
    ]);
    const read = async (q: string) =>
      (await t.api('GET', `/funding?instrument=MIN-PERP${q}`)).body.funding;
    expect(await read('&limit=2')).toEqual(all.slice(1));
    expect(await read(`&startTime=${f1}&limit=2`)).toEqual(all.slice(0, 2));
    expect(await read(`&startTime=${f1 + 1}&endTime=${f2}`)).toEqual(all.slice(1));
    expect(await read(`&endTime=${manual}`)).toEqual(all.slice(0, 2));
    // The operator settled ETH-PERP too, before its first oracle: a settlement that paid nothing.
    expect((await t.api('GET', '/funding?instrument=ETH-PERP')).body.funding).toEqual([
      {
        fundingTime: manual,
        fundingRate: '0.0000125',
        premium: '0',
        samples: 0,
        indexPrice: null,
        source: 'Operator',
      },
    ]);
  });

  it('answers the same after a restart: full replay, checkpoint, and journal behind the snapshot', async () => {
    const reads = async (v: TestVenue) => ({
      alice: (await v.api('GET', `/account/funding?wallet=${alice.address}&limit=500`)).body,
      bob: (await v.api('GET', `/account/funding?wallet=${bob.address}&limit=500`)).body,
      min: (await v.api('GET', '/funding?instrument=MIN-PERP')).body,
      btc: (await v.api('GET', '/funding?instrument=BTC-PERP')).body,
    });
    const before = await reads(t);
    expect(before.alice.funding).toEqual(expected.get(alice.address));
    // The clean stop writes a snapshot of every record and its read-model checkpoint.
    await t.close();
    expect(listCheckpointFiles(dir)[0]?.seq).toBe(listSnapshotFiles(dir)[0]?.seq);

    t = await start({ snapshots: false });
    expect(await reads(t)).toEqual(before);
    await t.close();

    t = await start();
    expect(await t.venue.historyBackfill?.done).toBe('complete');
    expect(t.venue.historyBackfill?.progress.source).toBe('checkpoint');
    expect(await reads(t)).toEqual(before);
    await t.close();

    for (const f of listCheckpointFiles(dir)) rmSync(f.path);
    t = await start();
    expect(await t.venue.historyBackfill?.done).toBe('complete');
    expect(t.venue.historyBackfill?.progress.source).toBe('journal');
    expect(await reads(t)).toEqual(before);
  }, 60_000);
});

describe('funding history reads and the per-IP read budget', () => {
  it('count as public reads', async () => {
    const t = await startTestVenue({
      config: { ...DEFAULT_CONFIG, limits: { ...DEFAULT_CONFIG.limits, publicReadsPerSecond: 3 } },
    });
    try {
      const w = t.wallet(0).address;
      const statuses: number[] = [];
      for (const path of [
        '/funding?instrument=BTC-PERP',
        `/account/funding?wallet=${w}`,
        '/funding?instrument=BTC-PERP',
        `/account/funding?wallet=${w}`,
      ])
        statuses.push((await t.api('GET', path)).status);
      expect(statuses.slice(0, 2)).toEqual([200, 200]);
      expect(statuses.slice(-1)).toEqual([429]);
    } finally {
      await t.close();
    }
  });
});
