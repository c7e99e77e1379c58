/**
 * Behind a proxy the operator trusts (`trustProxy`), every per-IP limit keys on the client that
 * `X-Forwarded-For` names, walking from the right to the first untrusted hop: the public-read
 * budget of REST, the WebSocket connection cap and the unsigned-message budget of both sockets
 * (one key for all three, so a client's REST reads and socket messages share its budget). Without
 * trust, or from a peer that is not trusted, the header changes nothing. One client is one
 * address whichever form it arrives in: a dual-stack listener's `::ffff:a.b.c.d` peer and a proxy's
 * `a.b.c.d` share every limit. The plain HTTP connection cap's exemption of trusted peers is in
 * http-connections-per-ip.e2e.test.ts.
 */
import { request } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type LimitsConfig, type VenueConfig } from '../src/index.js';
import { http, type Msg, WsClient } from './support/client.js';
import { startTestVenue, type TestVenue } from './support/fixture.js';

/** The public-read budget of every venue here: small, so a burst spends it within a second. */
const PER_SECOND = 10;

const configWith = (trustProxy: string[], limits: Partial<LimitsConfig> = {}): VenueConfig => ({
  ...DEFAULT_CONFIG,
  trustProxy,
  limits: { ...DEFAULT_CONFIG.limits, publicReadsPerSecond: PER_SECOND, ...limits },
});

/** `X-Forwarded-For: value`. */
const from = (value: string): Record<string, string> => ({ 'x-forwarded-for': value });

/**
 * Sends one `GET /api/time` per entry of `clients` (its headers) at once; the statuses per
 * client, in order of first appearance.
 */
async function burst(t: TestVenue, clients: Record<string, string>[]): Promise<number[]> {
  const results = await Promise.all(
    clients.map((h) => http('GET', `${t.rest}/time`, undefined, h)),
  );
  return results.map((r) => r.status);
}

const times = <T>(n: number, value: T): T[] => Array.from({ length: n }, () => value);
const count = (statuses: number[], status: number): number =>
  statuses.filter((s) => s === status).length;

/** Connects with `headers`; each socket is kept in `open`, for the test's end to close. */
const connectKeeping =
  (open: WsClient[]) =>
  async (url: string, headers: Record<string, string>): Promise<WsClient> => {
    const c = await WsClient.connect(url, headers);
    open.push(c);
    return c;
  };

/** The reply to a ping on `c`: a pong, or an error (4029 over the budget). */
const ping = async (c: WsClient): Promise<Msg> => c.request({ type: 'ping' });

describe('public reads behind a trusted proxy (trustProxy: loopback)', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue({ config: configWith(['loopback']) });
  });
  afterAll(async () => t.close());

  it('two clients X-Forwarded-For names each get their own budget, and each budget holds', async () => {
    const a = from('203.0.113.1');
    const b = from('203.0.113.2');
    // One burst: A sends more than its budget, B its whole budget.
    const statuses = await burst(t, [...times(PER_SECOND + 5, a), ...times(PER_SECOND, b)]);
    const ofA = statuses.slice(0, PER_SECOND + 5);
    const ofB = statuses.slice(PER_SECOND + 5);
    // Counted as one address (the proxy's), B would have been refused with A.
    expect(ofB).toEqual(times(PER_SECOND, 200));
    expect(count(ofA, 200)).toBeLessThanOrEqual(PER_SECOND);
    expect(count(ofA, 429)).toBeGreaterThanOrEqual(5);
  });

  it('an address a proxy wrote with its port is one client whatever the port', async () => {
    // As Azure Application Gateway writes it: a new port for each connection of the client.
    const ports = Array.from({ length: PER_SECOND + 5 }, (_, i) =>
      from(i % 2 === 0 ? `203.0.113.60:${40_000 + i}` : `[::ffff:203.0.113.60]:${40_000 + i}`),
    );
    const statuses = await burst(t, ports);
    expect(count(statuses, 200)).toBeLessThanOrEqual(PER_SECOND);
    expect(count(statuses, 429)).toBeGreaterThanOrEqual(5);
  });

  it('a chain "spoofed, real" keys on real, the rightmost untrusted entry', async () => {
    // One client varies the entry it writes itself; the proxy appends 203.0.113.50 to each.
    const real = Array.from({ length: PER_SECOND + 5 }, (_, i) =>
      from(`192.0.2.${i + 1}, 203.0.113.50`),
    );
    // Another client writes the first one's address; its own (appended) is 203.0.113.51.
    const other = times(PER_SECOND, from('203.0.113.50, 203.0.113.51'));
    const statuses = await burst(t, [...real, ...other]);
    const ofReal = statuses.slice(0, real.length);
    // The spoofed entries bought no budget: 203.0.113.50's is spent ...
    expect(count(ofReal, 200)).toBeLessThanOrEqual(PER_SECOND);
    expect(count(ofReal, 429)).toBeGreaterThanOrEqual(5);
    // ... and naming 203.0.113.50 did not charge it: the other client keys on its own address.
    expect(statuses.slice(real.length)).toEqual(times(PER_SECOND, 200));
  });
});

describe('IPv6 clients behind a trusted proxy count per network (limits.ipv6PrefixLength)', () => {
  let t: TestVenue | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  it('addresses of one /64 share a budget; the next /64 has its own', async () => {
    t = await startTestVenue({ config: configWith(['loopback']) });
    // One subscriber rotating through its /64 (as privacy addresses do) is one client ...
    const rotating = Array.from({ length: PER_SECOND + 5 }, (_, i) =>
      from(`2001:db8:1:2::${(i + 1).toString(16)}`),
    );
    // ... and its neighbour, one /64 over, is another.
    const neighbour = times(PER_SECOND, from('2001:db8:1:3::1'));
    const statuses = await burst(t, [...rotating, ...neighbour]);
    const ofRotating = statuses.slice(0, rotating.length);
    expect(count(ofRotating, 200)).toBeLessThanOrEqual(PER_SECOND);
    expect(count(ofRotating, 429)).toBeGreaterThanOrEqual(5);
    expect(statuses.slice(rotating.length)).toEqual(times(PER_SECOND, 200));
  });

  it('the WebSocket connection cap holds for a whole /64', async () => {
    t = await startTestVenue({
      config: configWith(['loopback'], { connectionsPerIp: 2 }),
    });
    const open: WsClient[] = [];
    try {
      const connect = connectKeeping(open);
      await connect(t.venue.ws, from('2001:db8:9:9::1'));
      await connect(t.venue.marketdata, from('2001:db8:9:9::2'));
      await expect(connect(t.venue.ws, from('2001:db8:9:9:ffff::3'))).rejects.toThrow('429');
      await connect(t.venue.ws, from('2001:db8:9:a::1'));
    } finally {
      for (const c of open) await c.close();
    }
  });

  it('ipv6PrefixLength 128 keys each address alone', async () => {
    t = await startTestVenue({ config: configWith(['loopback'], { ipv6PrefixLength: 128 }) });
    const statuses = await burst(t, [
      ...times(PER_SECOND, from('2001:db8:1:2::1')),
      ...times(PER_SECOND, from('2001:db8:1:2::2')),
    ]);
    expect(statuses).toEqual(times(2 * PER_SECOND, 200));
  });
});

describe('public reads without a trusted proxy: X-Forwarded-For changes nothing', () => {
  let t: TestVenue | undefined;
  afterEach(async () => {
    await t?.close();
    t = undefined;
  });

  for (const [name, trustProxy] of [
    ['trusting nobody (the default)', []],
    // The test's peer is 127.0.0.1, which this list does not trust: its header is forged.
    ['a forged header from a peer outside trustProxy', ['10.0.0.0/8']],
  ] as const) {
    it(`${name}: every client shares the peer's budget`, async () => {
      t = await startTestVenue({ config: configWith([...trustProxy]) });
      // A fresh second: the fixture's own GET /network was charged to this address.
      await new Promise((r) => setTimeout(r, 1_100));
      const statuses = await burst(t, [
        ...times(PER_SECOND, from('203.0.113.1')),
        ...times(PER_SECOND, from('203.0.113.2')),
      ]);
      expect(count(statuses, 200)).toBeLessThanOrEqual(PER_SECOND);
      expect(count(statuses, 429)).toBeGreaterThanOrEqual(PER_SECOND);
    });
  }
});

describe('WebSockets behind a trusted proxy (trustProxy: loopback)', () => {
  let t: TestVenue;
  const open: WsClient[] = [];
  beforeAll(async () => {
    t = await startTestVenue({ config: configWith(['loopback'], { connectionsPerIp: 2 }) });
  });
  afterAll(async () => {
    for (const c of open) await c.close();
    await t.close();
  });

  const connect = connectKeeping(open);

  it('each client gets its own connection cap over /ws and /marketdata', async () => {
    const a = from('203.0.113.1');
    const b = from('203.0.113.2');
    await connect(t.venue.ws, a);
    await connect(t.venue.marketdata, a);
    // A holds its two: a third is refused on either path ...
    await expect(connect(t.venue.ws, a)).rejects.toThrow('429');
    await expect(connect(t.venue.marketdata, a)).rejects.toThrow('429');
    // ... a chain ending in A's address is A, whatever it starts with ...
    await expect(connect(t.venue.ws, from('203.0.113.9, 203.0.113.1'))).rejects.toThrow('429');
    // ... while B, behind the same proxy, has two of its own.
    await connect(t.venue.ws, b);
    await connect(t.venue.marketdata, b);
    await expect(connect(t.venue.ws, b)).rejects.toThrow('429');
  });
});

describe('unsigned WebSocket messages behind a trusted proxy (trustProxy: loopback)', () => {
  let t: TestVenue;
  const open: WsClient[] = [];
  beforeAll(async () => {
    // The default connection cap: only the message budget is under test here.
    t = await startTestVenue({ config: configWith(['loopback']) });
  });
  afterAll(async () => {
    for (const c of open) await c.close();
    await t.close();
  });

  const connect = connectKeeping(open);

  it("unsigned messages are charged to the client's budget, the one its REST reads take from", async () => {
    const c = from('203.0.113.3');
    const d = from('203.0.113.4');
    const sockets = {
      cWs: await connect(t.venue.ws, c),
      cMd: await connect(t.venue.marketdata, c),
      dWs: await connect(t.venue.ws, d),
      dMd: await connect(t.venue.marketdata, d),
    };
    // C spends its budget over REST (REST and the sockets key on one address) ...
    const statuses = await burst(t, times(PER_SECOND + 2, c));
    expect(count(statuses, 429)).toBeGreaterThanOrEqual(2);
    // ... so its sockets' unauthenticated messages are refused, D's are answered.
    for (const s of [sockets.cWs, sockets.cMd]) expect((await ping(s)).code).toBe(4029);
    for (const s of [sockets.dWs, sockets.dMd]) expect((await ping(s)).type).toBe('pong');
  });
});

describe('WebSockets without a trusted proxy: X-Forwarded-For changes nothing', () => {
  let t: TestVenue | undefined;
  const open: WsClient[] = [];
  afterEach(async () => {
    for (const c of open.splice(0)) await c.close();
    await t?.close();
    t = undefined;
  });

  for (const [name, trustProxy] of [
    ['trusting nobody (the default)', []],
    ['a forged header from a peer outside trustProxy', ['10.0.0.0/8']],
  ] as const) {
    it(`${name}: every client shares the peer's connection cap`, async () => {
      t = await startTestVenue({
        config: configWith([...trustProxy], { connectionsPerIp: 2 }),
      });
      open.push(await WsClient.connect(t.venue.ws, from('203.0.113.1')));
      open.push(await WsClient.connect(t.venue.marketdata, from('203.0.113.1')));
      await expect(WsClient.connect(t.venue.ws, from('203.0.113.2'))).rejects.toThrow('429');
      await expect(WsClient.connect(t.venue.marketdata, from('203.0.113.3'))).rejects.toThrow(
        '429',
      );
    });
  }
});

describe('a client seen as ::ffff:a.b.c.d and as a.b.c.d is one client', () => {
  // The venue listens on an IPv4-mapped address, as a dual-stack (`::`) listener does: its IPv4
  // peers are ::ffff:127.0.0.x. The proxy at 127.0.0.2 writes the client's address as IPv4.
  const PROXY = '127.0.0.2';
  const CLIENT = '127.0.0.1';
  let t: TestVenue;
  const open: WsClient[] = [];
  beforeAll(async () => {
    t = await startTestVenue({
      host: '::ffff:127.0.0.1',
      config: configWith([PROXY], { connectionsPerIp: 2 }),
    });
  });
  afterAll(async () => {
    for (const c of open) await c.close();
    await t.close();
  });
  const origin = (): string => `127.0.0.1:${t.venue.port}`;

  /** `GET /api/time` from `localAddress` with `headers`; the status. */
  const getTime = (localAddress: string, headers: Record<string, string> = {}): Promise<number> =>
    new Promise((resolve, reject) => {
      const req = request(
        `http://${origin()}/api/time`,
        { localAddress, headers, agent: false },
        (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        },
      );
      req.on('error', reject);
      req.end();
    });

  it('the public-read budget: direct reads and reads through the proxy take from one', async () => {
    // A fresh second: the fixture's own GET /network was charged to the client's address.
    await new Promise((r) => setTimeout(r, 1_100));
    const statuses = await Promise.all([
      ...times(PER_SECOND / 2, 0).map(() => getTime(CLIENT)),
      ...times(PER_SECOND / 2, 0).map(() => getTime(PROXY, from(CLIENT))),
      ...times(PER_SECOND / 2, 0).map(() => getTime(PROXY, from(`::ffff:${CLIENT}`))),
    ]);
    // Two keys (::ffff:127.0.0.1 and 127.0.0.1) would have answered all 15: each holds at most
    // 10. (Lower bounds only: on a loaded machine the burst may outlast the one-second window.)
    expect(count(statuses, 429)).toBeGreaterThanOrEqual(1);
    expect(count(statuses, 200)).toBeGreaterThanOrEqual(PER_SECOND);
  });

  it('the WebSocket connection cap: a direct socket and one through the proxy hold one', async () => {
    const connect = async (path: string, localAddress: string, headers = {}) => {
      const c = await WsClient.connect(`ws://${origin()}${path}`, headers, localAddress);
      open.push(c);
      return c;
    };
    await connect('/ws', CLIENT);
    await connect('/marketdata', PROXY, from(CLIENT));
    // The client's two are taken, in either form and on either path ...
    await expect(connect('/ws', CLIENT)).rejects.toThrow('429');
    await expect(connect('/marketdata', PROXY, from(CLIENT))).rejects.toThrow('429');
    await expect(connect('/ws', PROXY, from(`::ffff:${CLIENT}`))).rejects.toThrow('429');
    // ... while another client behind the proxy has its own.
    await connect('/ws', PROXY, from('203.0.113.9'));
  });
});

describe('trusting every hop (trustProxy: 0.0.0.0/0, ::/0)', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue({ config: configWith(['0.0.0.0/0', '::/0']) });
  });
  afterAll(async () => t.close());

  it('keys on the leftmost X-Forwarded-For entry, through any chain of hops', async () => {
    // A's requests come through different edge proxies; B's name A's proxies but not A.
    const a = Array.from({ length: PER_SECOND + 5 }, (_, i) => from(`203.0.113.1, 10.0.0.${i}`));
    const b = times(PER_SECOND, from('2001:db8::b, 203.0.113.1'));
    const statuses = await burst(t, [...a, ...b]);
    // Keyed on any other hop, each of A's requests would have had a budget of its own.
    expect(count(statuses.slice(0, a.length), 429)).toBeGreaterThanOrEqual(1);
    expect(statuses.slice(a.length)).toEqual(times(PER_SECOND, 200));
  });
});
