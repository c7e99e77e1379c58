/**
 * Funding on the hour through the service, over real sockets (engine-rules 6, interface-spec
 * "Funding payments: push"): the host's wake timer settles the funding time when the clock
 * reaches it, with no command from anyone; both sides get a `Funding` report with the exact
 * payment (the long pays the micro-unit fraction, the short does not get it), the payer's account
 * summary is pushed with the new cash, the residue is in the insurance fund, the ticker shows the
 * rate and the next funding time, and a later tick in the same hour pays nothing again. The
 * operator's settle-now is covered in risk.e2e.test.ts; this is the scheduled path.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/engine/clock.js';
import { type Msg, type Wallet, WsClient } from './support/client.js';
import { limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

const M = 7;
const HOUR = 3_600_000;
const units = (n: number): bigint => BigInt(Math.round(n * 10_000));

describe('funding on the hour through the service', () => {
  // Signed requests carry real-time nonces and deadlines: the clock starts at the real time and
  // moves to the next hour only after the last signed request.
  const clock = new ManualClock(Date.now());
  const hour = Math.floor(clock.now() / HOUR) * HOUR + HOUR;
  let t: TestVenue;
  let alice: Wallet; // long 1.2345
  let bob: Wallet; // short 1.2345
  let a: WsClient;
  let b: WsClient;
  let md: WsClient;

  beforeAll(async () => {
    t = await startTestVenue({ clock });
    const listed = await t.admin('POST', '/admin/instruments', {
      id: M,
      symbol: 'FUND-PERP',
      tickSize: '0.5',
      lotSize: '0.0001',
      quantityDecimals: 4,
      maxLeverage: 20,
      openInterestCap: '100',
      makerFeeRate: '0',
      takerFeeRate: '0',
    });
    expect(listed.status).toBe(200);
    // No book at the oracle: no premium sample, so the hour pays the interest term alone.
    await t.oracle({ 'FUND-PERP': '1000.3' });
    [alice, bob] = [t.wallet(0), t.wallet(1)];
    for (const w of [alice, bob]) {
      await t.invite(w);
      await t.fund(w, '1000');
    }
    [a, b] = [await t.connect(alice), await t.connect(bob)];
    for (const s of [a, b]) await s.request({ type: 'subscribeTrading' });
    await b.request({
      type: 'placeOrder',
      signature: await bob.sign('Order', limitOrder(false, px(1000), units(1.2345), { market: M })),
    });
    const fill = await a.request({
      type: 'placeOrder',
      signature: await alice.sign(
        'Order',
        limitOrder(true, px(1000), units(1.2345), { market: M, timeInForce: 2 }),
      ),
    });
    expect(fill).toMatchObject({ type: 'orderAck', order: { ordStatus: 'Filled' } });
    await a.request({ type: 'subscribeAccountSummary' });
    md = await WsClient.connect(t.venue.marketdata);
    await md.request({ type: 'subscribe', channel: 'ticker', instrument: 'FUND-PERP' });
  });
  afterAll(async () => {
    await md.close();
    await t.close();
  });

  it('the ticker shows the hour ahead and the rate it will pay', async () => {
    const ticker = await md.waitFor((m) => m.type === 'ticker' && m.instrument === 'FUND-PERP');
    // 0.01% per 8 h, for one hour.
    expect(ticker).toMatchObject({ fundingRate: '0.0000125', nextFundingTime: hour });
  });

  it('settles at the hour by itself: reports, the payer pushed, the residue in the fund', async () => {
    const summary = await t.api('GET', `/account_summary?wallet=${alice.address}`);
    // 1,000 deposited, 1.2345 bought at 1,000.
    expect(summary.body.crossMarginSummary).toMatchObject({ totalRawUsd: '-234.5' });
    expect(a.reports('Funding')).toEqual([]);

    clock.set(hour);
    const paid = await a.waitFor((m) => m.kind === 'Funding');
    const received = await b.waitFor((m) => m.kind === 'Funding');
    // -s x I x rate: 1.2345 x 1,000.3 x 0.0000125 = 0.01543587... USD; the long pays 0.015436,
    // the short receives 0.015435.
    const common = {
      instrument: 'FUND-PERP',
      marginMode: 'Cross',
      fundingTime: hour,
      fundingRate: '0.0000125',
      indexPrice: '1000.3',
    };
    expect(paid).toMatchObject({ ...common, positionSize: '1.2345', payment: '-0.015436' });
    expect(received).toMatchObject({ ...common, positionSize: '-1.2345', payment: '0.015435' });
    const push = (await a.waitFor(
      (m) =>
        m.type === 'accountSummary' && (m.crossMarginSummary as Msg).totalRawUsd === '-234.515436',
    )) as Msg;
    expect(push.time).toBe(hour);
    const solvency = await t.admin('GET', '/admin/solvency');
    expect(solvency.body).toMatchObject({ insuranceFund: '0.000001', feePool: '0' });
  });

  it('pays an hour once: a later tick in the same hour settles nothing', async () => {
    clock.set(hour + 1_000);
    await t.venue.context.host.submit({ type: 'tick' });
    const ticker = await md.waitFor(
      (m) => m.type === 'ticker' && m.nextFundingTime === hour + HOUR,
      15_000,
    );
    expect(ticker.fundingRate).toBe('0.0000125');
    // A report of the tick would have been sent before the ticker that followed it.
    expect(a.reports('Funding')).toHaveLength(1);
    expect(b.reports('Funding')).toHaveLength(1);
  });
});
