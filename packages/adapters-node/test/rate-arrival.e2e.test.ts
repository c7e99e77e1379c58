/**
 * The per-wallet rate is measured when requests arrive, not when their turn in the wallet's
 * queue comes (protocol.md section 5: 20 per rolling second). A signature check held back, as
 * a slow verification worker would, makes the requests behind it reach the limiter together;
 * a client that sent them well within the rate must not be refused for that.
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
import { startTestVenue, type TestVenue } from './support/fixture.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

let t: TestVenue | undefined;
afterEach(async () => {
  openGate(gate);
  await t?.close();
  t = undefined;
});

describe('rate measured at arrival', () => {
  it('REST writes sent under 3 a second, held behind a slow check, all pass a limit of 4', async () => {
    t = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        limits: { ...DEFAULT_CONFIG.limits, walletRequestsPerSecond: 4 },
      },
    });
    const alice = t.wallet(0);
    await t.invite(alice);
    await t.fund(alice, '100');
    await sleep(1_100);
    gate.holdNext = true;
    const sent = [t.withdraw(alice, '1')];
    // Six more, 350 ms apart: no rolling second holds more than three arrivals.
    for (let i = 0; i < 6; i++) {
      await sleep(350);
      sent.push(t.withdraw(alice, '1'));
    }
    await sleep(100);
    expect(gate.held).toHaveLength(1);
    gate.held.shift()!();
    const answers = await Promise.all(sent);
    expect(answers.map((r) => [r.status, r.body.status])).toEqual(
      Array(7).fill([200, 'Submitted']),
    );
  });

  it('a burst is still refused over the limit, however fast the queue drains', async () => {
    t = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        limits: { ...DEFAULT_CONFIG.limits, walletRequestsPerSecond: 4 },
      },
    });
    const alice = t.wallet(0);
    await t.invite(alice);
    await t.fund(alice, '100');
    await sleep(1_100);
    const answers = await Promise.all(Array.from({ length: 6 }, () => t!.withdraw(alice, '1')));
    expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 429, 429]);
  });
});
