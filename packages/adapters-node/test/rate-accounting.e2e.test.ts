/**
 * What counts against which rate budget (protocol.md section 5), over real sockets on 127.0.0.1:
 * a refused request is still a request, so malformed messages and bodies count like any other,
 * against the connection's wallet once authenticated and against the client address before.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, type VenueConfig } from '../src/index.js';
import { type Msg, WsClient } from './support/client.js';
import { startTestVenue, type TestVenue } from './support/fixture.js';

function withLimits(limits: Partial<VenueConfig['limits']>): VenueConfig {
  return { ...DEFAULT_CONFIG, limits: { ...DEFAULT_CONFIG.limits, ...limits } };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sends `frames` at once and collects one answer each (errors carry no id here). */
async function burst(c: WsClient, frames: readonly (string | Buffer)[]): Promise<Msg[]> {
  const from = c.inbox.length;
  for (const f of frames) c.ws.send(f);
  const deadline = Date.now() + 5_000;
  while (c.inbox.length - from < frames.length && Date.now() < deadline) await sleep(10);
  return c.inbox.slice(from);
}

let t: TestVenue | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

describe('malformed trading-socket messages count against the rate', () => {
  it('before authenticate: against the address, 4029 beyond its budget', async () => {
    t = await startTestVenue({ config: withLimits({ publicReadsPerSecond: 10 }) });
    const c = await WsClient.connect(t.venue.ws);
    // The fixture's own reads (GET /network) age out of the address's window.
    await sleep(1_100);
    const frames = [
      ...Array.from({ length: 5 }, () => '{bad'),
      ...Array.from({ length: 4 }, () => '[1]'),
      ...Array.from({ length: 4 }, () => Buffer.from('binary')),
      ...Array.from({ length: 3 }, () => JSON.stringify({ type: 'ping', id: '!' })),
    ];
    const answers = await burst(c, frames);
    expect(answers).toHaveLength(16);
    expect(answers.slice(0, 10).map((m) => m.code)).toEqual(Array(10).fill(4000));
    for (const m of answers.slice(10)) {
      expect(m).toMatchObject({ type: 'error', code: 4029, retryAfterMs: expect.any(Number) });
      expect(m.retryAfterMs as number).toBeGreaterThan(0);
      expect(m.retryAfterMs as number).toBeLessThanOrEqual(1_000);
    }
    // A well-formed message finds the budget spent by the malformed ones.
    expect(await c.request({ type: 'ping' })).toMatchObject({ code: 4029 });
    expect(c.closed).toBeNull();
    await c.close();
  });

  it('once authenticated: against the wallet, shared with its REST writes', async () => {
    t = await startTestVenue({ config: withLimits({ walletRequestsPerSecond: 5 }) });
    const alice = t.wallet(0);
    await t.invite(alice);
    const c = await t.connect(alice);
    await sleep(1_100);
    const answers = await burst(c, [
      '{bad',
      '[1]',
      Buffer.from('binary'),
      JSON.stringify({ type: 'ping', id: '!' }),
      '"text"',
      '{bad',
      '[2]',
    ]);
    expect(answers.map((m) => m.code)).toEqual([4000, 4000, 4000, 4000, 4000, 4029, 4029]);
    // The wallet's budget is spent, on REST too.
    const rest = await t.withdraw(alice, '1');
    expect(rest.status).toBe(429);
    expect(rest.headers.get('retry-after')).toBe('1');
  });
});

describe('malformed REST writes count against the address', () => {
  it('bad JSON, too deep JSON and a wrong content type: 400 within the budget, then 429', async () => {
    t = await startTestVenue({ config: withLimits({ publicReadsPerSecond: 10 }) });
    await sleep(1_100);
    const post = (path: string, body: string, type = 'application/json') =>
      fetch(`${t!.rest}${path}`, { method: 'POST', headers: { 'content-type': type }, body });
    const sent = [
      ...Array.from({ length: 4 }, () => post('/margin/withdrawal', '{bad')),
      ...Array.from({ length: 4 }, () => post('/margin/transfer', '['.repeat(40))),
      ...Array.from({ length: 4 }, () => post('/update_leverage', '{}', 'text/plain')),
      ...Array.from({ length: 3 }, () => post('/referral/apply', '{bad')),
    ];
    const answers = await Promise.all(sent);
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses).toEqual([...Array(10).fill(400), ...Array(5).fill(429)]);
    for (const r of answers.filter((a) => a.status === 429))
      expect(r.headers.get('retry-after')).toBe('1');
    // The address's public reads share that budget.
    expect((await fetch(`${t.rest}/time`)).status).toBe(429);
  });
});
