/**
 * A stale or replayed signed request costs its wallet nothing (protocol.md section 3: a request
 * that fails the window changes nothing). Anyone holding an old signed message (a withdrawal
 * relayed on chain, an authenticate text, a referral application) can resend it; were it counted
 * against the wallet's rate budgets before the nonce check, resending would lock the owner out.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/index.js';
import { freshNonce, Wallet, WsClient } from './support/client.js';
import { startTestVenue, type TestVenue, usd } from './support/fixture.js';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('replayed and stale signed requests do not spend the wallet rate budget', () => {
  let t: TestVenue;
  beforeAll(async () => {
    t = await startTestVenue({
      config: {
        ...DEFAULT_CONFIG,
        // A small sustained budget, so a few dozen charged replays would exhaust it.
        limits: { ...DEFAULT_CONFIG.limits, signedRequestsPer5Minutes: 30 },
      },
    });
  });
  afterAll(async () => t.close());

  it('a used withdrawal resent 25 times at once: every copy 400 replayed, none 429, the owner unaffected', async () => {
    const owner = t.wallet(0);
    await t.invite(owner);
    await t.fund(owner, '100');
    const signature = await owner.sign('Withdrawal', {
      amount: usd(1),
      market: 0,
      flags: 0,
      nonce: freshNonce(),
      deadline: Wallet.deadline(),
    });
    const body = { amount: '1', instrument: null, marginMode: 'Cross', signature };
    expect((await t.api('POST', '/margin/withdrawal', body)).body.status).toBe('Submitted');
    const before = await t.stateHash();
    const copies = await Promise.all(
      Array.from({ length: 25 }, () => t.api('POST', '/margin/withdrawal', body)),
    );
    expect(new Set(copies.map((r) => r.status))).toEqual(new Set([400]));
    expect(copies[0]!.body.error).toMatch(/^INVALID_NONCE: replayed/);
    expect((await t.stateHash()).hash).toBe(before.hash);
    const own = await t.withdraw(owner, '1');
    expect([own.status, own.body.status]).toEqual([200, 'Submitted']);
  });

  it('a withdrawal past its deadline resent 40 times leaves the sustained budget (30) untouched', async () => {
    const owner = t.wallet(1);
    await t.invite(owner);
    await t.fund(owner, '100');
    const signature = await owner.sign('Withdrawal', {
      amount: usd(1),
      market: 0,
      flags: 0,
      nonce: freshNonce() - 3_600_000n,
      deadline: BigInt(Math.floor(Date.now() / 1000) - 3000),
    });
    const body = { amount: '1', instrument: null, marginMode: 'Cross', signature };
    for (let round = 0; round < 2; round++) {
      const copies = await Promise.all(
        Array.from({ length: 20 }, () => t.api('POST', '/margin/withdrawal', body)),
      );
      expect(new Set(copies.map((r) => r.status))).toEqual(new Set([400]));
      expect(copies[0]!.body.error).toMatch(/^INVALID_NONCE: deadline passed/);
      await pause(1100);
    }
    const own = await t.withdraw(owner, '1');
    expect([own.status, own.body.status]).toEqual([200, 'Submitted']);
  });

  it('an hour-old authenticate resent 22 times on a stranger socket: 4002 each, the owner unaffected', async () => {
    const owner = t.wallet(2);
    await t.invite(owner);
    await t.fund(owner, '100');
    const stale = await owner.authenticate(BigInt(Date.now() - 3_600_000));
    const stranger = await WsClient.connect(t.venue.ws);
    const replies = await Promise.all(
      Array.from({ length: 22 }, () =>
        stranger.request({ type: 'authenticate', signature: stale }),
      ),
    );
    await stranger.close();
    // The stranger's own address is limited per second before any signature work (4029); none
    // of the answers that reached the wallet's checks is a rate refusal of the wallet.
    const codes = replies.map((r) => r.code as number);
    expect(codes.filter((c) => c !== 4029).length).toBeGreaterThan(0);
    for (const r of replies) {
      if (r.code === 4029) expect(String(r.message)).not.toMatch(new RegExp(owner.address));
      else expect(r.code).toBe(4002);
    }
    const own = await t.withdraw(owner, '1');
    expect([own.status, own.body.status]).toEqual([200, 'Submitted']);
  });

  it('an applied referral resent 25 times: 401 each, none 429, the applicant unaffected', async () => {
    const applicant = t.wallet(3);
    const made = await t.admin('POST', '/admin/referral-codes', { kind: 'system', maxUses: 5 });
    const r = await applicant.referral(made.body.code as string);
    expect((await t.api('POST', '/referral/apply', r.body, r.headers)).status).toBe(201);
    const copies = await Promise.all(
      Array.from({ length: 25 }, () => t.api('POST', '/referral/apply', r.body, r.headers)),
    );
    expect(new Set(copies.map((c) => c.status))).toEqual(new Set([401]));
    expect(copies[0]!.body.error).toMatch(/^Unauthorized: replayed nonce/);
    await t.fund(applicant, '100');
    const own = await t.withdraw(applicant, '1');
    expect([own.status, own.body.status]).toEqual([200, 'Submitted']);
  });
});
