/**
 * Risk events through the service, over real sockets: funding settled by the operator reaches
 * the positions as `Funding` reports and summary pushes; a price crash liquidates an account into
 * an auction that the `liquidations` channel shows and another wallet claims with a signed
 * `claimLiquidation`; a busted trade is reported, reversed and kept in the history, flagged.
 */
import { parseDecimal } from '@perp/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshNonce, type Msg, Wallet, WsClient } from './support/client.js';
import { limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

const LIQ = 7;
const units = (n: number): bigint => BigInt(Math.round(n * 10_000));

async function until(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('risk events through the service', () => {
  let t: TestVenue;
  let alice: Wallet; // the leveraged long
  let bob: Wallet; // market maker
  let carol: Wallet; // auction claimant
  let a: WsClient;
  let b: WsClient;
  let c: WsClient;
  let md: WsClient;

  beforeAll(async () => {
    t = await startTestVenue();
    const added = await t.admin('POST', '/admin/instruments', {
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
    expect(added.status).toBe(200);
    await t.oracle({ 'LIQ-PERP': '1000', 'BTC-PERP': '65000' });
    [alice, bob, carol] = [t.wallet(0), t.wallet(1), t.wallet(2)];
    for (const w of [alice, bob, carol]) await t.invite(w);
    await t.fund(alice, '100');
    await t.fund(bob, '10000');
    await t.fund(carol, '10000');
    [a, b, c] = [await t.connect(alice), await t.connect(bob), await t.connect(carol)];
    for (const s of [a, b, c]) await s.request({ type: 'subscribeTrading' });
    await a.request({ type: 'subscribeAccountSummary' });
    await c.request({ type: 'subscribeAccountSummary' });
    md = await WsClient.connect(t.venue.marketdata);
    await md.request({ type: 'subscribe', channel: 'liquidations' });
    await md.request({ type: 'subscribe', channel: 'trades', instrument: 'LIQ-PERP' });
    // Alice buys 1 LIQ at 1000 from Bob at 20x: notional 1000, initial margin 50.
    await b.request({
      type: 'placeOrder',
      signature: await bob.sign('Order', limitOrder(false, px(1000), units(1), { market: LIQ })),
    });
    const fill = await a.request({
      type: 'placeOrder',
      signature: await alice.sign(
        'Order',
        limitOrder(true, px(1000), units(1), { market: LIQ, timeInForce: 2 }),
      ),
    });
    expect(fill).toMatchObject({ type: 'orderAck', order: { ordStatus: 'Filled' } });
  });
  afterAll(async () => {
    await md.close();
    await t.close();
  });

  it('settles funding on the operator command: reports, pushes and a zero-sum ledger', async () => {
    const res = await t.admin('POST', '/admin/funding/settle', { instrument: 'LIQ-PERP' });
    expect(res.status).toBe(200);
    const [settlement] = res.body.settlements as Record<string, unknown>[];
    expect(settlement).toMatchObject({ instrument: 'LIQ-PERP', indexPrice: '1000' });
    const payments = settlement!.payments as {
      wallet: string;
      payment: string;
      positionSize: string;
    }[];
    expect(payments.map((p) => [p.wallet, p.positionSize]).sort()).toEqual(
      [
        [alice.address, '1'],
        [bob.address, '-1'],
      ].sort(),
    );
    const micro = (s: string) => BigInt(Math.round(Number(s) * 1e6));
    const paid = payments.reduce((sum, p) => sum + micro(p.payment), 0n);
    // Payers round up and receivers down: the venue keeps the residue (insurance fund).
    expect(paid + micro(settlement!.residue as string)).toBe(0n);
    const report = await a.waitFor((m) => m.kind === 'Funding');
    expect(report).toMatchObject({ instrument: 'LIQ-PERP', positionSize: '1' });
    expect(report.payment).toBe(payments.find((p) => p.wallet === alice.address)!.payment);
    await b.waitFor((m) => m.kind === 'Funding');
  });

  it('liquidates on a crash into an auction that another wallet claims', async () => {
    const pushesBefore = a.inbox.filter((m) => m.type === 'accountSummary').length;
    // Bob quotes 890 / 940, below Alice's bankruptcy price (~900.45) on the bid, and the index
    // falls to 915: the mark (median of index, book and basis) lands between the bankruptcy price
    // and the liquidation price (~923.54), the book cannot absorb the position, so it goes to auction.
    await b.request({
      type: 'placeOrder',
      signature: await bob.sign('Order', limitOrder(true, px(890), units(1), { market: LIQ })),
    });
    await b.request({
      type: 'placeOrder',
      signature: await bob.sign('Order', limitOrder(false, px(940), units(1), { market: LIQ })),
    });
    const marks = await t.admin('POST', '/admin/oracle', { prices: { 'LIQ-PERP': '915' } });
    const mark = Number((marks.body.marks as Record<string, { mark: string }>)['LIQ-PERP']!.mark);
    expect(mark).toBeGreaterThan(900.45);
    expect(mark).toBeLessThan(923.5);
    const live = (await md.waitFor(
      (m) => m.type === 'liquidationAuction' && m.status === 'Live',
    )) as Msg & { auctionId: string };
    expect(live).toMatchObject({ instrument: 'LIQ-PERP', side: 'Buy', remaining: '1' });
    const claimPrice = px(live.price as string);
    expect(claimPrice).toBeGreaterThan(0n);

    const carolPushes = () => c.inbox.filter((m) => m.type === 'accountSummary').length;
    const claim = async (quantity: bigint) =>
      c.request({
        type: 'claimLiquidation',
        signature: await carol.sign('ClaimLiquidation', {
          auctionId: BigInt(live.auctionId),
          quantity,
          maxPrice: px(1000),
          nonce: freshNonce(),
          deadline: Wallet.deadline(),
        }),
      });
    // Half first: it reserves Carol's margin and, by the spec's trigger table, pushes nothing.
    const pushes = carolPushes();
    const first = await claim(units(0.5));
    expect(first).toMatchObject({ type: 'claimAck', auctionId: live.auctionId, quantity: '0.5' });
    const claimed = await md.waitFor(
      (m) => m.type === 'liquidationAuction' && m.remaining === '0.5',
    );
    expect(claimed.status).toBe('Live');
    await new Promise((r) => setTimeout(r, 200));
    expect(carolPushes()).toBe(pushes);
    // The rest completes the auction: it settles, Alice is flat, Carol holds the long.
    expect(await claim(units(0.5))).toMatchObject({ type: 'claimAck', quantity: '0.5' });
    const liquidation = await a.waitFor((m) => m.kind === 'Liquidation' && m.method === 'Auction');
    expect(liquidation).toMatchObject({ instrument: 'LIQ-PERP', marginMode: 'Cross' });
    await until(() => c.reports('LiquidationClaim').length >= 2);
    expect(c.reports('LiquidationClaim').every((r) => r.status === 'Settled')).toBe(true);
    const ended = await md.waitFor(
      (m) =>
        m.type === 'liquidationAuction' && m.auctionId === live.auctionId && m.status === 'Ended',
    );
    expect(ended.remaining).toBe('0');
    await until(() =>
      a.inbox
        .filter((m) => m.type === 'accountSummary')
        .slice(pushesBefore)
        .some((m) => (m.assetPositions as unknown[]).length === 0),
    );
    await until(() => carolPushes() > pushes);

    const summary = await t.api('GET', `/account_summary?wallet=${carol.address}`);
    expect(
      (summary.body.assetPositions as Record<string, unknown>[]).find(
        (p) => p.instrument === 'LIQ-PERP',
      ),
    ).toMatchObject({ szi: '1' });
    // One liquidation fill per claim, next to the opening order fill.
    const trades = await t.api(
      'GET',
      `/account/trades?wallet=${alice.address}&instrument=LIQ-PERP`,
    );
    expect((trades.body.trades as Record<string, unknown>[]).map((r) => r.source).sort()).toEqual([
      'Liquidation',
      'Liquidation',
      'Order',
    ]);
    // The claims are off-book transfers, not prints: the public tape, candles and the ticker's
    // volume hold the opening match only (docs/protocol-decisions.md, "Market data").
    const opening = {
      instrument: 'LIQ-PERP',
      tradeId: expect.any(String),
      price: '1000',
      quantity: '1',
      side: 'Buy',
      time: expect.any(Number),
    };
    await md.request({ type: 'ping' });
    expect(md.inbox.filter((m) => m.type === 'trade' || m.type === 'tradeBust')).toEqual([
      { type: 'trade', ...opening },
    ]);
    expect((await t.api('GET', '/trades?instrument=LIQ-PERP')).body.trades).toEqual([opening]);
    const candles = (await t.api('GET', '/candles?instrument=LIQ-PERP&interval=1d')).body
      .candles as Record<string, unknown>[];
    expect(candles.map((k) => [k.volume, k.trades])).toEqual([['1', 1]]);
    const tickers = (await t.api('GET', '/tickers')).body.tickers as Record<string, unknown>[];
    expect(tickers.find((k) => k.instrument === 'LIQ-PERP')).toMatchObject({
      last: '1000',
      volume24h: '1',
    });
  });

  it('busts a trade: both sides get TradeBust, positions reverse, the history keeps it flagged', async () => {
    await b.request({
      type: 'placeOrder',
      signature: await bob.sign('Order', limitOrder(false, px(65000), units(0.01))),
    });
    const taker = await c.request({
      type: 'placeOrder',
      signature: await carol.sign(
        'Order',
        limitOrder(true, px(65000), units(0.01), { timeInForce: 2 }),
      ),
    });
    expect(taker).toMatchObject({ order: { ordStatus: 'Filled' } });
    const fill = await c.waitFor(
      (m) =>
        m.kind === 'OrderFilled' &&
        (m.trade as { instrument: string } | undefined)?.instrument === 'BTC-PERP',
    );
    const tradeId = (fill.trade as { tradeId: string }).tradeId;

    const res = await t.admin('POST', `/admin/trades/${tradeId}/bust`, {
      reason: 'erroneous print',
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ tradeId, instrument: 'BTC-PERP', reason: 'erroneous print' });
    expect((res.body.wallets as string[]).sort()).toEqual([bob.address, carol.address].sort());
    const bust = await c.waitFor((m) => m.kind === 'TradeBust');
    expect(bust).toMatchObject({
      trade: { tradeId, instrument: 'BTC-PERP', side: 'Buy', lastQty: '0.01' },
      bustReason: 'erroneous print',
      positionAfter: '0',
    });
    await b.waitFor((m) => m.kind === 'TradeBust');

    const positions = (await t.api('GET', `/account_summary?wallet=${carol.address}`)).body
      .assetPositions as Record<string, unknown>[];
    expect(positions.find((p) => p.instrument === 'BTC-PERP')).toBeUndefined();
    const trades = (
      await t.api('GET', `/account/trades?wallet=${carol.address}&instrument=BTC-PERP`)
    ).body.trades as Record<string, unknown>[];
    expect(trades).toHaveLength(1);
    expect(trades[0]).toMatchObject({ tradeId, busted: true, bustReason: 'erroneous print' });
    // A second bust of the same trade is refused and changes nothing.
    const before = await t.stateHash();
    const again = await t.admin('POST', `/admin/trades/${tradeId}/bust`, { reason: 'twice' });
    expect(again.status).toBe(400);
    expect(await t.stateHash()).toEqual(before);
  });

  it('refuses a manual liquidation of a healthy account unless forced', async () => {
    const refused = await t.admin('POST', '/admin/liquidate', {
      wallet: carol.address,
      marginMode: 'Cross',
    });
    expect(refused.status).toBe(400);
    // protocol.md: a refused POST /admin/liquidate is 400, for a wallet without an account too.
    const unknown = await t.admin('POST', '/admin/liquidate', {
      wallet: `0x${'ab'.repeat(20)}`,
      marginMode: 'Cross',
    });
    expect(unknown.status).toBe(400);
    expect(String(unknown.body.error)).toMatch(/^ACCOUNT_NOT_FOUND: /);
    // A missing marginMode, an unknown instrument, or one given with Cross is refused, not
    // taken as a liquidation of the whole cross account; nothing changes.
    const before = await t.stateHash();
    const bodies: [Record<string, unknown>, string][] = [
      [{ force: true }, 'marginMode is required: Cross or Isolated'],
      [
        { marginMode: 'Cross', instrument: 'NOPE-PERP', force: true },
        'unknown instrument NOPE-PERP',
      ],
      [
        { marginMode: 'Isolated', instrument: 'NOPE-PERP', force: true },
        'unknown instrument NOPE-PERP',
      ],
      [
        { marginMode: 'Cross', instrument: 'BTC-PERP', force: true },
        'instrument is only for an Isolated liquidation: a Cross one covers the whole cross account',
      ],
      [{ marginMode: 'Isolated', force: true }, 'instrument is required for Isolated'],
      [
        { marginMode: 'Cross', instrument: 7, force: true },
        'instrument must be a symbol such as BTC-PERP',
      ],
    ];
    for (const [fields, error] of bodies) {
      const r = await t.admin('POST', '/admin/liquidate', { wallet: carol.address, ...fields });
      expect(r, JSON.stringify(fields)).toMatchObject({ status: 400, body: { error } });
    }
    expect(await t.stateHash()).toEqual(before);
    const forced = await t.admin('POST', '/admin/liquidate', {
      wallet: carol.address,
      marginMode: 'Cross',
      instrument: null,
      force: true,
    });
    expect(forced.status).toBe(200);
    expect(forced.body).toMatchObject({ wallet: carol.address, marginMode: 'Cross' });
    expect(['Healthy', 'Auction', 'Closed']).toContain(forced.body.result);
  });

  it("reports the venue's solvency to the operator: its pools, deposits and no scope below zero", async () => {
    expect((await t.api('GET', '/admin/solvency')).status).toBe(401);
    const res = await t.admin('GET', '/admin/solvency');
    expect(res.status).toBe(200);
    // Three wallets funded 100 + 10,000 + 10,000; nothing withdrawn; every liquidation above
    // (the auction Carol claimed, the forced one) ended without a deficit left over.
    expect(res.body).toMatchObject({
      totalDeposits: '20100',
      totalWithdrawals: '0',
      totalDebt: '0',
      debts: [],
    });
    // The insurance fund holds the funding residue and liquidation fees: never negative.
    expect(res.body.insuranceFund).toMatch(/^\d+(\.\d{1,6})?$/);
    expect(res.body.feePool).toMatch(/^\d+(\.\d{1,6})?$/);
  });

  it('lets the operator seed the insurance fund from the fee pool and move it back, to the micro-unit', async () => {
    const path = '/admin/insurance-fund/transfer';
    expect((await t.api('POST', path, { direction: 'ToInsuranceFund', amount: '1' })).status).toBe(
      401,
    );
    const before = (await t.admin('GET', '/admin/solvency')).body as Record<string, string>;
    const micro = (x: string): bigint => {
      const d = parseDecimal(x, 6);
      if (!d.ok) throw new Error(`not a collateral amount: ${x}`);
      return d.value;
    };
    const fee = micro(before.feePool as string);
    const fund = micro(before.insuranceFund as string);
    expect(fee).toBeGreaterThan(1n);
    const part = '0.000001';
    const seeded = await t.admin('POST', path, { direction: 'ToInsuranceFund', amount: part });
    expect(seeded.status).toBe(200);
    expect(micro(seeded.body.insuranceFund as string)).toBe(fund + 1n);
    expect(micro(seeded.body.feePool as string)).toBe(fee - 1n);
    const back = await t.admin('POST', path, { direction: 'ToFeePool', amount: part });
    expect(back.body).toEqual({ insuranceFund: before.insuranceFund, feePool: before.feePool });
    // Bad input is 400 before the engine; a source too small is the engine's 4000 message.
    const hash = await t.stateHash();
    for (const [body, error] of [
      [{ direction: 'Up', amount: '1' }, 'direction must be ToInsuranceFund or ToFeePool'],
      [
        { direction: 'ToFeePool', amount: '0.0000001' },
        'amount must be a positive decimal string with at most 6 decimals',
      ],
      [
        { direction: 'ToFeePool', amount: '-1' },
        'amount must be a positive decimal string with at most 6 decimals',
      ],
      [
        { direction: 'ToInsuranceFund', amount: '100000000' },
        `INVALID_REQUEST: the fee pool holds ${before.feePool}, less than 100000000`,
      ],
    ] as const) {
      const res = await t.admin('POST', path, body);
      expect(res).toMatchObject({ status: 400, body: { error: error } });
    }
    expect(await t.stateHash()).toEqual(hash);
  });
  it("pays fee-pool revenue into the operator's account, which withdraws it to the chain", async () => {
    const path = '/admin/fee-pool/payout';
    const dave = t.wallet(3);
    expect((await t.api('POST', path, { wallet: dave.address, amount: '1' })).status).toBe(401);
    // No trading account yet: 404 with the engine's message, and nothing changes.
    const hash = await t.stateHash();
    expect(await t.admin('POST', path, { wallet: dave.address, amount: '0.000001' })).toMatchObject(
      { status: 404, body: { error: `ACCOUNT_NOT_FOUND: no trading account for ${dave.address}` } },
    );
    expect(await t.stateHash()).toEqual(hash);
    await t.invite(dave);
    const d = await t.connect(dave);
    await d.request({ type: 'subscribeTrading' });
    const pool = (await t.admin('GET', '/admin/solvency')).body.feePool as string;
    const paid = await t.admin('POST', path, { wallet: dave.address, amount: pool });
    expect(paid).toMatchObject({
      status: 200,
      body: { wallet: dave.address, amount: pool, feePool: '0' },
    });
    expect(
      (await t.admin('POST', path, { wallet: dave.address, amount: '0.000001' })).body,
    ).toEqual({ error: 'INVALID_REQUEST: the fee pool holds 0, less than 0.000001' });
    const summary = await t.api('GET', `/account_summary?wallet=${dave.address}`);
    expect(summary.body.withdrawable).toBe(pool);
    const res = await t.withdraw(dave, pool);
    expect(res.body).toMatchObject({ status: 'Submitted' });
    await d.waitFor((m) => m.kind === 'WithdrawMargin' && m.status === 'Completed');
    expect((await t.api('GET', `/chain/token/${dave.address}`)).body.balance).toBe(pool);
    await d.close();
  });
});
