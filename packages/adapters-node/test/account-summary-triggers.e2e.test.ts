/**
 * The account-summary stream's trigger table (interface-spec, "Account summary stream"), over
 * real sockets: every trigger the table lists pushes one fresh snapshot equal to
 * `GET /account_summary` at that moment, and every non-trigger (order placement, replace,
 * cancel, cancelAll, mark ticks, commands refused as `Rejected`) pushes nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshNonce, type Msg, Wallet, type WsClient } from './support/client.js';
import { btc, placeOrder, px, startTestVenue, type TestVenue, usd } from './support/fixture.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** Long enough for a push to have come: four coalescing windows of the default 50 ms. */
const QUIET_MS = 200;

let t: TestVenue;
let alice: Wallet;
let bob: Wallet;
let a: WsClient;
let b: WsClient;

beforeAll(async () => {
  t = await startTestVenue();
  await t.oracle({ 'BTC-PERP': '60000' });
  alice = t.wallet(0);
  bob = t.wallet(1);
  for (const w of [alice, bob]) {
    await t.invite(w);
    await t.fund(w, '10000');
  }
  a = await t.connect(alice);
  b = await t.connect(bob);
  expect(await a.request({ type: 'subscribeAccountSummary' })).toMatchObject({
    type: 'accountSummary',
  });
  await a.request({ type: 'subscribeTrading' });
});
afterAll(async () => t.close());

const pushes = (): Msg[] => a.inbox.filter((m) => m.type === 'accountSummary');

/** The snapshot without its envelope (`type`, `id`) and its `time`. */
function body(m: Record<string, unknown>): Record<string, unknown> {
  const { type: _type, id: _id, time: _time, ...rest } = m;
  return rest;
}

/** Runs `act`, then expects exactly one push, equal to the REST summary read after it. */
async function pushesOnce(act: () => Promise<unknown>): Promise<Msg> {
  const before = pushes().length;
  await act();
  await a.waitFor(() => pushes().length > before);
  await sleep(QUIET_MS);
  const after = pushes().slice(before);
  expect(after).toHaveLength(1);
  const rest = await t.api('GET', `/account_summary?wallet=${alice.address}`);
  expect(rest.status).toBe(200);
  expect(body(after[0]!)).toEqual(body(rest.body));
  expect(after[0]!.time as number).toBeLessThanOrEqual(rest.body.time as number);
  return after[0]!;
}

/** Runs `act`, then expects no push. */
async function pushesNothing(act: () => Promise<unknown>): Promise<void> {
  const before = pushes().length;
  await act();
  await sleep(QUIET_MS);
  expect(pushes()).toHaveLength(before);
}

const fresh = () => ({ nonce: freshNonce(), deadline: Wallet.deadline() });

async function leverage(x100: number) {
  const signature = await alice.sign('UpdateLeverage', {
    market: 1,
    leverage: x100,
    flags: 0,
    ...fresh(),
  });
  return t.api('POST', '/update_leverage', {
    leverage: x100,
    instrument: 'BTC-PERP',
    marginMode: 'Cross',
    signature,
  });
}

async function transfer(amount: number, direction: 'crossToIsolated' | 'isolatedToCross') {
  return a.request({
    type: 'transferMargin',
    amount: String(amount),
    instrument: 'BTC-PERP',
    direction,
    signature: await alice.sign('MarginTransfer', {
      amount: usd(amount),
      market: 1,
      flags: direction === 'crossToIsolated' ? 0 : 1,
      ...fresh(),
    }),
  });
}

describe('account summary stream: non-triggers push nothing', () => {
  it('order placement, replace, cancel and cancelAll', async () => {
    let orderId = '';
    await pushesNothing(async () => {
      orderId = await placeOrder(alice, a, { isBuy: 1, price: px(59000), quantity: btc(0.01) });
    });
    await pushesNothing(async () => {
      const r = await a.request({
        type: 'replaceOrder',
        signature: await alice.sign('Replace', {
          market: 1,
          orderId: BigInt(orderId),
          price: px(58000),
          quantity: btc(0.02),
          ...fresh(),
        }),
      });
      expect(r.type).toBe('replaceAck');
    });
    await pushesNothing(async () => {
      const r = await a.request({
        type: 'cancelOrder',
        signature: await alice.sign('Cancel', { market: 1, orderId: BigInt(orderId), ...fresh() }),
      });
      expect(r.type).toBe('cancelAck');
    });
    await placeOrder(alice, a, { isBuy: 1, price: px(59000), quantity: btc(0.01) });
    await pushesNothing(async () => {
      const r = await a.request({
        type: 'cancelAll',
        signature: await alice.sign('CancelAll', { market: 0, ...fresh() }),
      });
      expect(r).toMatchObject({ type: 'cancelAllAck', cancelled: 1 });
    });
  });

  it('commands refused as Rejected', async () => {
    await pushesNothing(async () => {
      expect((await leverage(100_000)).body).toMatchObject({ status: 'Rejected', code: 4102 });
      expect(await transfer(1_000_000, 'crossToIsolated')).toMatchObject({
        status: 'Rejected',
        code: 4100,
      });
      expect((await t.withdraw(alice, '1000000')).body).toMatchObject({
        status: 'Rejected',
        code: 4100,
      });
    });
  });
});

describe('account summary stream: each trigger pushes one snapshot equal to the REST read', () => {
  it('a fill (open)', async () => {
    await placeOrder(bob, b, { isBuy: 0, price: px(60000), quantity: btc(0.1) });
    const push = await pushesOnce(() =>
      placeOrder(alice, a, { isBuy: 1, price: px(60000), quantity: btc(0.1) }),
    );
    expect(push.assetPositions).toMatchObject([{ instrument: 'BTC-PERP', szi: '0.1' }]);
  });

  it('a mark tick with the position open pushes nothing', async () => {
    await pushesNothing(() => t.oracle({ 'BTC-PERP': '60500' }));
  });

  it('a leverage change moves leverage and marginUsed', async () => {
    const push = await pushesOnce(async () =>
      expect((await leverage(1000)).body).toMatchObject({ status: 'Submitted' }),
    );
    expect(push.assetPositions).toMatchObject([{ leverage: 10 }]);
  });

  it('margin transfers both ways', async () => {
    const before = body(pushes().at(-1)!) as { marginSummary: Record<string, string> };
    const push = await pushesOnce(async () =>
      expect(await transfer(100, 'crossToIsolated')).toMatchObject({ status: 'Submitted' }),
    );
    // engine-rules 4: a transfer leaves the combined accountValue and totalRawUsd unchanged.
    const combined = push.marginSummary as Record<string, string>;
    expect(combined.accountValue).toBe(before.marginSummary.accountValue);
    expect(combined.totalRawUsd).toBe(before.marginSummary.totalRawUsd);
    await pushesOnce(async () =>
      expect(await transfer(100, 'isolatedToCross')).toMatchObject({ status: 'Submitted' }),
    );
  });

  it('a withdrawal (debit at acceptance and settlement, coalesced or not) and a deposit', async () => {
    const before = pushes().length;
    expect((await t.withdraw(alice, '10')).body).toMatchObject({ status: 'Submitted' });
    await a.waitFor((m) => m.kind === 'WithdrawMargin');
    await a.waitFor(() => pushes().length > before);
    await sleep(QUIET_MS);
    const rest = await t.api('GET', `/account_summary?wallet=${alice.address}`);
    expect(body(pushes().at(-1)!)).toEqual(body(rest.body));
    await pushesOnce(() => t.fund(alice, '10'));
  });

  it('a trade bust', async () => {
    const fill = a.reports('OrderFilled').at(-1)!;
    const tradeId = (fill.trade as { tradeId: string }).tradeId;
    const push = await pushesOnce(async () =>
      expect((await t.admin('POST', `/admin/trades/${tradeId}/bust`, { reason: 'x' })).status).toBe(
        200,
      ),
    );
    expect(push.assetPositions).toEqual([]);
  });
});
