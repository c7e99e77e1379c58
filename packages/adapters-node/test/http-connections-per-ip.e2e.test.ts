/**
 * `limits.httpConnectionsPerIp`: one client address holds at most that many plain HTTP
 * connections (keep-alive ones stay open between requests). The next one's request is answered
 * 429 with `Retry-After` and the connection closed (protocol.md section 5: REST over a per-IP
 * limit is 429 with Retry-After); one that sends nothing is closed after a second. A closed
 * connection gives its slot back. Sockets upgraded to WebSockets count under `connectionsPerIp`
 * only, and an over-cap socket may still upgrade (docs/protocol-decisions.md, "Connections per
 * address").
 */
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type LimitsConfig } from '../src/index.js';
import { WsClient } from './support/client.js';
import { startTestVenue, type TestVenue } from './support/fixture.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** One TCP connection speaking HTTP/1.1 keep-alive by hand, so the test decides when it closes. */
class RawConnection {
  private readonly socket: Socket;
  private received = '';
  private waiter: ((text: string) => void) | null = null;
  /** Bytes the server sent on this connection, all told. */
  bytesReceived = 0;
  /** The head (status line and headers) of the last response. */
  head = '';
  /** How it ended: the socket error's code (`ECONNRESET`), or `end` for an orderly close. */
  readonly ended: Promise<string>;

  private constructor(socket: Socket) {
    this.socket = socket;
    let error: string | null = null;
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code ?? e.message;
    });
    this.ended = new Promise((resolve) => socket.on('close', () => resolve(error ?? 'end')));
    socket.on('data', (chunk: Buffer) => {
      this.bytesReceived += chunk.length;
      this.received += chunk.toString('latin1');
      this.waiter?.(this.received);
    });
  }

  /**
   * Connects from `localAddress` (any 127.x.y.z is this host). Requests wait for the handshake;
   * a reset may come before the client has seen it complete, so a failed connect ends it too.
   */
  static open(port: number, localAddress = '127.0.0.1'): RawConnection {
    return new RawConnection(connect({ host: '127.0.0.1', port, localAddress }));
  }

  /** Sends `GET path` and resolves with the status once the whole response is in. */
  get(path: string): Promise<number> {
    this.received = '';
    return new Promise((resolve, reject) => {
      this.ended.then((how) => reject(new Error(`connection closed (${how}) before an answer`)));
      this.waiter = (text) => {
        const headEnd = text.indexOf('\r\n\r\n');
        if (headEnd < 0) return;
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text.slice(0, headEnd))?.[1] ?? 0);
        if (text.length < headEnd + 4 + length) return;
        this.waiter = null;
        this.head = text.slice(0, headEnd);
        resolve(Number(text.slice(9, 12)));
      };
      this.socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    });
  }

  close(): Promise<string> {
    this.socket.destroy();
    return this.ended;
  }
}

describe('plain HTTP connections per client address', () => {
  let t: TestVenue | undefined;
  const open: { close(): Promise<unknown> }[] = [];
  afterEach(async () => {
    for (const c of open.splice(0)) await c.close();
    await t?.close();
    t = undefined;
  });

  /**
   * A venue with these limits and no connection open: the fixture's own `GET /network` left a
   * keep-alive connection from 127.0.0.1 in this process's fetch pool, which would hold a slot.
   */
  const start = async (
    limits: Partial<LimitsConfig>,
    trustProxy: readonly string[] = [],
  ): Promise<TestVenue> => {
    t = await startTestVenue({
      config: { ...DEFAULT_CONFIG, trustProxy, limits: { ...DEFAULT_CONFIG.limits, ...limits } },
    });
    const server = t.venue.app.server;
    server.closeIdleConnections();
    const openConnections = () =>
      new Promise<number>((resolve, reject) =>
        server.getConnections((e, n) => (e ? reject(e) : resolve(n))),
      );
    const deadline = Date.now() + 3_000;
    while ((await openConnections()) > 0) {
      expect(Date.now()).toBeLessThan(deadline);
      await sleep(10);
    }
    return t;
  };
  /** A keep-alive connection the venue has answered on (so it is counted and open). */
  const served = async (port: number, localAddress?: string): Promise<RawConnection> => {
    const c = RawConnection.open(port, localAddress);
    open.push(c);
    expect(await c.get('/api/network')).toBe(200);
    return c;
  };
  /** A connection over the cap: its request is answered 429 with Retry-After, then it is closed. */
  const expectRefused = async (port: number, localAddress?: string): Promise<void> => {
    const c = RawConnection.open(port, localAddress);
    open.push(c);
    expect(await c.get('/api/network')).toBe(429);
    expect(c.head).toMatch(/\r\nretry-after: 1\r\n/i);
    expect(c.head).toMatch(/\r\nconnection: close\r\n/i);
    expect(await c.ended).toBe('end');
  };

  it('holds the cap, answers the next connection 429 and closes it, and a closed one frees its slot', async () => {
    const v = await start({ httpConnectionsPerIp: 3 });
    const port = v.venue.port;
    const held = [await served(port), await served(port), await served(port)];
    await expectRefused(port);
    // A pooled client gets the status to back off from, not a network error.
    const refused = await fetch(`${v.rest}/network`, { signal: AbortSignal.timeout(5_000) });
    expect([refused.status, refused.headers.get('retry-after')]).toEqual([429, '1']);
    expect(((await refused.json()) as { error: string }).error).toMatch(
      /^too many open connections from this address: at most 3/,
    );
    // One that sends nothing is not kept: it is closed after its one-second lease.
    const silent = RawConnection.open(port);
    open.push(silent);
    const t0 = Date.now();
    expect(await silent.ended).toBe('end');
    expect(Date.now() - t0).toBeLessThan(3_000);
    // The connections within the cap keep working, and another address has its own count.
    for (const c of held) expect(await c.get('/api/instruments')).toBe(200);
    await served(port, '127.0.0.2');

    await held[0]!.close();
    // The venue sees the close a moment after the client: retry while it answers 429.
    const deadline = Date.now() + 3_000;
    for (;;) {
      const c = RawConnection.open(port);
      open.push(c);
      const status = await c.get('/api/network');
      if (status === 200) break;
      expect(status).toBe(429);
      expect(Date.now()).toBeLessThan(deadline);
      await sleep(20);
    }
    // The freed slot is taken again: the cap holds.
    await expectRefused(port);
  });

  it('a socket upgraded to a WebSocket counts under connectionsPerIp, not the HTTP cap', async () => {
    const v = await start({ httpConnectionsPerIp: 2, connectionsPerIp: 4 });
    const port = v.venue.port;
    // Three WebSockets on an HTTP cap of 2: had the upgraded sockets kept their HTTP slots, the
    // third would have been over the cap.
    const sockets = [
      await WsClient.connect(v.venue.ws),
      await WsClient.connect(v.venue.marketdata),
      await WsClient.connect(v.venue.ws),
    ];
    open.push(...sockets);
    // ... so the address still has both of its plain connections.
    await served(port);
    await served(port);
    await expectRefused(port);
    // With both plain slots taken, a fourth socket comes over the HTTP cap and still upgrades:
    // the WebSocket cap (4) decides.
    const fourth = await WsClient.connect(v.venue.ws);
    open.push(fourth);
    for (const s of [sockets[0]!, sockets[2]!, fourth])
      expect((await s.request({ type: 'ping' })).type).toBe('pong');
  });

  it("a trusted proxy's connections are not capped (its pool carries many clients); others are", async () => {
    // 127.0.0.1 is the proxy; 127.0.0.2, another address of this host, is not trusted.
    const v = await start({ httpConnectionsPerIp: 2 }, ['127.0.0.1']);
    const port = v.venue.port;
    const pooled: RawConnection[] = [];
    for (let i = 0; i < 5; i++) pooled.push(await served(port));
    for (const c of pooled) expect(await c.get('/api/instruments')).toBe(200);
    // An untrusted peer is capped as before, whatever X-Forwarded-For it would send later: the
    // cap is decided at the connection, on the peer address.
    await served(port, '127.0.0.2');
    await served(port, '127.0.0.2');
    await expectRefused(port, '127.0.0.2');
  });
});
