/**
 * Invite codes the venue mints itself are not guessable (interface-spec "The platform is
 * invite-gated"): the bootstrap code of a new venue and `POST /admin/referral-codes` without
 * `code` draw from the CSPRNG, not from the core's public counter formula, and the journal
 * replays the drawn codes exactly.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generatedCode } from '@perp/core';
import { afterAll, describe, expect, it } from 'vitest';
import { createRandomInviteCode, randomInviteCode } from '../src/http/invite-codes.js';
import { startTestVenue, type TestVenue } from './support/fixture.js';

/** The first codes the deterministic formula gives: what anyone could compute. */
const PREDICTABLE = new Set(Array.from({ length: 100 }, (_, i) => generatedCode(i + 1)));

describe('invite codes', () => {
  const dirs: string[] = [];
  const venues: TestVenue[] = [];
  afterAll(async () => {
    for (const v of venues) await v.close().catch(() => {});
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });
  const start = async (dataDir: string | null = null) => {
    const t = await startTestVenue({ dataDir });
    venues.push(t);
    return t;
  };

  it('gives every new venue its own unpredictable bootstrap code', async () => {
    const a = await start();
    const b = await start();
    for (const t of [a, b]) {
      expect(t.venue.inviteCode).toMatch(/^[A-Z0-9]{7}$/);
      expect(PREDICTABLE.has(t.venue.inviteCode!)).toBe(false);
    }
    expect(a.venue.inviteCode).not.toBe(b.venue.inviteCode);
    // The bootstrap code admits wallets as before.
    await a.invite(a.wallet(0));
  });

  it('draws POST /admin/referral-codes without code at random, and replays it after a restart', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'perp-invites-'));
    dirs.push(dir);
    const t = await start(dir);
    const drawn: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await t.admin('POST', '/admin/referral-codes', { kind: 'system', maxUses: 3 });
      expect(r.status).toBe(200);
      drawn.push(r.body.code as string);
    }
    for (const code of drawn) {
      expect(code).toMatch(/^[A-Z0-9]{7}$/);
      expect(PREDICTABLE.has(code)).toBe(false);
    }
    expect(new Set([...drawn, t.venue.inviteCode]).size).toBe(6);
    // An explicit code is still taken as given.
    const given = await t.admin('POST', '/admin/referral-codes', {
      kind: 'system',
      maxUses: 1,
      code: 'GIVEN-1',
    });
    expect(given.body.code).toBe('GIVEN-1');
    const listed = (await t.admin('GET', '/admin/referral-codes')).body;
    const hash = await t.stateHash();
    await t.close();

    const again = await start(dir);
    expect(again.venue.inviteCode).toBeNull();
    expect((await again.admin('GET', '/admin/referral-codes')).body).toEqual(listed);
    expect(await again.stateHash()).toEqual(hash);
  });

  it('draws again when the drawn code is taken', async () => {
    const t = await start();
    const host = t.venue.context.host;
    await t.admin('POST', '/admin/referral-codes', { kind: 'system', maxUses: 1, code: 'TAKEN00' });
    const draws = ['TAKEN00', t.venue.inviteCode!, 'FRESH00'];
    const r = await createRandomInviteCode(host, { kind: 'system', maxUses: 2 }, () => {
      const next = draws.shift();
      if (next === undefined) throw new Error('drew too often');
      return next;
    });
    expect(r.outcome.ok && r.outcome.kind === 'referralCode' ? r.outcome.code.code : '').toBe(
      'FRESH00',
    );
    expect(host.state.referralCodes.get('TAKEN00')?.maxUses).toBe(1);
    // Any other refusal is returned, not retried.
    const bad = await createRandomInviteCode(host, { kind: 'system', maxUses: 0 });
    expect(bad.outcome.ok).toBe(false);
  });

  it('draws uniformly over [A-Z0-9]', () => {
    const counts = new Map<string, number>();
    for (let i = 0; i < 2_000; i++) {
      for (const c of randomInviteCode()) counts.set(c, (counts.get(c) ?? 0) + 1);
    }
    expect(counts.size).toBe(36);
    // 14,000 characters, 389 expected per character; a fair draw stays far inside these bounds.
    for (const n of counts.values()) expect(n).toBeGreaterThan(250);
    for (const n of counts.values()) expect(n).toBeLessThan(550);
  });
});
