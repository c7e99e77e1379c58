/**
 * Diff review (limits.httpConnectionsPerIp, commit db116f0): protocol.md section 5 fixes how a
 * client over a per-IP limit is answered: "Unauthenticated: 30 connections and 100 public reads
 * per second per IP; REST over-limit is HTTP 429 with `Retry-After` ..., WS over-limit is 4029."
 * The new cap answers a REST client over its connection limit with a TCP reset instead: no
 * status, no Retry-After, and `fetch` throws ECONNRESET, which clients treat as a network fault
 * (often retried at once) rather than as a limit to back off from. docs/protocol-decisions.md
 * documents the reset as a choice, but protocol.md is not silent here.
 *
 * Expected: the request on the connection over the cap is answered 429 with Retry-After.
 * Actual: the connection is reset as it is accepted (fetch rejects with ECONNRESET).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/index.js';
import { startTestVenue, type TestVenue } from './support/fixture.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('a REST client over the per-address connection cap', () => {
  let t: TestVenue | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('is answered 429 with Retry-After, as protocol.md 5 says of REST over-limit', async () => {
    t = await startTestVenue({
      config: { ...DEFAULT_CONFIG, limits: { ...DEFAULT_CONFIG.limits, httpConnectionsPerIp: 1 } },
    });
    const server = t.venue.app.server;
    server.closeIdleConnections();
    const open = () =>
      new Promise<number>((resolve, reject) =>
        server.getConnections((e, n) => (e ? reject(e) : resolve(n))),
      );
    for (let i = 0; i < 300 && (await open()) > 0; i++) await sleep(10);
    // One request in flight holds the address's only slot (a slow client, or a long poll).
    const { connect } = await import('node:net');
    const holder = connect({ host: '127.0.0.1', port: t.venue.port });
    holder.on('error', () => {});
    await new Promise((r) => holder.once('connect', r));
    holder.write('GET /api/time HTTP/1.1\r\nHost: x\r\n'); // headers not finished: stays open
    await sleep(50);
    const answer = await fetch(`${t.rest}/time`, { signal: AbortSignal.timeout(5_000) }).then(
      (r) => ({ status: r.status, retryAfter: r.headers.get('retry-after') }),
      (e: { cause?: { code?: string } }) => ({ error: e.cause?.code }),
    );
    holder.destroy();
    expect(answer).toMatchObject({ status: 429 });
    expect((answer as { retryAfter?: string }).retryAfter).toMatch(/^\d+$/);
  });
});
