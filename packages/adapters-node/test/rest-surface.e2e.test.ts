/**
 * Smaller REST contract points over real sockets: every public read is limited per IP
 * (protocol.md section 5), `POST /referral/apply` answers every 400 with the spec's text
 * (interface-spec referral error table), and `POST /admin/instruments` answers the instrument
 * as `GET /instruments` lists it (protocol.md section 8).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/index.js';
import { startTestVenue, type TestVenue } from './support/fixture.js';

const PER_SECOND = 10;

describe('public reads are limited per IP', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        limits: { ...DEFAULT_CONFIG.limits, publicReadsPerSecond: PER_SECOND },
      },
    });
  });
  afterAll(async () => t.close());

  for (const path of ['/time', '/network', '/instruments']) {
    it(`GET ${path}: 429 with Retry-After above ${PER_SECOND} per second`, async () => {
      // A fresh second for this path's burst.
      await new Promise((r) => setTimeout(r, 1_100));
      const results = await Promise.all(
        Array.from({ length: PER_SECOND + 5 }, () => t.api('GET', path)),
      );
      const tooMany = results.filter((r) => r.status === 429);
      expect(tooMany.length).toBeGreaterThanOrEqual(5);
      expect(results.filter((r) => r.status === 200).length).toBeLessThanOrEqual(PER_SECOND);
      expect(Number(tooMany[0]!.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(String(tooMany[0]!.body.error)).toMatch(/^too many requests/);
    });
  }

  it('a request no route answers is 404 before its body is read (a malformed one is never parsed), and counts against the address', async () => {
    const post = (path: string) =>
      fetch(`${t.rest}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"not json',
      });
    // A fresh second: the reads above spent this one.
    await new Promise((r) => setTimeout(r, 1_100));
    const none = await post('/nope');
    expect([none.status, await none.json()]).toEqual([
      404,
      { error: 'not found: no route POST /api/nope' },
    ]);
    // A route that exists still parses (and refuses) the same body.
    const known = await post('/margin/withdrawal');
    expect(known.status).toBe(400);
    expect(String(((await known.json()) as { error: string }).error)).toMatch(/malformed JSON/);
    await new Promise((r) => setTimeout(r, 1_100));
    const burst = await Promise.all(Array.from({ length: PER_SECOND + 5 }, () => post('/nope')));
    const tooMany = burst.filter((r) => r.status === 429);
    expect(tooMany.length).toBeGreaterThanOrEqual(5);
    expect(Number(tooMany[0]!.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(burst.filter((r) => r.status === 404).length).toBeLessThanOrEqual(PER_SECOND);
  });
});

describe('POST /admin/instruments', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue();
  });
  afterAll(async () => t.close());

  it('answers the instrument exactly as GET /instruments lists it, on creation and on update', async () => {
    const settings = {
      id: 9,
      symbol: 'DOGE-PERP',
      tickSize: '0.0001',
      lotSize: '1',
      quantityDecimals: 0,
      maxLeverage: 10,
      defaultLeverage: 5,
      openInterestCap: '1000000',
    };
    const listed = async () =>
      ((await t.api('GET', '/instruments')).body.instruments as Record<string, unknown>[]).find(
        (i) => i.symbol === 'DOGE-PERP',
      );
    const created = await t.admin('POST', '/admin/instruments', settings);
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      id: 9,
      symbol: 'DOGE-PERP',
      tickSize: '0.0001',
      maxLeverage: 10,
    });
    expect(created.body).toEqual(await listed());
    await t.oracle({ 'DOGE-PERP': '0.25' });
    const updated = await t.admin('POST', '/admin/instruments', {
      ...settings,
      maxLeverage: 8,
    });
    expect(updated.body).toMatchObject({ maxLeverage: 8, markPrice: '0.25' });
    expect(updated.body).toEqual(await listed());
  });

  it('updates a listed instrument field by field: what the body leaves out keeps its value', async () => {
    const created = await t.admin('POST', '/admin/instruments', {
      id: 10,
      symbol: 'SHIB-PERP',
      tickSize: '0.000001',
      lotSize: '1000',
      quantityDecimals: 0,
      maxLeverage: 10,
      maintenanceMarginRate: '0.03',
      openInterestCap: '1000000000',
      takerFeeRate: '0.0006',
      marginTiers: [{ notionalFloor: '100000', maxLeverage: 5 }],
      funding: { intervalMs: 28_800_000, capPerHour: '0.01' },
    });
    expect(created.status).toBe(200);
    // Before: a body with the required fields and one fee reset the maintenance rate, the tiers
    // and the funding settings to their defaults.
    const fee = await t.admin('POST', '/admin/instruments', {
      id: 10,
      makerFeeRate: '0.0001',
      funding: { capPerHour: '0.02' },
    });
    expect(fee.status).toBe(200);
    expect(fee.body).toMatchObject({
      symbol: 'SHIB-PERP',
      maintenanceMarginRate: '0.03',
      makerFeeRate: '0.0001',
      takerFeeRate: '0.0006',
      marginTiers: [
        { notionalFloor: '0', maxLeverage: 10 },
        { notionalFloor: '100000', maxLeverage: 5 },
      ],
    });
    const spec = t.venue.context.host.state.markets.get(10)!.spec;
    expect(spec.funding.intervalMs).toBe(28_800_000);
    expect(spec.funding.capPerHour).toBe(20_000_000_000_000_000n);
    // null resets a field to its default; a value refused by the rules changes nothing.
    const reset = await t.admin('POST', '/admin/instruments', { id: 10, takerFeeRate: null });
    expect(reset.body).toMatchObject({ takerFeeRate: '0.00045' });
    const refused = await t.admin('POST', '/admin/instruments', { id: 10, maxLeverage: 40 });
    expect(refused.status).toBe(400);
    expect(refused.body.error).toContain('maintenanceMarginRate must be below');
    expect(t.venue.context.host.state.markets.get(10)!.spec.maxLeverage).toBe(1000);
    // A new instrument still needs every required field.
    const partial = await t.admin('POST', '/admin/instruments', { id: 11, takerFeeRate: '0.001' });
    expect(partial.status).toBe(400);
    expect(partial.body.error).toContain('symbol');
  });

  it('null resets any optional setting to its default, on an update and on a creation', async () => {
    const spec = (id: number) => t.venue.context.host.state.markets.get(id)!.spec;
    // SOL-PERP: maxLeverage 10, defaultLeverage 5; the default is min(maxLeverage, 10).
    const leverage = await t.admin('POST', '/admin/instruments', { id: 3, defaultLeverage: null });
    expect(leverage).toMatchObject({ status: 200, body: { defaultLeverage: 10 } });
    const mmr = await t.admin('POST', '/admin/instruments', {
      id: 3,
      maintenanceMarginRate: '0.06',
    });
    expect(mmr).toMatchObject({ status: 200, body: { maintenanceMarginRate: '0.06' } });
    const mmrReset = await t.admin('POST', '/admin/instruments', {
      id: 3,
      maintenanceMarginRate: null,
    });
    expect(mmrReset).toMatchObject({ status: 200, body: { maintenanceMarginRate: '0.05' } });
    // A whole group: `funding: null` and `liquidation: null` reset every field of it.
    const groups = await t.admin('POST', '/admin/instruments', {
      id: 3,
      funding: { intervalMs: 28_800_000, capPerHour: '0.01' },
      liquidation: { auctionDurationMs: 60_000, feeRate: '0.01' },
    });
    expect(groups.status).toBe(200);
    expect(spec(3).funding.intervalMs).toBe(28_800_000);
    const groupsReset = await t.admin('POST', '/admin/instruments', {
      id: 3,
      funding: null,
      liquidation: null,
    });
    expect(groupsReset.status).toBe(200);
    expect(spec(3).funding).toMatchObject({ intervalMs: 3_600_000, capPerHour: 4n * 10n ** 16n });
    expect(spec(3).liquidation).toMatchObject({
      auctionDurationMs: 30_000,
      feeRate: 5n * 10n ** 15n,
    });
    // One field of a group.
    await t.admin('POST', '/admin/instruments', { id: 3, funding: { capPerHour: '0.01' } });
    const one = await t.admin('POST', '/admin/instruments', {
      id: 3,
      funding: { capPerHour: null },
    });
    expect(one.status).toBe(200);
    expect(spec(3).funding.capPerHour).toBe(4n * 10n ** 16n);
    // A creation with nulls takes the defaults.
    const created = await t.admin('POST', '/admin/instruments', {
      id: 12,
      symbol: 'PEPE-PERP',
      tickSize: '0.0001',
      lotSize: '1',
      quantityDecimals: 0,
      maxLeverage: 20,
      defaultLeverage: null,
      maintenanceMarginRate: null,
      marginTiers: null,
      minNotional: null,
      funding: null,
      liquidation: null,
      openInterestCap: '1000000',
    });
    expect(created).toMatchObject({
      status: 200,
      body: { defaultLeverage: 10, maintenanceMarginRate: '0.025', minNotional: '5' },
    });
    // A setting without a default cannot be reset; nothing changes.
    const before = await t.stateHash();
    for (const field of ['symbol', 'tickSize', 'maxLeverage', 'openInterestCap']) {
      const r = await t.admin('POST', '/admin/instruments', { id: 3, [field]: null });
      expect(r, field).toMatchObject({
        status: 400,
        body: { error: `${field} has no default: null is refused` },
      });
    }
    const tier = await t.admin('POST', '/admin/instruments', {
      id: 3,
      marginTiers: [{ notionalFloor: null, maxLeverage: 5 }],
    });
    expect(tier.body.error).toBe('marginTiers[0].notionalFloor has no default: null is refused');
    expect(await t.stateHash()).toEqual(before);
  });
});

describe('POST /admin/instruments: the setting names', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue();
  });
  afterAll(async () => t.close());

  it('refuses a key that is no setting, naming it, and changes nothing', async () => {
    const before = await t.stateHash();
    const cases: [Record<string, unknown>, string][] = [
      [{ takerFee: '0.01' }, 'takerFee is not an instrument setting'],
      [
        { funding: { interval: 60_000 } },
        'funding.interval is not a funding setting (intervalMs, interestRate8h, premiumClamp, capPerHour, impactNotional)',
      ],
      [
        { liquidation: { fee: '0.01' } },
        'liquidation.fee is not a liquidation setting (partialThreshold, auctionDurationMs, feeRate)',
      ],
      [
        { marginTiers: [{ notionalFloor: '100000', maxLeverage: 20, floor: '1' }] },
        'marginTiers[0].floor is not a margin tier setting (notionalFloor, maxLeverage)',
      ],
      [
        { marginTiers: [{ notionalFloor: '100000', maxLeverage: 20, maintenanceMarginRate: '1' }] },
        "marginTiers[0].maintenanceMarginRate is not a setting: a tier's rate follows from its maxLeverage",
      ],
      [
        { status: 'Paused' },
        'status is not an instrument setting: use POST /admin/markets/:instrument/pause or resume',
      ],
      [{ markPrice: '1' }, 'markPrice is not an instrument setting: it is market state'],
      [{ toString: 'x' }, 'toString is not an instrument setting'],
      [{ liquidationFeeRate: 0.01 }, 'liquidationFeeRate must be a string'],
      [
        { liquidationFeeRate: '0.01', liquidation: { feeRate: '0.02' } },
        'liquidationFeeRate and liquidation.feeRate are one setting: give one',
      ],
      [
        { liquidationFeeRate: '0.01', liquidation: null },
        'liquidation: null resets the group; drop liquidationFeeRate or it',
      ],
    ];
    for (const [extra, error] of cases) {
      const r = await t.admin('POST', '/admin/instruments', { id: 1, ...extra });
      expect(r, JSON.stringify(extra)).toMatchObject({ status: 400, body: { error } });
    }
    expect(await t.stateHash()).toEqual(before);
  });

  it('a new instrument without a required setting: 400 naming it as required; an update needs none', async () => {
    const before = await t.stateHash();
    const r = await t.admin('POST', '/admin/instruments', {
      id: 40,
      tickSize: '1',
      lotSize: '1',
      quantityDecimals: 0,
      maxLeverage: 5,
      openInterestCap: '10',
    });
    expect(r.status).toBe(400);
    // Before: "symbol must match [A-Z0-9][A-Z0-9-]{0,31}".
    expect(r.body.error).toBe('symbol is required for a new instrument (it has no default)');
    expect(await t.stateHash()).toEqual(before);
    expect((await t.admin('POST', '/admin/instruments', { id: 1, minNotional: '6' })).status).toBe(
      200,
    );
  });

  it("takes engine-rules section 2's flat liquidation names and lists the instrument under both spellings", async () => {
    const r = await t.admin('POST', '/admin/instruments', {
      id: 2,
      liquidationFeeRate: '0.01',
      liquidationPartialThreshold: '50000',
      liquidationAuctionDurationMs: 60_000,
    });
    expect(r.status).toBe(200);
    const spec = t.venue.context.host.state.markets.get(2)!.spec;
    expect(spec.liquidation).toEqual({
      feeRate: 10n ** 16n,
      partialThreshold: 50_000_000_000n,
      auctionDurationMs: 60_000,
    });
    expect(r.body).toMatchObject({
      liquidation: { partialThreshold: '50000', auctionDurationMs: 60_000, feeRate: '0.01' },
      liquidationPartialThreshold: '50000',
      liquidationAuctionDurationMs: 60_000,
      liquidationFeeRate: '0.01',
    });
    const listed = (
      (await t.api('GET', '/instruments')).body.instruments as Record<string, unknown>[]
    ).find((i) => i.id === 2);
    expect(listed).toEqual(r.body);
    // A flat name next to the nested group's other fields; null resets it.
    const mixed = await t.admin('POST', '/admin/instruments', {
      id: 2,
      liquidationFeeRate: null,
      liquidation: { auctionDurationMs: 45_000 },
    });
    expect(mixed.body).toMatchObject({
      liquidationFeeRate: '0.005',
      liquidationAuctionDurationMs: 45_000,
      liquidationPartialThreshold: '50000',
    });
  });
});

describe("POST /referral/apply: every 400 is the spec's text", () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue();
  });
  afterAll(async () => t.close());

  const MALFORMED = { error: 'walletAddress and code are required' };
  const send = async (body: string | undefined, contentType: string | null) => {
    const w = t.wallet(4);
    const signed = await w.referral(t.venue.inviteCode!);
    const headers: Record<string, string> = { ...signed.headers };
    if (contentType === null) delete headers['content-type'];
    else headers['content-type'] = contentType;
    const res = await fetch(`${t.rest}/referral/apply`, {
      method: 'POST',
      headers,
      ...(body === undefined ? {} : { body }),
    });
    return { status: res.status, body: (await res.json()) as unknown };
  };

  it('malformed, empty, too deep, oversized, wrongly typed or polluted bodies: 400 with the exact text, nothing changes', async () => {
    const before = await t.stateHash();
    const wallet = t.wallet(4).address;
    const cases: [string, string | undefined, string | null][] = [
      ['malformed JSON', '{"code":', 'application/json'],
      ['empty body', '', 'application/json'],
      ['no body', undefined, 'application/json'],
      ['no body, no content type', undefined, null],
      ['too deep', `${'['.repeat(40)}${']'.repeat(40)}`, 'application/json'],
      [
        'oversized',
        JSON.stringify({ walletAddress: wallet, code: 'A', pad: 'x'.repeat(70_000) }),
        'application/json',
      ],
      ['text/plain', JSON.stringify({ walletAddress: wallet, code: 'A' }), 'text/plain'],
      ['form', 'walletAddress=x&code=A', 'application/x-www-form-urlencoded'],
      ['__proto__', '{"__proto__":{"x":1},"walletAddress":"x","code":"A"}', 'application/json'],
      ['array', '[1]', 'application/json'],
      ['missing code', JSON.stringify({ walletAddress: wallet }), 'application/json'],
    ];
    for (const [name, body, type] of cases) {
      const r = await send(body, type);
      // The spec's exact text; `detail` (an addition) names the check that failed.
      const { detail, ...rest } = r.body as { detail?: unknown };
      expect({ name, status: r.status, body: rest }).toEqual({
        name,
        status: 400,
        body: MALFORMED,
      });
      expect(typeof detail, name).toBe('string');
    }
    expect(await t.stateHash()).toEqual(before);
  });

  it("keeps the other statuses and the other endpoints' texts", async () => {
    const w = t.wallet(4);
    const signed = await w.referral(t.venue.inviteCode!);
    const unsigned = await t.api('POST', '/referral/apply', signed.body, {
      'content-type': 'application/json',
    });
    expect(unsigned.status).toBe(401);
    expect(String(unsigned.body.error)).toMatch(/^Unauthorized: /);
    const other = await t.api('POST', '/margin/withdrawal', '{"amount":');
    expect(other.status).toBe(400);
    expect(String(other.body.error)).toMatch(/^malformed JSON/);
    const ok = await t.api('POST', '/referral/apply', signed.body, signed.headers);
    expect(ok.status).toBe(201);
  });
});

describe('history reads: a filter that names no instrument is refused, not answered empty', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue();
  });
  afterAll(async () => t.close());

  // A typo (`btc-perp`, `BTC-PERPS`) must not read as "this wallet never traded there".
  for (const path of [
    '/historic/orders',
    '/account/trades',
    '/historic/trades',
    '/account/funding',
  ]) {
    it(`GET ${path}?instrument=<unknown>: 400 naming the parameter`, async () => {
      const wallet = t.wallet(0).address;
      const known = await t.api('GET', `${path}?wallet=${wallet}&instrument=BTC-PERP`);
      expect(known.status).toBe(200);
      for (const bad of ['btc-perp', 'BTC-PERPS', '']) {
        const r = await t.api(
          'GET',
          `${path}?wallet=${wallet}&instrument=${encodeURIComponent(bad)}`,
        );
        expect(r.status, `${bad}: ${JSON.stringify(r.body)}`).toBe(400);
        expect(String(r.body.error)).toMatch(/^instrument /);
        expect(String(r.body.error)).toContain(JSON.stringify(bad));
      }
    });
  }
});

describe('time windows: startTime after endTime is refused, not answered empty', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue();
  });
  afterAll(async () => t.close());

  // Swapped bounds are a client bug; an empty page hides it ("nothing happened then").
  it('history reads and candles: 400 naming both parameters', async () => {
    const wallet = t.wallet(0).address;
    const paths = [
      `/historic/orders?wallet=${wallet}`,
      `/account/trades?wallet=${wallet}`,
      `/historic/trades?wallet=${wallet}`,
      `/account/funding?wallet=${wallet}`,
      '/candles?instrument=BTC-PERP&interval=1m',
      '/funding?instrument=BTC-PERP',
    ];
    for (const path of paths) {
      expect((await t.api('GET', `${path}&startTime=1000&endTime=2000`)).status).toBe(200);
      const r = await t.api('GET', `${path}&startTime=2000&endTime=1000`);
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(String(r.body.error)).toMatch(/startTime.*endTime/);
    }
  });
});

describe('POST /admin/oracle: a price that is not positive, or no price', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue();
    await t.oracle({ 'BTC-PERP': '65000' });
  });
  afterAll(async () => t.close());

  it('400 saying the price must be positive, naming instrument and value; marks unchanged', async () => {
    const before = await t.stateHash();
    for (const bad of ['0', '-5', '0.0']) {
      const r = await t.admin('POST', '/admin/oracle', { prices: { 'BTC-PERP': bad } });
      expect(r.status).toBe(400);
      expect(String(r.body.error), bad).toMatch(/BTC-PERP.*positive/);
      expect(String(r.body.error), bad).toContain(JSON.stringify(bad));
    }
    expect(await t.stateHash()).toEqual(before);
    const tickers = (await t.api('GET', '/tickers')).body.tickers as Record<string, unknown>[];
    expect(tickers.find((x) => x.instrument === 'BTC-PERP')).toMatchObject({ index: '65000' });
  });

  it('400 for prices naming no instrument: nothing is journaled', async () => {
    const before = await t.stateHash();
    const r = await t.admin('POST', '/admin/oracle', { prices: {} });
    expect(r.status).toBe(400);
    expect(String(r.body.error)).toMatch(/prices.*no instrument/);
    expect(await t.stateHash()).toEqual(before);
  });
});

describe('POST /admin/referral-codes/:code/revoke of a code that does not exist', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue();
  });
  afterAll(async () => t.close());

  it('404 naming the code (the path names no resource), and nothing changes', async () => {
    const before = await t.stateHash();
    const r = await t.admin('POST', '/admin/referral-codes/NOPE/revoke');
    expect(r.status).toBe(404);
    expect(String(r.body.error)).toMatch(/NOPE/);
    expect(await t.stateHash()).toEqual(before);
    // A code that exists is still revoked (200).
    const code = t.venue.inviteCode ?? '';
    const ok = await t.admin('POST', `/admin/referral-codes/${code}/revoke`);
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ code, revoked: true });
  });
});

describe('a JSON content type with an empty body is a request without a body', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue();
  });
  afterAll(async () => t.close());

  const post = async (path: string, body: string) => {
    const res = await fetch(`${t.rest}${path}`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${t.venue.adminToken}`,
        'content-type': 'application/json',
      },
      body,
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  it('a body-less admin action works with the header many clients always send', async () => {
    for (const body of ['', ' \n']) {
      expect(await post('/admin/markets/BTC-PERP/pause', body)).toMatchObject({ status: 200 });
      expect(await post('/admin/markets/BTC-PERP/resume', body)).toMatchObject({ status: 200 });
    }
    // A route that needs a body says what is missing, not that the JSON is malformed.
    const oracle = await post('/admin/oracle', '');
    expect(oracle.status).toBe(400);
    expect(String(oracle.body.error)).not.toMatch(/malformed JSON/);
  });
});

describe('admin bodies: a field the route does not read is refused, naming it', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue();
    await t.oracle({ 'BTC-PERP': '65000' });
  });
  afterAll(async () => t.close());

  const wallet = '0x1111111111111111111111111111111111111111';
  // Each a typo of a field the route reads, or a field it has none of; before, each was dropped
  // and the request carried out without it (funding settled in every market, a random code).
  const cases: [string, Record<string, unknown>, string][] = [
    ['/admin/funding/settle', { instrumnet: 'BTC-PERP' }, 'instrument'],
    ['/admin/referral-codes', { kind: 'system', maxUses: 5, cod: 'VIP' }, 'code, kind'],
    ['/admin/oracle', { prices: { 'BTC-PERP': '66000' }, time: 1 }, 'prices'],
    ['/admin/faucet', { wallet, amount: '5', token: 'USDC' }, 'wallet, amount'],
    [
      '/admin/liquidate',
      { wallet, marginMode: 'Cross', forced: true },
      'wallet, instrument, marginMode, force',
    ],
    ['/admin/trades/1/bust', { reasn: 'typo' }, 'reason'],
    [
      '/admin/insurance-fund/transfer',
      { direction: 'ToInsuranceFund', amount: '1', ammount: '1' },
      'direction, amount',
    ],
    ['/admin/fee-pool/payout', { wallet, amount: '1', note: 'x' }, 'wallet, amount'],
    ['/admin/markets/BTC-PERP/pause', { reason: 'maintenance' }, 'no body fields'],
    ['/admin/markets/BTC-PERP/resume', { reason: 'maintenance' }, 'no body fields'],
  ];

  it('400 naming the field and what the route takes; nothing journaled, no token minted', async () => {
    const before = await t.stateHash();
    for (const [path, b, takes] of cases) {
      const r = await t.admin('POST', path, b);
      const unknown = Object.keys(b).at(-1);
      expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(String(r.body.error), path).toContain(`unknown field ${unknown}`);
      expect(String(r.body.error), path).toContain(takes);
    }
    const code = t.venue.inviteCode ?? '';
    const revoke = await t.admin('POST', `/admin/referral-codes/${code}/revoke`, { why: 'x' });
    expect(revoke.status).toBe(400);
    expect(await t.stateHash()).toEqual(before);
    expect((await t.api('GET', `/chain/token/${wallet}`)).body).toMatchObject({ balance: '0' });
    // The same bodies without the stray field are carried out.
    expect(
      (await t.admin('POST', '/admin/funding/settle', { instrument: 'BTC-PERP' })).status,
    ).toBe(200);
    expect((await t.admin('POST', '/admin/faucet', { wallet, amount: '5' })).status).toBe(200);
  });
});

describe('POST /admin/faucet: no more than a uint256 token can hold', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue();
  });
  afterAll(async () => t.close());

  it('400 naming the bound, no balance changed', async () => {
    const wallet = '0x2222222222222222222222222222222222222222';
    // 10^72 tokens are 10^78 micro-units, above 2^256 (about 1.16 x 10^77).
    const r = await t.admin('POST', '/admin/faucet', { wallet, amount: `1${'0'.repeat(72)}` });
    expect(r.status).toBe(400);
    expect(String(r.body.error)).toMatch(/2\^256 - 1/);
    expect((await t.api('GET', `/chain/token/${wallet}`)).body).toMatchObject({ balance: '0' });
  });
});

describe('POST /admin/referral-codes: null is "none" for code and owner; a bad maxUses', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue();
  });
  afterAll(async () => t.close());

  it("takes the record's own shape back (a system code's owner is null); maxUses named as itself", async () => {
    // Before: 400 "owner must be a 0x address" and "code must be a string".
    const named = await t.admin('POST', '/admin/referral-codes', {
      code: 'VIP-1',
      kind: 'system',
      owner: null,
      maxUses: 5,
    });
    expect(named.status, JSON.stringify(named.body)).toBe(200);
    expect(named.body).toMatchObject({ code: 'VIP-1', owner: null, maxUses: 5 });
    const drawn = await t.admin('POST', '/admin/referral-codes', {
      code: null,
      kind: 'system',
      maxUses: 3,
    });
    expect(drawn.status, JSON.stringify(drawn.body)).toBe(200);
    expect(String(drawn.body.code)).toMatch(/^[A-Z0-9]{7}$/);
    // A fraction or a string: named as the field, not as core's command field (before:
    // "createReferralCode.maxUses must be a safe integer, not 1.5").
    for (const maxUses of [1.5, '5']) {
      const r = await t.admin('POST', '/admin/referral-codes', { kind: 'system', maxUses });
      expect(r.status).toBe(400);
      expect(String(r.body.error)).toMatch(/^maxUses must be a positive integer, not /);
    }
    // An attributed code still needs its owner.
    const ownerless = await t.admin('POST', '/admin/referral-codes', {
      kind: 'attributed',
      owner: null,
      maxUses: 3,
    });
    expect(ownerless.status).toBe(400);
  });
});
