/**
 * Requests of one wallet reach the engine in arrival order across connections (protocol.md
 * section 5), however long each signature check takes. The signature recovery is wrapped so the
 * test can hold one check back, as a slow worker would; the engine's order ids show the order in
 * which the requests were applied.
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

import { DEFAULT_CONFIG } from '../src/index.js';
import type { Wallet, WsClient } from './support/client.js';
import { btc, cloid, limitOrder, px, startTestVenue, type TestVenue } from './support/fixture.js';

let t: TestVenue | undefined;
afterEach(async () => {
  openGate(gate);
  await t?.close();
  t = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function venueWithTwoWallets(verifyWorkers: number) {
  t = await startTestVenue({ config: { ...DEFAULT_CONFIG, verifyWorkers } });
  await t.oracle({ 'BTC-PERP': '60000' });
  const a = t.wallet(0);
  const b = t.wallet(1);
  for (const w of [a, b]) {
    await t.invite(w);
    await t.fund(w, '100000');
  }
  return { a, b };
}

/** Sends a signed resting buy; resolves with the engine's order id from the ack. */
async function place(ws: WsClient, wallet: Wallet, n: number): Promise<bigint> {
  const signature = await wallet.sign(
    'Order',
    limitOrder(true, px(50_000 + n), btc(0.01), { cloid: cloid(n) }),
  );
  const id = `o${n}`;
  const answer = ws.waitFor((m) => m.id === id, 10_000);
  ws.ws.send(JSON.stringify({ type: 'placeOrder', id, signature }));
  const m = await answer;
  expect(m.type).toBe('orderAck');
  return BigInt((m.order as { orderId: string }).orderId);
}

describe.each([0, 1])('with %i verification workers', (workers) => {
  it('a later request on another socket of the wallet waits for the earlier ones', async () => {
    const { a } = await venueWithTwoWallets(workers);
    const s1 = await t!.connect(a);
    const s2 = await t!.connect(a);
    gate.holdNext = true;
    const first = place(s1, a, 1); // its signature check is held back
    await sleep(30);
    const second = place(s1, a, 2);
    await sleep(150);
    const third = place(s2, a, 3); // arrives last, on the other socket
    await sleep(150);
    gate.held.shift()!();
    const ids = await Promise.all([first, second, third]);
    expect(ids[0]! < ids[1]! && ids[1]! < ids[2]!).toBe(true);
  });

  it('a slow check does not hold the checks of the requests behind it on its socket', async () => {
    const { a } = await venueWithTwoWallets(workers);
    const s1 = await t!.connect(a);
    gate.holdNext = true;
    const first = place(s1, a, 1);
    await sleep(30);
    const startedBefore = gate.started;
    const second = place(s1, a, 2);
    await sleep(150);
    // The second check ran while the first was held; the engine still applies them in order.
    expect(gate.started - startedBefore).toBe(1);
    gate.held.shift()!();
    const [id1, id2] = await Promise.all([first, second]);
    expect(id1 < id2).toBe(true);
  });

  it('another wallet is not held behind a slow check', async () => {
    const { a, b } = await venueWithTwoWallets(workers);
    const sa = await t!.connect(a);
    const sb = await t!.connect(b);
    gate.holdNext = true;
    const slow = place(sa, a, 1);
    await sleep(30);
    const other = await place(sb, b, 2);
    gate.held.shift()!();
    expect(other < (await slow)).toBe(true);
  });
});
