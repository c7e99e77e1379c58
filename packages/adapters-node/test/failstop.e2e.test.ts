/**
 * A journal that cannot persist stops the venue rather than acknowledging what is not durable:
 * the request that hit the failure gets the spec's transient answer (referral: 503 "Referral
 * service unavailable, please retry"; a signed write: 5xx), nothing of it is applied, and the
 * venue closes itself and reports the fatal error.
 */
import { MemoryJournal } from '@perp/adapters-memory';
import { describe, expect, it } from 'vitest';
import { startVenue } from '../src/venue.js';
import { http } from './support/client.js';
import { startTestVenue } from './support/fixture.js';

describe('fail-stop on a journal failure', () => {
  it('answers 503 on the referral that could not be made durable and closes the venue', async () => {
    const journal = new MemoryJournal();
    let fatal: unknown;
    const t = await startTestVenue({ journal, onFatal: (e) => (fatal = e) });
    const alice = t.wallet(0);
    const seqBefore = journal.lastSeq;
    journal.failNextAppend(new Error('disk full'));
    const r = await alice.referral(t.venue.inviteCode!);
    const res = await t.api('POST', '/referral/apply', r.body, r.headers);
    expect(res).toMatchObject({
      status: 503,
      body: { error: 'Referral service unavailable, please retry' },
    });
    // Nothing was written, and the venue stopped itself instead of going on from unpersisted state.
    expect(journal.lastSeq).toBe(seqBefore);
    for (let i = 0; i < 100 && fatal === undefined; i++)
      await new Promise((res2) => setTimeout(res2, 20));
    expect(String(fatal)).toContain('disk full');
    await expect(http('GET', `${t.rest}/time`)).rejects.toThrow();
    await t.close().catch(() => {});
  });

  it('a venue that cannot listen (port taken) releases what it opened and rejects', async () => {
    const first = await startTestVenue();
    const journal = new MemoryJournal();
    let closed = 0;
    const close = journal.close.bind(journal);
    journal.close = async () => {
      closed++;
      await close();
    };
    await expect(
      startVenue({ journal, port: first.venue.port, priceFeed: 'none', log: () => {} }),
    ).rejects.toThrow(/EADDRINUSE|address already in use/);
    expect(closed).toBe(1);
    await first.close();
  });
});
