/**
 * The whole user journey over real sockets, signed with viem: invite, access, authenticate,
 * deposit with a permit, leverage, two wallets trading, account-summary pushes with the expected
 * figures, a margin transfer, a withdrawal and the history reads.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshNonce, type Msg, Wallet, type WsClient } from './support/client.js';
import { btc, limitOrder, px, startTestVenue, type TestVenue, usd } from './support/fixture.js';

/** `amount x rate` in micro-units rounded up (fees favour the venue). */
function feeOf(notionalMicro: bigint, rate: string): bigint {
  const [w = '0', f = ''] = rate.split('.');
  const scaled = BigInt(w + f);
  const denom = 10n ** BigInt(f.length);
  return (notionalMicro * scaled + denom - 1n) / denom;
}
const micro = (s: string): bigint => {
  const neg = s.startsWith('-');
  const [w = '0', f = ''] = (neg ? s.slice(1) : s).split('.');
  const v = BigInt(w) * 1_000_000n + BigInt(`${f}000000`.slice(0, 6));
  return neg ? -v : v;
};

describe('user journey', () => {
  let t: TestVenue;
  let alice: Wallet;
  let bob: Wallet;
  let aliceWs: WsClient;
  let bobWs: WsClient;
  let takerRate: string;
  let makerRate: string;

  beforeAll(async () => {
    t = await startTestVenue();
    alice = t.wallet(0);
    bob = t.wallet(1);
    await t.oracle({ 'BTC-PERP': '65000' });
    const inst = await t.api('GET', '/instruments');
    const btcInst = (inst.body.instruments as Record<string, unknown>[]).find(
      (i) => i.symbol === 'BTC-PERP',
    )!;
    takerRate = btcInst.takerFeeRate as string;
    makerRate = btcInst.makerFeeRate as string;
  });
  afterAll(async () => t.close());

  it('grants app access through an invite code and reports it', async () => {
    expect((await t.api('GET', `/user/access-status/${alice.address}`)).body).toEqual({
      hasAppAccess: false,
    });
    const r = await alice.referral(t.venue.inviteCode!);
    const res = await t.api('POST', '/referral/apply', r.body, r.headers);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      kind: 'system',
      refereeAddress: alice.address,
      code: t.venue.inviteCode,
    });
    // Any case is accepted on public reads.
    expect(
      (await t.api('GET', `/user/access-status/${alice.address.toUpperCase().replace('0X', '0x')}`))
        .body,
    ).toEqual({ hasAppAccess: true });
    await t.invite(bob);
  });

  it('authenticates and streams execution reports and summaries', async () => {
    aliceWs = await t.connect(alice);
    bobWs = await t.connect(bob);
    const sub = await aliceWs.request({ type: 'subscribeTrading' });
    expect(sub).toMatchObject({
      type: 'subscribeTradingSuccess',
      seq: 0,
      openOrders: [],
      resyncRequired: false,
    });
    await bobWs.request({ type: 'subscribeTrading' });
    const snap = await aliceWs.request({ type: 'subscribeAccountSummary' });
    expect(snap).toMatchObject({ type: 'accountSummary', assetPositions: [], withdrawable: '0' });
  });

  it('deposits with an ERC-2612 permit and reports DepositMargin', async () => {
    await t.fund(alice, '10000');
    await t.fund(bob, '10000');
    const report = await aliceWs.waitFor(
      (m) => m.type === 'executionReport' && m.kind === 'DepositMargin',
    );
    expect(report).toMatchObject({
      status: 'Completed',
      amount: '10000',
      marginMode: 'Cross',
      instrument: null,
      seq: 1,
    });
    const push = await aliceWs.waitFor(
      (m) => m.type === 'accountSummary' && m.withdrawable === '10000',
    );
    expect(push.marginSummary).toMatchObject({ accountValue: '10000', totalMarginUsed: '0' });
    // The tokens left the wallet and the permit nonce moved on.
    const token = await t.api('GET', `/chain/token/${alice.address}`);
    expect(token.body).toEqual({ balance: '0', nonce: '1' });
  });

  it('sets leverage and reports UpdateLeverage', async () => {
    const sig = await alice.sign('UpdateLeverage', {
      market: 1,
      leverage: 2000,
      flags: 0,
      nonce: freshNonce(),
      deadline: Wallet.deadline(),
    });
    const res = await t.api('POST', '/update_leverage', {
      leverage: 2000,
      instrument: 'BTC-PERP',
      marginMode: 'Cross',
      signature: sig,
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'Submitted' });
    const report = await aliceWs.waitFor((m) => m.kind === 'UpdateLeverage');
    expect(report).toMatchObject({
      status: 'Completed',
      command_id: res.body.command_id,
      leverage: 2000,
      instrument: 'BTC-PERP',
    });
  });

  it('matches two wallets and pushes the exact figures', async () => {
    const maker = await bobWs.request({
      type: 'placeOrder',
      signature: await bob.sign('Order', limitOrder(false, px(65000), btc(0.1))),
    });
    expect(maker).toMatchObject({
      type: 'orderAck',
      order: { ordStatus: 'New', side: 'Sell', price: '65000', quantity: '0.1', leavesQty: '0.1' },
    });
    const pushesBefore = aliceWs.inbox.filter((m) => m.type === 'accountSummary').length;
    const taker = await aliceWs.request({
      type: 'placeOrder',
      signature: await alice.sign(
        'Order',
        limitOrder(true, px(65000), btc(0.1), { timeInForce: 2 }),
      ),
    });
    expect(taker).toMatchObject({
      type: 'orderAck',
      order: { ordStatus: 'Filled', cumQty: '0.1', leavesQty: '0', avgPx: '65000' },
    });

    const takerFee = feeOf(usd(6500), takerRate);
    const makerFee = feeOf(usd(6500), makerRate);
    const fill = await aliceWs.waitFor(
      (m) =>
        m.kind === 'Trade' ||
        (m.type === 'executionReport' && (m as { trade?: unknown }).trade !== undefined),
    );
    expect(fill.trade).toMatchObject({
      side: 'Buy',
      lastQty: '0.1',
      lastPx: '65000',
      quoteQty: '6500',
      liquidity: 'Taker',
      positionBefore: '0',
      positionAfter: '0.1',
    });
    expect(micro((fill.trade as { fee: string }).fee)).toBe(takerFee);
    const bobFill = await bobWs.waitFor(
      (m) => m.type === 'executionReport' && (m as { trade?: unknown }).trade !== undefined,
    );
    expect(bobFill.trade).toMatchObject({
      side: 'Sell',
      liquidity: 'Maker',
      positionAfter: '-0.1',
    });
    expect(micro((bobFill.trade as { fee: string }).fee)).toBe(makerFee);

    const push = (await aliceWs.waitFor(
      (m) => m.type === 'accountSummary' && (m.assetPositions as unknown[]).length === 1,
    )) as Msg & {
      assetPositions: Record<string, unknown>[];
      marginSummary: Record<string, string>;
      withdrawable: string;
    };
    expect(aliceWs.inbox.filter((m) => m.type === 'accountSummary').length).toBeGreaterThan(
      pushesBefore,
    );
    const pos = push.assetPositions[0]!;
    expect(pos).toMatchObject({
      instrument: 'BTC-PERP',
      marginMode: 'Cross',
      szi: '0.1',
      entryPx: '65000',
      leverage: 20,
      positionValue: '6500',
      marginUsed: '325',
    });
    expect(micro(push.marginSummary.accountValue!)).toBe(usd(10000) - takerFee);
    // engine-rules: withdrawable = AV - max(IM + holds, 10% of cross notional) = AV - max(325, 650).
    expect(micro(push.withdrawable)).toBe(usd(10000) - takerFee - usd(650));
    // The push and the REST read describe the same state.
    const rest = await t.api('GET', `/account_summary?wallet=${alice.address}`);
    expect(rest.body.assetPositions).toEqual(push.assetPositions);
    expect(rest.body.marginSummary).toEqual(push.marginSummary);
  });

  it('does not push on order placement or cancel', async () => {
    const before = aliceWs.inbox.filter((m) => m.type === 'accountSummary').length;
    const ack = await aliceWs.request({
      type: 'placeOrder',
      signature: await alice.sign('Order', limitOrder(true, px(60000), btc(0.01))),
    });
    expect(ack.type).toBe('orderAck');
    const orderId = BigInt((ack.order as { orderId: string }).orderId);
    const cancel = await aliceWs.request({
      type: 'cancelOrder',
      signature: await alice.sign('Cancel', {
        market: 1,
        orderId,
        nonce: freshNonce(),
        deadline: Wallet.deadline(),
      }),
    });
    expect(cancel).toMatchObject({ type: 'cancelAck', order: { ordStatus: 'Cancelled' } });
    await new Promise((r) => setTimeout(r, 150));
    expect(aliceWs.inbox.filter((m) => m.type === 'accountSummary').length).toBe(before);
  });

  it('moves margin to isolated on the socket and reports TransferMargin', async () => {
    const before = (await t.api('GET', `/account_summary?wallet=${alice.address}`)).body as Record<
      string,
      unknown
    > & { marginSummary: Record<string, string>; withdrawable: string };
    const sig = await alice.sign('MarginTransfer', {
      amount: usd(100),
      market: 1,
      flags: 0,
      nonce: freshNonce(),
      deadline: Wallet.deadline(),
    });
    const ack = await aliceWs.request({
      type: 'transferMargin',
      amount: '100',
      instrument: 'BTC-PERP',
      direction: 'crossToIsolated',
      signature: sig,
    });
    expect(ack).toMatchObject({ type: 'marginTransferred', status: 'Submitted' });
    const report = await aliceWs.waitFor((m) => m.kind === 'TransferMargin');
    expect(report).toMatchObject({
      status: 'Completed',
      amount: '100',
      direction: 'crossToIsolated',
      instrument: 'BTC-PERP',
    });
    const after = (await t.api('GET', `/account_summary?wallet=${alice.address}`))
      .body as typeof before;
    expect(after.marginSummary.accountValue).toBe(before.marginSummary.accountValue);
    expect(micro(after.withdrawable)).toBe(micro(before.withdrawable) - usd(100));
  });

  it('withdraws to the chain and reports WithdrawMargin', async () => {
    const sig = await alice.sign('Withdrawal', {
      amount: usd(50),
      market: 0,
      flags: 0,
      nonce: freshNonce(),
      deadline: Wallet.deadline(),
    });
    const res = await t.api('POST', '/margin/withdrawal', {
      amount: '50',
      instrument: null,
      marginMode: 'Cross',
      signature: sig,
    });
    expect(res.body).toMatchObject({ status: 'Submitted' });
    const report = await aliceWs.waitFor(
      (m) => m.kind === 'WithdrawMargin' && m.status === 'Completed',
    );
    expect(report).toMatchObject({ amount: '50', command_id: res.body.command_id });
    expect(typeof report.txHash).toBe('string');
    const token = await t.api('GET', `/chain/token/${alice.address}`);
    expect(token.body.balance).toBe('50');
  });

  it('serves the history reads', async () => {
    const orders = await t.api('GET', `/historic/orders?wallet=${alice.address}`);
    expect(orders.status).toBe(200);
    const rows = orders.body.orders as Record<string, unknown>[];
    expect(rows.map((o) => o.ordStatus).sort()).toEqual(['Cancelled', 'Filled']);
    const trades = await t.api('GET', `/account/trades?wallet=${alice.address}`);
    const tradeRows = trades.body.trades as Record<string, unknown>[];
    expect(tradeRows).toHaveLength(1);
    expect(tradeRows[0]).toMatchObject({
      instrument: 'BTC-PERP',
      side: 'Buy',
      lastQty: '0.1',
      lastPx: '65000',
      busted: false,
    });
    const deprecated = await t.api('GET', `/historic/trades?wallet=${alice.address}`);
    expect(deprecated.body).toEqual(trades.body);
    expect(deprecated.headers.get('deprecation')).toBe('true');
  });

  it('serves candle history and tickers over REST, as the market-data socket sends them', async () => {
    const r = await t.api('GET', '/candles?instrument=BTC-PERP&interval=1m');
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ instrument: 'BTC-PERP', interval: '1m' });
    const candles = r.body.candles as Record<string, unknown>[];
    // The one trade of 0.1 at 65,000 is in the newest candle or an earlier one of the session.
    const traded = candles.filter((c) => c.trades !== 0);
    expect(traded).toHaveLength(1);
    expect(traded[0]).toMatchObject({
      instrument: 'BTC-PERP',
      interval: '1m',
      open: '65000',
      high: '65000',
      low: '65000',
      close: '65000',
      volume: '0.1',
      quoteVolume: '6500',
      trades: 1,
    });
    const c = traded[0] as { openTime: number; closeTime: number };
    expect(c.closeTime - c.openTime).toBe(59_999);
    expect(c.openTime % 60_000).toBe(0);
    const day = await t.api('GET', '/candles?instrument=BTC-PERP&interval=1d&limit=1');
    expect(day.body.candles).toHaveLength(1);
    expect((day.body.candles as Record<string, unknown>[])[0]).toMatchObject({ volume: '0.1' });
    // Bad queries name the parameter.
    expect(await t.api('GET', '/candles?instrument=BTC-PERP&interval=2m')).toMatchObject({
      status: 400,
      body: { error: expect.stringMatching(/^interval must be one of 1m 3m 5m/) },
    });
    expect((await t.api('GET', '/candles?interval=1m')).status).toBe(400);
    expect((await t.api('GET', '/candles?instrument=DOGE-PERP&interval=1m')).status).toBe(404);
    expect((await t.api('GET', '/candles?instrument=BTC-PERP&interval=1m&limit=0')).status).toBe(
      400,
    );
    const tickers = await t.api('GET', '/tickers');
    expect(tickers.status).toBe(200);
    const btcTicker = (tickers.body.tickers as Record<string, unknown>[]).find(
      (x) => x.instrument === 'BTC-PERP',
    );
    expect(btcTicker).toMatchObject({ last: '65000', volume24h: '0.1', quoteVolume24h: '6500' });
  });

  it('replays missed reports with fromSeq on a new connection', async () => {
    const ws = await t.connect(alice);
    const lastSeq = Math.max(...aliceWs.reports().map((r) => r.seq as number));
    const sub = await ws.request({ type: 'subscribeTrading', fromSeq: 2 });
    expect(sub).toMatchObject({
      type: 'subscribeTradingSuccess',
      seq: lastSeq,
      replay: { fromSeq: 2, toSeq: lastSeq },
      resyncRequired: false,
    });
    await ws.waitFor((m) => m.type === 'executionReport' && m.seq === lastSeq);
    const replayed = ws.reports();
    expect(replayed.map((r) => r.seq)).toEqual(
      aliceWs
        .reports()
        .filter((r) => (r.seq as number) > 2)
        .map((r) => r.seq),
    );
    expect(replayed.every((r) => r.replay === true)).toBe(true);
    // Same execIds as the live stream: a replay is the same reports, not new ones.
    expect(replayed.map((r) => r.execId)).toEqual(
      aliceWs
        .reports()
        .filter((r) => (r.seq as number) > 2)
        .map((r) => r.execId),
    );
    expect((await ws.request({ type: 'subscribeTrading' })).code).toBe(4033);
    await ws.close();
  });
});
