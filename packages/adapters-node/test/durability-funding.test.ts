/**
 * "Funding at time T is applied exactly once, even across a restart" (engine-rules 6), on a data
 * directory: a funding time that passed while the venue was down is settled once, by the wake
 * timer soon after the start, and a second restart neither settles it again nor loses it; the
 * account's report stream holds exactly one `Funding` report per side. A one-minute funding
 * interval keeps every clock within the five minutes signed requests allow around real time.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/engine/clock.js';
import type { StartVenueOptions } from '../src/venue.js';
import type { Msg } from './support/client.js';
import { limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

const M = 7;
const MINUTE = 60_000;
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

describe('funding across restarts', () => {
  it('settles a funding time missed while down once, and never again after another restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'perp-funding-'));
    dirs.push(dir);
    const start = (clock: ManualClock, extra: StartVenueOptions = {}) =>
      startTestVenue({ dataDir: dir, clock, ...extra });
    const now = Date.now();
    // The clock stands still at `now` through the setup: every command comes before this.
    const fundingTime = Math.floor(now / MINUTE) * MINUTE + MINUTE;

    let t: TestVenue = await start(new ManualClock(now));
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
    await t.oracle({ 'MIN-PERP': '1000.3' });
    const [alice, bob] = [t.wallet(0), t.wallet(1)];
    for (const w of [alice, bob]) {
      await t.invite(w);
      await t.fund(w, '1000');
    }
    const b = await t.connect(bob);
    await b.request({
      type: 'placeOrder',
      signature: await bob.sign('Order', limitOrder(false, px(1000), units(1.2345), { market: M })),
    });
    const a = await t.connect(alice);
    const fill = await a.request({
      type: 'placeOrder',
      signature: await alice.sign(
        'Order',
        limitOrder(true, px(1000), units(1.2345), { market: M, timeInForce: 2 }),
      ),
    });
    expect(fill).toMatchObject({ type: 'orderAck', order: { ordStatus: 'Filled' } });
    expect(t.venue.context.host.state.time).toBeLessThan(fundingTime);
    await t.close();

    // Down over the funding time: the first start settles it (the wake timer ticks).
    t = await start(new ManualClock(fundingTime + 2_000));
    const lastFunding = () => t.venue.context.host.state.markets.get(M)!.funding.lastFundingTime;
    await until(async () => lastFunding() === fundingTime);
    // 1.2345 x 1,000.3 x 0.0001 / 480 (one minute of 0.01% per 8 h; the rate 2.08333...e-7
    // truncated at 18 decimals) = 257.26... micro-units: the long pays 258, the short gets 257.
    const raw = async () =>
      (await t.api('GET', `/account_summary?wallet=${alice.address}`)).body
        .crossMarginSummary as Msg;
    expect((await raw()).totalRawUsd).toBe('-234.500258');
    const settled = await t.stateHash();
    const solvency = (await t.admin('GET', '/admin/solvency')).body;
    expect(solvency).toMatchObject({ insuranceFund: '0.000001' });
    await t.close();

    // A second start, later in the same minute: nothing is due, nothing is paid again.
    t = await start(new ManualClock(fundingTime + 5_000));
    await new Promise((r) => setTimeout(r, 600)); // more than two wake-timer periods
    expect(await t.stateHash()).toEqual(settled);
    expect((await t.admin('GET', '/admin/solvency')).body).toEqual(solvency);
    expect((await raw()).totalRawUsd).toBe('-234.500258');
    for (const [w, payment] of [
      [alice, '-0.000258'],
      [bob, '0.000257'],
    ] as const) {
      const ws = await t.connect(w);
      const sub = await ws.request({ type: 'subscribeTrading', fromSeq: 0 });
      expect(sub).toMatchObject({ replay: { fromSeq: 0 }, resyncRequired: false });
      // The replay: every report of the account, up to the seq the answer names.
      await ws.waitFor((m) => m.type === 'executionReport' && m.seq === sub.seq);
      const funding = ws.reports('Funding');
      expect(funding.map((r) => [r.fundingTime, r.payment])).toEqual([[fundingTime, payment]]);
    }
    await t.close();
  });
});
