/**
 * The config's instruments are what a new venue starts with: a restart adds the ids the venue
 * does not list yet and leaves listed instruments with their journaled settings (admin changes
 * survive it), naming on stderr any setting where the config differs. The config's working-order
 * cap follows the same rule: journaled when a new venue starts, reported when a later start differs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type VenueConfig } from '../src/index.js';
import type { Wallet } from './support/client.js';
import { btc, limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

const listed = async (t: TestVenue, symbol: string): Promise<Record<string, unknown>> =>
  ((await t.api('GET', '/instruments')).body.instruments as Record<string, unknown>[]).find(
    (i) => i.symbol === symbol,
  )!;

describe('config instruments at a restart', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'config-instruments-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const start = (config: VenueConfig = DEFAULT_CONFIG, log: (line: string) => void = () => {}) =>
    startTestVenue({ dataDir: dir, snapshots: false, config, log });

  it('an admin change to a listed instrument survives a restart with the same config', async () => {
    let t = await start();
    const r = await t.admin('POST', '/admin/instruments', { id: 1, takerFeeRate: '0.001' });
    expect(r.status).toBe(200);
    await t.close();
    const lines: string[] = [];
    t = await start(DEFAULT_CONFIG, (line) => lines.push(line));
    try {
      expect((await listed(t, 'BTC-PERP')).takerFeeRate).toBe('0.001');
      // The config still says the default fee: one line says so and how to change it.
      const notes = lines.filter((l) => l.startsWith('config instrument'));
      expect(notes).toEqual([
        'config instrument 1 (BTC-PERP) differs from the listed one in takerFeeRate: the listed settings stay; change a listed instrument with POST /api/admin/instruments',
      ]);
    } finally {
      await t.close();
    }
  });

  it('a venue whose tick size the admin changed restarts with an order working', async () => {
    let t = await start();
    expect((await t.admin('POST', '/admin/instruments', { id: 1, tickSize: '1' })).status).toBe(
      200,
    );
    await t.oracle({ 'BTC-PERP': '65000' });
    const w = t.wallet(0);
    await t.invite(w);
    await t.fund(w, '10000');
    const ws = await t.connect(w);
    const ack = await ws.request({
      type: 'placeOrder',
      signature: await w.sign('Order', limitOrder(true, px(60000), btc(0.01))),
    });
    expect(ack.type).toBe('orderAck');
    await t.close();
    // Before: the config's tick size 0.5 was re-sent and refused ("tick and lot size cannot
    // change while orders are working"), so the venue did not start.
    t = await start();
    try {
      expect((await listed(t, 'BTC-PERP')).tickSize).toBe('1');
    } finally {
      await t.close();
    }
  });

  it('a restart adds a config instrument the venue does not list, and names every differing field', async () => {
    await (await start()).close();
    const [btcSettings, ...rest] = DEFAULT_CONFIG.instruments;
    const config: VenueConfig = {
      ...DEFAULT_CONFIG,
      instruments: [
        { ...btcSettings!, maxLeverage: 20, funding: { intervalMs: 28_800_000 } },
        ...rest,
        {
          id: 4,
          symbol: 'DOGE-PERP',
          tickSize: '0.0001',
          lotSize: '1',
          quantityDecimals: 0,
          maxLeverage: 10,
          openInterestCap: '1000000',
        },
      ],
    };
    const lines: string[] = [];
    const t = await start(config, (line) => lines.push(line));
    try {
      expect((await listed(t, 'DOGE-PERP')).maxLeverage).toBe(10);
      expect((await listed(t, 'BTC-PERP')).maxLeverage).toBe(40);
      expect(lines.filter((l) => l.startsWith('config instrument'))).toEqual([
        expect.stringMatching(
          /^config instrument 1 \(BTC-PERP\) differs from the listed one in maxLeverage, funding\.intervalMs: /,
        ),
      ]);
    } finally {
      await t.close();
    }
  });
  it('a start refused for a config instrument whose symbol is listed under another id lists none of its instruments', async () => {
    let t = await start();
    const before = await t.stateHash();
    await t.close();
    const [btcSettings] = DEFAULT_CONFIG.instruments;
    const config: VenueConfig = {
      ...DEFAULT_CONFIG,
      instruments: [
        // New and fine, but before the refused one in the file.
        {
          id: 7,
          symbol: 'XRP-PERP',
          tickSize: '0.0001',
          lotSize: '1',
          quantityDecimals: 0,
          maxLeverage: 10,
          openInterestCap: '1000000',
        },
        { ...btcSettings!, id: 5 },
      ],
    };
    await expect(start(config)).rejects.toThrow(
      'config instrument 5 (BTC-PERP): symbol BTC-PERP already belongs to listed instrument 1; give it that id or another symbol',
    );
    // Before: XRP-PERP was journaled first and stayed listed after the operator fixed the file.
    t = await start();
    try {
      expect(await listed(t, 'XRP-PERP')).toBeUndefined();
      expect(await t.stateHash()).toEqual(before);
    } finally {
      await t.close();
    }
  });

  it('names the config symbol when the file gives a listed id another symbol', async () => {
    await (await start()).close();
    const [btcSettings, eth, sol] = DEFAULT_CONFIG.instruments;
    const config: VenueConfig = {
      ...DEFAULT_CONFIG,
      instruments: [btcSettings!, { ...eth!, symbol: 'DOGE-PERP' }, sol!],
    };
    const lines: string[] = [];
    await (await start(config, (line) => lines.push(line))).close();
    expect(lines.filter((l) => l.startsWith('config instrument'))).toEqual([
      expect.stringMatching(
        /^config instrument 2 \(ETH-PERP, DOGE-PERP in the config\) differs from the listed one in symbol: /,
      ),
    ]);
  });
});

describe('config limits.maxWorkingOrdersPerAccount at a restart', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'config-order-cap-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const withCap = (maxWorkingOrdersPerAccount: number): VenueConfig => ({
    ...DEFAULT_CONFIG,
    limits: { ...DEFAULT_CONFIG.limits, maxWorkingOrdersPerAccount },
  });
  const start = (config: VenueConfig, lines: string[]) =>
    startTestVenue({ dataDir: dir, snapshots: false, config, log: (l) => lines.push(l) });
  const capLines = (lines: string[]) =>
    lines.filter((l) => l.startsWith('limits.maxWorkingOrdersPerAccount'));
  const placeBid = async (t: TestVenue, w: Wallet, price: number) =>
    (await t.connect(w)).request({
      type: 'placeOrder',
      signature: await w.sign('Order', limitOrder(true, px(price), btc(0.01))),
    });

  it("sets a new venue's cap once, replayed after a restart; a later config value is only reported", async () => {
    let lines: string[] = [];
    let closedAt = 0;
    let t = await start(withCap(2), lines);
    const w = t.wallet(0);
    try {
      expect(capLines(lines)).toEqual(['limits.maxWorkingOrdersPerAccount: 1000 -> 2 (journaled)']);
      await t.oracle({ 'BTC-PERP': '65000' });
      await t.invite(w);
      await t.fund(w, '10000');
      for (const price of [60000, 60500])
        expect((await placeBid(t, w, price)).type).toBe('orderAck');
      expect(await placeBid(t, w, 61000)).toMatchObject({ code: 4000 });
      closedAt = (await t.stateHash()).seq;
    } finally {
      await t.close();
    }
    // The same config: nothing journaled, and the cap comes back from the journal's replay.
    lines = [];
    t = await start(withCap(2), lines);
    try {
      expect(capLines(lines)).toEqual([]);
      expect((await t.stateHash()).seq).toBe(closedAt);
      expect(await placeBid(t, w, 61000)).toMatchObject({
        code: 4000,
        message: 'INVALID_REQUEST: account has 2 working orders, the most allowed is 2',
      });
      closedAt = (await t.stateHash()).seq;
    } finally {
      await t.close();
    }
    // On a venue that has a journal the journal owns the cap: the default config leaves it at 2
    // and start-up says where to change it (the admin route; a restart must not undo that).
    lines = [];
    t = await start(DEFAULT_CONFIG, lines);
    try {
      expect(capLines(lines)).toEqual([]);
      expect(lines).toContain(
        "config limits.maxWorkingOrdersPerAccount 1000 differs from the venue's 2: the venue's value stays; change it with POST /api/admin/venue-settings",
      );
      expect((await t.stateHash()).seq).toBe(closedAt);
      expect(await placeBid(t, w, 61000)).toMatchObject({ code: 4000 });
    } finally {
      await t.close();
    }
  });
});
