/**
 * Protocol.md 5: "Unauthenticated: 30 connections and 100 public reads per second per IP". The
 * cap is the venue's, not each path's: the trading socket (`/ws`) and the market-data socket
 * (`/marketdata`) take their connections from one count per address.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/index.js';
import { WsClient } from './support/client.js';
import { startTestVenue, type TestVenue } from './support/fixture.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('connections per IP over both sockets', () => {
  let t: TestVenue;
  const open: WsClient[] = [];
  beforeAll(async () => {
    t = await startTestVenue({
      config: { ...DEFAULT_CONFIG, limits: { ...DEFAULT_CONFIG.limits, connectionsPerIp: 2 } },
    });
  });
  afterAll(async () => {
    for (const c of open) await c.close();
    await t.close();
  });

  const connect = async (url: string): Promise<WsClient> => {
    const c = await WsClient.connect(url);
    open.push(c);
    return c;
  };

  it('one address holds at most connectionsPerIp sockets, /marketdata and /ws counted together', async () => {
    const md = await connect(t.venue.marketdata);
    await connect(t.venue.ws);
    // The cap (2) is reached across the two paths: a third is refused at upgrade on either.
    await expect(connect(t.venue.ws)).rejects.toThrow('429');
    await expect(connect(t.venue.marketdata)).rejects.toThrow('429');

    // A closed market-data socket gives its slot back, and the trading socket may take it.
    await md.close();
    const deadline = Date.now() + 3_000;
    for (;;) {
      const accepted = await connect(t.venue.ws).then(
        () => true,
        (e: unknown) => {
          // The server sees the close a moment after the client: retry only the cap's refusal.
          if (!String(e).includes('429') || Date.now() > deadline) throw e;
          return false;
        },
      );
      if (accepted) break;
      await sleep(20);
    }
    await expect(connect(t.venue.marketdata)).rejects.toThrow('429');
  });
});
