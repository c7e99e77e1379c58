/**
 * The operator's moves of the venue's own money survive a restart: a trade fills the fee pool,
 * the operator seeds the insurance fund from it and pays the rest out into an account, and a
 * venue restarted from the same data directory (journal replay) has the same state hash and the
 * same pools.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { btc, limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

describe('venue pools across a restart', () => {
  const dir = mkdtempSync(join(tmpdir(), 'perp-funds-'));
  let t: TestVenue | undefined;
  afterAll(async () => {
    await t?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('replays insurance transfers and fee payouts to the same state', async () => {
    t = await startTestVenue({ dataDir: dir });
    await t.oracle({ 'BTC-PERP': '65000' });
    const [alice, bob] = [t.wallet(0), t.wallet(1)];
    for (const w of [alice, bob]) {
      await t.invite(w);
      await t.fund(w, '10000');
    }
    const [a, b] = [await t.connect(alice), await t.connect(bob)];
    const rest = await b.request({
      type: 'placeOrder',
      signature: await bob.sign('Order', limitOrder(false, px(65000), btc(0.1))),
    });
    expect(rest.type).toBe('orderAck');
    const take = await a.request({
      type: 'placeOrder',
      signature: await alice.sign(
        'Order',
        limitOrder(true, px(65000), btc(0.1), { timeInForce: 2 }),
      ),
    });
    expect(take).toMatchObject({ type: 'orderAck', order: { ordStatus: 'Filled' } });
    const fees = (await t.admin('GET', '/admin/solvency')).body;
    expect(fees).toMatchObject({ insuranceFund: '0' });
    expect(fees.feePool).not.toBe('0');

    const seeded = await t.admin('POST', '/admin/insurance-fund/transfer', {
      direction: 'ToInsuranceFund',
      amount: '0.5',
    });
    expect(seeded.status).toBe(200);
    const paid = await t.admin('POST', '/admin/fee-pool/payout', {
      wallet: bob.address,
      amount: seeded.body.feePool,
    });
    expect(paid.body).toMatchObject({ feePool: '0' });
    const before = {
      hash: await t.stateHash(),
      solvency: (await t.admin('GET', '/admin/solvency')).body,
    };
    expect(before.solvency).toMatchObject({ insuranceFund: '0.5', feePool: '0' });
    await a.close();
    await b.close();
    await t.venue.close();

    t = await startTestVenue({ dataDir: dir });
    expect(await t.stateHash()).toEqual(before.hash);
    expect((await t.admin('GET', '/admin/solvency')).body).toEqual(before.solvency);
  });
});
