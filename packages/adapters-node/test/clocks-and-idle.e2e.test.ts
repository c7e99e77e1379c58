/**
 * Timing rules that hold whatever the clocks do: rate windows run on the process clock (the host
 * clock holds at the last journaled time while the system clock is behind it, and would then let
 * nothing age out), and an idle market-data connection is closed at its deadline like a trading
 * one, with 4408, not up to a ping interval later without a close frame.
 */
import { afterEach, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ManualClock } from '../src/engine/clock.js';
import { DEFAULT_CONFIG, type VenueConfig } from '../src/index.js';
import { WsClient } from './support/client.js';
import { startTestVenue, type TestVenue } from './support/fixture.js';

let t: TestVenue | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

const withLimits = (limits: Partial<VenueConfig['limits']>): VenueConfig => ({
  ...DEFAULT_CONFIG,
  limits: { ...DEFAULT_CONFIG.limits, ...limits },
});

/** Opens a socket that never answers pings and resolves with how and when it was closed. */
async function silent(url: string) {
  const ws = new WebSocket(url, { autoPong: false });
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  const opened = performance.now();
  return new Promise<{ code: number; reason: string; afterMs: number }>((resolve) =>
    ws.once('close', (code, reason) =>
      resolve({ code, reason: String(reason), afterMs: performance.now() - opened }),
    ),
  );
}

it('closes a silent market-data connection at the idle deadline with 4408, as the trading socket does', async () => {
  // The spec's 15 s ping / 30 s idle, scaled down; the deadline falls between two ping ticks.
  t = await startTestVenue({ config: withLimits({ pingIntervalMs: 1_500, idleTimeoutMs: 2_000 }) });
  const [marketData, trading] = await Promise.all([silent(t.venue.marketdata), silent(t.venue.ws)]);
  for (const closed of [marketData, trading]) {
    expect(closed).toMatchObject({ code: 4408, reason: 'idle timeout' });
    expect(closed.afterMs).toBeGreaterThanOrEqual(1_950);
    expect(closed.afterMs).toBeLessThan(2_800);
  }
});

it('ages rate windows on the process clock while the host clock holds an hour ahead', async () => {
  // What SystemClock(journaledTime) gives after the system clock was set back an hour: command
  // times hold still until it catches up.
  t = await startTestVenue({ clock: new ManualClock(Date.now() + 3_600_000) });
  // Spend this address's 100 reads per second (the fixture's own set-up calls count too).
  let reads = 0;
  while ((await t.api('GET', '/time')).status === 200) reads++;
  expect(reads).toBeLessThanOrEqual(100);
  await new Promise((r) => setTimeout(r, 1_100)); // the rolling second has passed
  expect((await t.api('GET', '/time')).status).toBe(200);
  // The same address on market data, which shares the budget.
  const md = await WsClient.connect(t.venue.marketdata);
  expect(await md.request({ type: 'ping' })).toMatchObject({ type: 'pong' });
  await md.close();
});
