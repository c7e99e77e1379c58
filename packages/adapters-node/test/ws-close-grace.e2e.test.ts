/**
 * A socket the venue closes (`ws/close.ts`) is not kept for `ws`'s 30 s close timeout when its
 * peer cannot take the close frame: the 4429 connection-cap close and the shutdown close give it
 * `CLOSE_GRACE_MS`, then the socket goes. And the market-data socket's cut-off is the venue's
 * `limits.slowConsumerBytes`, as the trading socket's. The venue's end of the connection is
 * corked, as when a client reads nothing and the kernel's buffers are full: nothing it sends
 * gets out.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/index.js';
import { CLOSE_GRACE_MS } from '../src/ws/close.js';
import { WsClient } from './support/client.js';
import { startTestVenue, type TestVenue, withVenueEnd } from './support/fixture.js';

/** `ws`'s own wait for the peer's close frame, which the venue must not take. */
const WS_CLOSE_TIMEOUT_MS = 30_000;

/** Resolves with how `c` closed and when; rejects if it is still open after `ms`. */
const closeOf = (c: WsClient, ms: number): Promise<{ code: number; at: number }> =>
  new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`still open after ${ms} ms`)), ms);
    c.ws.once('close', (code: number) => {
      clearTimeout(timer);
      resolve({ code, at: performance.now() });
    });
  });

/** Connects to `url` and returns the client with the venue's end of its TCP connection. */
const connectSeen = async (t: TestVenue, url: string) => {
  const { client, venueEnd } = await withVenueEnd(t, () => WsClient.connect(url));
  return { c: client, venueEnd };
};

describe('the connection-cap close (4429)', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        limits: { ...DEFAULT_CONFIG.limits, connectionsPerAccount: 1, idleTimeoutMs: 600_000 },
      },
    });
  });
  afterAll(async () => t.close());

  it('drops a refused socket whose peer takes nothing within the grace, not after 30 s', async () => {
    const alice = t.wallet(0);
    await t.invite(alice);
    await t.connect(alice); // the account's one connection
    const { c, venueEnd } = await connectSeen(t, t.venue.ws);
    const closed = closeOf(c, WS_CLOSE_TIMEOUT_MS - 5_000);
    venueEnd.cork();
    const sent = performance.now();
    c.ws.send(
      JSON.stringify({ type: 'authenticate', id: 'a', signature: await alice.authenticate() }),
    );
    // Neither the 5000 reply nor the close frame got out: the connection drops (1006).
    const { code, at } = await closed;
    expect(code).toBe(1006);
    expect(at - sent).toBeGreaterThanOrEqual(CLOSE_GRACE_MS - 50);
    expect(venueEnd.destroyed).toBe(true);
  }, 60_000);
});

describe('the shutdown close (1001)', () => {
  it('lets the venue stop within the grace although a peer takes nothing', async () => {
    const t = await startTestVenue({
      config: { ...DEFAULT_CONFIG, limits: { ...DEFAULT_CONFIG.limits, idleTimeoutMs: 600_000 } },
    });
    const alice = t.wallet(0);
    await t.invite(alice);
    const { c, venueEnd } = await connectSeen(t, t.venue.ws);
    const auth = await c.request({ type: 'authenticate', signature: await alice.authenticate() });
    expect(auth.type).toBe('authenticateSuccess');
    const closed = closeOf(c, WS_CLOSE_TIMEOUT_MS - 5_000);
    venueEnd.cork();
    const start = performance.now();
    await t.venue.close();
    const stopped = performance.now() - start;
    expect(stopped).toBeGreaterThanOrEqual(CLOSE_GRACE_MS - 50);
    expect(stopped).toBeLessThan(WS_CLOSE_TIMEOUT_MS / 2);
    expect((await closed).code).toBe(1006);
    expect(venueEnd.destroyed).toBe(true);
  }, 60_000);
});

describe("market data's slow-consumer cut-off", () => {
  /** `limits.slowConsumerBytes` of this venue: a sixty-fourth of the default 4 MiB. */
  const BOUND = 64 * 1024;
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        limits: { ...DEFAULT_CONFIG.limits, slowConsumerBytes: BOUND, idleTimeoutMs: 600_000 },
      },
    });
  });
  afterAll(async () => t.close());

  it('is the configured bound: replies a client does not take past it end its socket', async () => {
    const { c, venueEnd } = await connectSeen(t, t.venue.marketdata);
    const closed = closeOf(c, 20_000);
    venueEnd.cork();
    // Replies are never skipped. 2,000 pings get 100 pongs and 1,900 rate-limit errors of about
    // 100 bytes: about 200 KB, past this bound and far below the default's 4 MiB.
    const ping = JSON.stringify({ type: 'ping' });
    let sent = 0;
    while (sent < 2_000 && c.ws.readyState === c.ws.OPEN) {
      c.ws.send(ping);
      sent++;
    }
    expect((await closed).code).toBe(1006);
    expect(venueEnd.destroyed).toBe(true);
  }, 60_000);
});
