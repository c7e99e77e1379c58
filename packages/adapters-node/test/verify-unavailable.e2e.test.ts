/**
 * A signature check that could not run (a worker died or hung, the pool was full) is the venue's
 * failure, not the client's: REST answers 503 with `Retry-After` (the referral route with the
 * spec's `Referral service unavailable, please retry`), the WebSocket 5000 with `retryAfterMs`,
 * and the request consumed nothing, so the same signed request succeeds when sent again.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { openGate, type RecoveryGate, recoveryGate } from './support/recovery-gate.js';

const gate: RecoveryGate = recoveryGate();

vi.mock('../src/verify/pool.js', async (original) => {
  const mod = (await original()) as typeof import('../src/verify/pool.js');
  const { gatedRecovery } = await import('./support/recovery-gate.js');
  return {
    ...mod,
    createSignatureRecovery: (options: Parameters<typeof mod.createSignatureRecovery>[0]) =>
      gatedRecovery(mod.createSignatureRecovery(options), gate),
  };
});

import { btc, cloid, limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

let t: TestVenue | undefined;
afterEach(async () => {
  openGate(gate);
  await t?.close();
  t = undefined;
});

describe('a signature check that could not run', () => {
  it('referral: 503 with the spec text and Retry-After; the same request then succeeds', async () => {
    t = await startTestVenue();
    const w = t.wallet(0);
    const code = t.venue.inviteCode;
    if (code === null) throw new Error('no bootstrap invite code');
    const { headers, body } = await w.referral(code);
    gate.fail = true;
    const refused = await t.api('POST', '/referral/apply', body, headers);
    expect(refused.status).toBe(503);
    expect(refused.body).toEqual({ error: 'Referral service unavailable, please retry' });
    expect(refused.headers.get('retry-after')).toBe('1');
    gate.fail = false;
    const accepted = await t.api('POST', '/referral/apply', body, headers);
    expect(accepted.status).toBe(201);
  });

  it('signed REST write: 503 with Retry-After, nothing consumed', async () => {
    t = await startTestVenue();
    const w = t.wallet(0);
    await t.invite(w);
    await t.fund(w, '1000');
    gate.fail = true;
    const refused = await t.withdraw(w, '10');
    expect(refused.status).toBe(503);
    expect(String(refused.body.error)).toContain('retry the request');
    expect(refused.headers.get('retry-after')).toBe('1');
    gate.fail = false;
    expect((await t.withdraw(w, '10')).status).toBe(200);
  });

  it('trading socket: 5000 with retryAfterMs; the same signed order is then accepted', async () => {
    t = await startTestVenue();
    await t.oracle({ 'BTC-PERP': '60000' });
    const w = t.wallet(0);
    await t.invite(w);
    await t.fund(w, '100000');
    const ws = await t.connect(w);
    const signature = await w.sign(
      'Order',
      limitOrder(true, px(50_000), btc(0.01), { cloid: cloid(1) }),
    );
    gate.fail = true;
    const first = ws.waitFor((m) => m.id === 'a', 10_000);
    ws.ws.send(JSON.stringify({ type: 'placeOrder', id: 'a', signature }));
    expect(await first).toMatchObject({ type: 'error', code: 5000, retryAfterMs: 1000 });
    gate.fail = false;
    const second = ws.waitFor((m) => m.id === 'b', 10_000);
    ws.ws.send(JSON.stringify({ type: 'placeOrder', id: 'b', signature }));
    expect(await second).toMatchObject({ type: 'orderAck' });
  });
});
