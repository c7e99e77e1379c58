/**
 * Two copies of one signed referral application that both pass the route's read-only replay
 * check (they wait in the wallet's queue behind another request of the wallet) reach the
 * engine, which takes the first and refuses the second as a replay: that refusal is still the
 * spec's 401 `Unauthorized: <reason>`, never a 400. Found by mutation: the mapping of the engine's 4002 to 401 was unpinned, because
 * without the race the route's own checks answer first.
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

import { startTestVenue, type TestVenue } from './support/fixture.js';

let t: TestVenue | undefined;
afterEach(async () => {
  openGate(gate);
  await t?.close();
  t = undefined;
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !condition(); i++) await sleep(5);
  expect(condition()).toBe(true);
}

describe('a referral application raced against itself', () => {
  it('one copy is 201, the other 401 replayed; one use of the code', async () => {
    t = await startTestVenue();
    const w = t.wallet(0);
    const code = t.venue.inviteCode!;
    const { headers, body } = await w.referral(code);
    // A withdrawal of the same wallet whose signature check is held occupies the wallet's
    // queue, so both copies pass the route's read-only replay check and wait behind it.
    gate.holdNext = true;
    const blocker = t.withdraw(w, '1');
    await until(() => gate.held.length === 1);
    const first = t.api('POST', '/referral/apply', body, headers);
    const second = t.api('POST', '/referral/apply', body, headers);
    await until(() => gate.started === 3);
    await sleep(100);
    openGate(gate);
    const answers = await Promise.all([first, second]);
    expect((await blocker).status).toBe(403);
    expect(answers.map((a) => a.status).sort()).toEqual([201, 401]);
    const refused = answers.find((a) => a.status === 401)!;
    expect(String(refused.body.error)).toMatch(/^Unauthorized: replayed nonce /);
    const codes = await t.admin('GET', '/admin/referral-codes');
    const record = (codes.body.codes as { code: string; uses: number }[]).find(
      (c) => c.code === code,
    );
    expect(record?.uses).toBe(1);
  });
});
