/**
 * `GET` and `POST /api/admin/venue-settings` (our addition to the operator surface): the venue-wide
 * settings as the engine state holds them, and the working-order cap changed at runtime through
 * the journal. A runtime change survives a restart: the config's cap only sets a new venue's.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENGINE_RULES_VERSION } from '@perp/core';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/index.js';
import { encodeRecord } from '../src/journal/file-journal.js';
import type { Wallet, WsClient } from './support/client.js';
import { btc, limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

/** What `GET /admin/venue-settings` answers on a venue with the default settings. */
const DEFAULTS = {
  maxWorkingOrdersPerAccount: 1_000,
  tradeRetentionMs: 3_600_000,
  maxRetainedTrades: 100_000,
  cloidRetentionMs: 86_400_000,
  marginChecks: true,
};

describe('/api/admin/venue-settings', () => {
  let t: TestVenue;
  let alice: Wallet;
  let ws: WsClient;
  const place = async (fields: Record<string, bigint | number | boolean | string>) =>
    ws.request({ type: 'placeOrder', signature: await alice.sign('Order', fields) });

  beforeAll(async () => {
    t = await startTestVenue();
    alice = t.wallet(0);
    const bob = t.wallet(1);
    await t.oracle({ 'BTC-PERP': '65000' });
    for (const w of [alice, bob]) {
      await t.invite(w);
      await t.fund(w, '10000');
    }
    const ask = await (await t.connect(bob)).request({
      type: 'placeOrder',
      signature: await bob.sign('Order', limitOrder(false, px(65000), btc(0.05))),
    });
    expect(ask.type).toBe('orderAck');
    ws = await t.connect(alice);
  });
  afterAll(async () => t.close());

  it('GET answers the settings the engine state holds, numbers and booleans as JSON', async () => {
    const r = await t.admin('GET', '/admin/venue-settings');
    expect(r.status).toBe(200);
    expect(r.body).toStrictEqual(DEFAULTS);
  });

  it('answers 401 without the admin token, and the POST journals nothing', async () => {
    const before = await t.stateHash();
    for (const headers of [{}, { authorization: 'Bearer not-the-token' }]) {
      const get = await t.api('GET', '/admin/venue-settings', undefined, headers);
      expect(get.status).toBe(401);
      const post = await t.api(
        'POST',
        '/admin/venue-settings',
        { maxWorkingOrdersPerAccount: 1 },
        headers,
      );
      expect(post).toMatchObject({
        status: 401,
        body: { error: 'Unauthorized: admin bearer token required' },
      });
    }
    expect(await t.stateHash()).toEqual(before);
    expect((await t.admin('GET', '/admin/venue-settings')).body).toStrictEqual(DEFAULTS);
  });

  it('a bad body is 400 naming the failed check and journals nothing', async () => {
    const before = await t.stateHash();
    const cases: readonly (readonly [unknown, string])[] = [
      ['[]', 'body must be a JSON object'],
      ['7', 'body must be a JSON object'],
      ['null', 'body must be a JSON object'],
      [{}, 'maxWorkingOrdersPerAccount is required'],
      [
        { maxWorkingOrdersPerAccount: 5, maxOrders: 5 },
        'unknown venue setting maxOrders (settable: maxWorkingOrdersPerAccount)',
      ],
      [
        { maxWorkingOrdersPerAccount: 5, marginChecks: false },
        'marginChecks cannot be set at runtime: only maxWorkingOrdersPerAccount can',
      ],
      [
        { maxWorkingOrdersPerAccount: '5' },
        'maxWorkingOrdersPerAccount must be an integer of at most 9007199254740991, not "5"',
      ],
      [
        { maxWorkingOrdersPerAccount: 2.5 },
        'maxWorkingOrdersPerAccount must be an integer of at most 9007199254740991, not 2.5',
      ],
      [
        { maxWorkingOrdersPerAccount: null },
        'maxWorkingOrdersPerAccount must be an integer of at most 9007199254740991, not null',
      ],
      [
        { maxWorkingOrdersPerAccount: true },
        'maxWorkingOrdersPerAccount must be an integer of at most 9007199254740991, not true',
      ],
      [
        '{"maxWorkingOrdersPerAccount":9007199254740993}',
        'maxWorkingOrdersPerAccount must be an integer of at most 9007199254740991, not 9007199254740992',
      ],
      [
        { maxWorkingOrdersPerAccount: 0 },
        'venue setting maxWorkingOrdersPerAccount must be a whole number >= 1, got 0',
      ],
      [
        { maxWorkingOrdersPerAccount: -3 },
        'venue setting maxWorkingOrdersPerAccount must be a whole number >= 1, got -3',
      ],
    ];
    for (const [body, error] of cases) {
      const r = await t.admin('POST', '/admin/venue-settings', body);
      expect(r, JSON.stringify(body)).toMatchObject({ status: 400, body: { error } });
    }
    expect(await t.stateHash()).toEqual(before);
    expect((await t.admin('GET', '/admin/venue-settings')).body).toStrictEqual(DEFAULTS);
  });

  it('POST lowers the cap through the journal: a further resting order is refused, an IOC passes', async () => {
    const before = await t.stateHash();
    const r = await t.admin('POST', '/admin/venue-settings', { maxWorkingOrdersPerAccount: 1 });
    expect(r.status).toBe(200);
    expect(r.body).toStrictEqual({ ...DEFAULTS, maxWorkingOrdersPerAccount: 1 });
    // One journaled command, as every admin change is.
    expect((await t.stateHash()).seq).toBe(before.seq + 1);
    expect((await t.admin('GET', '/admin/venue-settings')).body).toMatchObject({
      maxWorkingOrdersPerAccount: 1,
    });

    expect((await place(limitOrder(true, px(60000), btc(0.01)))).type).toBe('orderAck');
    expect(await place(limitOrder(true, px(60500), btc(0.01)))).toMatchObject({
      type: 'error',
      code: 4000,
      message: 'INVALID_REQUEST: account has 1 working orders, the most allowed is 1',
    });
    // An IOC never rests, so the cap does not refuse it.
    const ioc = await place(limitOrder(true, px(65000), btc(0.01), { timeInForce: 2 }));
    expect(ioc).toMatchObject({ type: 'orderAck', order: { ordStatus: 'Filled' } });

    // Raising it again lets the account rest another order.
    const back = await t.admin('POST', '/admin/venue-settings', { maxWorkingOrdersPerAccount: 2 });
    expect(back.body).toStrictEqual({ ...DEFAULTS, maxWorkingOrdersPerAccount: 2 });
    expect((await place(limitOrder(true, px(60500), btc(0.01)))).type).toBe('orderAck');
  });
});

describe('a runtime cap at a restart on the same data directory', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'venue-settings-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const start = (lines: string[], config = DEFAULT_CONFIG) =>
    startTestVenue({ dataDir: dir, snapshots: false, config, log: (l) => lines.push(l) });
  const capLines = (lines: string[]) =>
    lines.filter((l) => l.includes('limits.maxWorkingOrdersPerAccount'));
  const cap = async (t: TestVenue) =>
    (await t.admin('GET', '/admin/venue-settings')).body.maxWorkingOrdersPerAccount;

  it('stays: the config, default or another value, does not undo it and start-up says so', async () => {
    let t = await start([]);
    let closedAt = 0;
    try {
      const r = await t.admin('POST', '/admin/venue-settings', { maxWorkingOrdersPerAccount: 3 });
      expect(r.status).toBe(200);
      closedAt = (await t.stateHash()).seq;
    } finally {
      await t.close();
    }
    for (const config of [
      DEFAULT_CONFIG,
      { ...DEFAULT_CONFIG, limits: { ...DEFAULT_CONFIG.limits, maxWorkingOrdersPerAccount: 7 } },
    ]) {
      const lines: string[] = [];
      t = await start(lines, config);
      try {
        expect(await cap(t)).toBe(3);
        expect((await t.stateHash()).seq).toBe(closedAt);
        expect(capLines(lines)).toEqual([
          `config limits.maxWorkingOrdersPerAccount ${config.limits.maxWorkingOrdersPerAccount} differs from the venue's 3: the venue's value stays; change it with POST /api/admin/venue-settings`,
        ]);
      } finally {
        await t.close();
      }
    }
  });

  it('a first start that a crash cut short after its rules declaration is finished by the next', async () => {
    // What a kill leaves right after the new venue journaled its first record.
    writeFileSync(
      join(dir, 'journal.log'),
      encodeRecord(1, { type: 'declareRules', version: ENGINE_RULES_VERSION, time: Date.now() }),
    );
    const config = {
      ...DEFAULT_CONFIG,
      limits: { ...DEFAULT_CONFIG.limits, maxWorkingOrdersPerAccount: 7 },
    };
    let lines: string[] = [];
    let t = await start(lines, config);
    try {
      expect(await cap(t)).toBe(7);
      expect(capLines(lines)).toEqual(['limits.maxWorkingOrdersPerAccount: 1000 -> 7 (journaled)']);
      // The bootstrap invite code a new venue prints, and the instruments of the config.
      expect(t.venue.inviteCode).toMatch(/^[A-Z0-9]+$/);
      expect((await t.api('GET', '/instruments')).body).not.toEqual([]);
    } finally {
      await t.close();
    }
    // Finished now: a later start is an old venue's (no second invite code, the cap stays).
    lines = [];
    t = await start(lines, config);
    try {
      expect(t.venue.inviteCode).toBeNull();
      expect(await cap(t)).toBe(7);
      expect(capLines(lines)).toEqual([]);
    } finally {
      await t.close();
    }
  });
});
