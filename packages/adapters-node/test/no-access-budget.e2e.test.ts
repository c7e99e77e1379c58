/**
 * The per-address budget of wallets without app access. A signed request the invite gate refuses
 * (and every referral application) consumes its nonce, so each is a journal record, and wallets
 * cost nothing to make: a security review journaled 400 records from 400 fresh keys' authenticate
 * messages on one socket, and guessed a two-character invite code in 830 applications. Beyond
 * `limits.noAccessRequestsPerSecondPerIp` / `...Per5MinutesPerIp` such requests from one address
 * are refused before the engine (4029/4035, REST 429 with Retry-After), journaling nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/index.js';
import { freshNonce, Wallet, WsClient } from './support/client.js';
import { startTestVenue, type TestVenue } from './support/fixture.js';

const key = (n: number): `0x${string}` => `0x${(0xbee000 + n).toString(16).padStart(64, '0')}`;

describe('signed requests of wallets without app access, per address', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        limits: {
          ...DEFAULT_CONFIG.limits,
          noAccessRequestsPerSecondPerIp: 2,
          noAccessRequestsPer5MinutesPerIp: 5,
        },
      },
    });
  });
  afterAll(async () => t.close());

  it('are refused before the engine beyond the budget, on the socket and on REST, journaling nothing', async () => {
    const ws = await WsClient.connect(t.venue.ws);
    const authenticate = async (n: number) =>
      ws.request({ type: 'authenticate', signature: await t.wallet(key(n)).authenticate() });
    const seq = async () => (await t.stateHash()).seq;
    // Two a second: the third is refused at once, and nothing of it reaches the journal.
    const before = await seq();
    expect(await authenticate(1)).toMatchObject({ type: 'error', code: 4015 });
    expect(await authenticate(2)).toMatchObject({ type: 'error', code: 4015 });
    const third = await authenticate(3);
    expect(third).toMatchObject({ type: 'error', code: 4029 });
    expect(String(third.message)).toMatch(/without app access, from this address/);
    expect(await seq()).toBe(before + 2);
    // Five in five minutes: after a second, three more pass, then REST is refused too.
    await new Promise((r) => setTimeout(r, 1_100));
    expect(await authenticate(4)).toMatchObject({ code: 4015 });
    expect(await authenticate(5)).toMatchObject({ code: 4015 });
    await new Promise((r) => setTimeout(r, 1_100));
    const fresh = t.wallet(key(6));
    const withdraw = async () =>
      t.api('POST', '/margin/withdrawal', {
        amount: '1',
        instrument: null,
        marginMode: 'Cross',
        signature: await fresh.sign('Withdrawal', {
          amount: 1_000_000n,
          market: 0,
          flags: 0,
          nonce: freshNonce(),
          deadline: Wallet.deadline(),
        }),
      });
    expect((await withdraw()).status).toBe(403);
    const spent = await seq();
    const refused = await withdraw();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(String(refused.body.error)).toMatch(
      /^SUSTAINED_RATE_LIMIT_EXCEEDED: .*without app access/,
    );
    // A referral application counts too: it is refused the same way, and applies nothing.
    const r = await t.wallet(key(7)).referral(t.venue.inviteCode!);
    const apply = await t.api('POST', '/referral/apply', r.body, r.headers);
    expect(apply.status).toBe(429);
    expect(await seq()).toBe(spent);
    await ws.close();
  });

  it('do not count the requests of wallets that have access', async () => {
    const v = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        limits: {
          ...DEFAULT_CONFIG.limits,
          noAccessRequestsPerSecondPerIp: 100,
          noAccessRequestsPer5MinutesPerIp: 2,
        },
      },
    });
    try {
      const alice = v.wallet(key(20));
      await v.invite(alice); // one: the application of a wallet without access yet
      // Refused 404 (no trading account: protocol.md 4), but past the gate: not counted.
      for (let i = 0; i < 4; i++) expect((await v.withdraw(alice, '1')).status).toBe(404);
      const ws = await WsClient.connect(v.venue.ws);
      const auth = async (n: number) =>
        ws.request({ type: 'authenticate', signature: await v.wallet(key(n)).authenticate() });
      expect(await auth(21)).toMatchObject({ code: 4015 }); // two
      expect(await auth(22)).toMatchObject({ code: 4035 });
      await ws.close();
    } finally {
      await v.close();
    }
  });
});
