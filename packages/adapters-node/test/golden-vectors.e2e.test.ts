/**
 * The research's reference vectors (api-conventions 7.6 / Appendix A, protocol.md section 2:
 * "golden tests") sent as they are to a real venue over HTTP and the trading socket. Core checks
 * the digests and signatures; this pins that the service accepts what an integrator's viem or
 * ethers produced for the example domains, which the default configuration uses: every vector's
 * signature passes, and each request reaches its business outcome and spends its nonce.
 *
 * The venue's clock is set to the vectors' time: nonce base 1767225600000 (+0 to +6) and
 * deadline 1767225900 are inside their windows at 1767225600500.
 */
import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/engine/clock.js';
import { WsClient } from './support/client.js';
import { startTestVenue, type TestVenue } from './support/fixture.js';

interface Vector {
  readonly payload: string;
  readonly sig: string;
}
const A = JSON.parse(
  readFileSync(new URL('../../core/test/vectors/appendix-a.json', import.meta.url), 'utf8'),
) as {
  readonly signer: string;
  readonly authenticate: Vector;
  readonly structs: Readonly<Record<string, Vector>>;
};
const signature = (name: string): Vector => {
  const v = A.structs[name];
  if (v === undefined) throw new Error(`no vector ${name}`);
  return { sig: v.sig, payload: v.payload };
};
const SIGNER = A.signer.toLowerCase();
/** Half a second after the vectors' nonce base. */
const T0 = 1_767_225_600_500;

let t: TestVenue | undefined;
afterEach(async () => {
  await t?.close();
  t = undefined;
});

/** A venue at the vectors' time whose wallet (anvil key #0, the vectors' signer) is invited. */
async function venueAtVectorTime(): Promise<TestVenue> {
  const clock = new ManualClock(T0);
  const venue = await startTestVenue({ clock });
  t = venue;
  const w = venue.wallet(0);
  expect(w.address).toBe(SIGNER);
  const r = await w.referral(venue.venue.inviteCode!, 'golden-invite', clock.now());
  expect((await venue.api('POST', '/referral/apply', r.body, r.headers)).status).toBe(201);
  return venue;
}

describe('research reference vectors over the wire', () => {
  it('the Authenticate vector (personal_sign) authenticates; sent again it is a replay', async () => {
    const v = await venueAtVectorTime();
    const ws = await WsClient.connect(v.venue.ws);
    const auth = { type: 'authenticate', signature: A.authenticate };
    expect(await ws.request(auth)).toMatchObject({
      type: 'authenticateSuccess',
      account: SIGNER,
    });
    expect(await ws.request(auth)).toMatchObject({ type: 'error', code: 4002 });
    await ws.close();
  });

  it('the EIP-712 vectors pass their signature checks on REST and the trading socket', async () => {
    const v = await venueAtVectorTime();
    const post = (path: string, body: Record<string, unknown>) => v.api('POST', path, body);
    const faucet = await v.admin('POST', '/admin/faucet', { wallet: SIGNER, amount: '100' });
    expect(faucet.status).toBe(200);
    // Permit (token domain, token nonce 0) and Deposit: 100 into market 1's isolated margin.
    const deposit = {
      amount: '100',
      instrument: 'BTC-PERP',
      marginMode: 'Isolated',
      permitSignature: signature('Permit'),
      depositSignature: signature('Deposit'),
    };
    expect((await post('/margin/deposit', deposit)).body).toMatchObject({ status: 'Submitted' });
    const leverage = {
      leverage: 1000,
      instrument: 'BTC-PERP',
      marginMode: 'Isolated',
      signature: signature('UpdateLeverage'),
    };
    expect((await post('/update_leverage', leverage)).body).toMatchObject({ status: 'Submitted' });
    // Cross margin is empty: the withdrawal and the transfer are refused for the business reason,
    // which only a request whose signature, nonce and invite passed can reach.
    const withdrawal = {
      amount: '25',
      instrument: null,
      marginMode: 'Cross',
      signature: signature('Withdrawal'),
    };
    expect((await post('/margin/withdrawal', withdrawal)).body).toMatchObject({
      status: 'Rejected',
      code: 4100,
    });
    const transfer = {
      amount: '10',
      instrument: 'BTC-PERP',
      direction: 'crossToIsolated',
      signature: signature('MarginTransfer'),
    };
    expect((await post('/margin/transfer', transfer)).body).toMatchObject({
      status: 'Rejected',
      code: 4100,
    });
    // Each spent its nonce.
    for (const [path, body] of [
      ['/margin/deposit', deposit],
      ['/update_leverage', leverage],
      ['/margin/withdrawal', withdrawal],
      ['/margin/transfer', transfer],
    ] as const) {
      const again = await post(path, body);
      expect(again.status).toBe(400);
      expect(String(again.body.error)).toMatch(/^INVALID_NONCE: replayed/);
    }
    // The trading socket, authenticated with a nonce the vectors do not use.
    const ws = await WsClient.connect(v.venue.ws);
    const auth = await v.wallet(0).authenticate(BigInt(T0 + 100));
    expect(await ws.request({ type: 'authenticate', signature: auth })).toMatchObject({
      type: 'authenticateSuccess',
    });
    const order = await ws.request({ type: 'placeOrder', signature: signature('Order') });
    expect(order.type).toBe('error');
    expect(order.code).toBe(4100);
    for (const [type, name] of [
      ['cancelOrder', 'Cancel'],
      ['replaceOrder', 'Replace'],
    ] as const) {
      const r = await ws.request({ type, signature: signature(name) });
      expect(r).toMatchObject({ type: 'error', code: 4041 });
    }
    for (const [type, name] of [
      ['placeOrder', 'Order'],
      ['cancelOrder', 'Cancel'],
      ['replaceOrder', 'Replace'],
    ] as const) {
      const r = await ws.request({ type, signature: signature(name) });
      expect(r).toMatchObject({ type: 'error', code: 4002 });
    }
    await ws.close();
  });
});
