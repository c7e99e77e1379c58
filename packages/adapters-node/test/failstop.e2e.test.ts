/**
 * A journal that cannot persist stops the venue rather than acknowledging what is not durable:
 * the request that hit the failure gets the spec's transient answer (referral: 503 "Referral
 * service unavailable, please retry"; any other request 5002 LEDGER_UNAVAILABLE, HTTP 503 with
 * Retry-After; `authenticate` 5003 EXCHANGE_ACCOUNT_ERROR), nothing of it is applied, and the
 * venue closes itself and reports the fatal error. A journal that stalls makes a referral answer
 * 504 (timed out) instead, and one that cannot listen releases what it opened.
 */
import { MemoryJournal } from '@perp/adapters-memory';
import type { Command } from '@perp/core';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../src/index.js';
import { startVenue } from '../src/venue.js';
import { http, WsClient } from './support/client.js';
import { btc, limitOrder, px, startTestVenue } from './support/fixture.js';

/** Waits (bounded) until the venue reported its fatal error. */
async function fatalReported(read: () => unknown): Promise<unknown> {
  for (let i = 0; i < 100 && read() === undefined; i++)
    await new Promise((res) => setTimeout(res, 20));
  return read();
}

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

  it('answers a signed order on the trading socket with 5002 LEDGER_UNAVAILABLE before closing', async () => {
    const journal = new MemoryJournal();
    let fatal: unknown;
    const t = await startTestVenue({ journal, onFatal: (e) => (fatal = e) });
    const alice = t.wallet(0);
    await t.invite(alice);
    const a = await t.connect(alice);
    // Unfunded: the engine refuses it (4100), but that refusal consumes the nonce, so it must be
    // journaled, and the journal fails.
    const signature = await alice.sign('Order', limitOrder(true, px(65_000), btc(0.01)));
    const seqBefore = journal.lastSeq;
    journal.failNextAppend(new Error('disk full'));
    const answer = await a.request({ type: 'placeOrder', signature });
    expect(answer).toMatchObject({ type: 'error', code: 5002 });
    expect(String(answer.message)).toMatch(/^LEDGER_UNAVAILABLE: .*retry after a delay/);
    expect(journal.lastSeq).toBe(seqBefore);
    expect(String(await fatalReported(() => fatal))).toContain('disk full');
    await t.close().catch(() => {});
  });

  it('answers authenticate with 5003 EXCHANGE_ACCOUNT_ERROR when the account cannot be stored', async () => {
    const journal = new MemoryJournal();
    let fatal: unknown;
    const t = await startTestVenue({ journal, onFatal: (e) => (fatal = e) });
    const alice = t.wallet(0);
    await t.invite(alice);
    const ws = await WsClient.connect(t.venue.ws);
    const signature = await alice.authenticate();
    const seqBefore = journal.lastSeq;
    journal.failNextAppend(new Error('disk full'));
    const answer = await ws.request({ type: 'authenticate', signature });
    expect(answer).toMatchObject({ type: 'error', code: 5003 });
    expect(String(answer.message)).toMatch(/^EXCHANGE_ACCOUNT_ERROR: .*LEDGER_UNAVAILABLE/);
    expect(journal.lastSeq).toBe(seqBefore);
    expect(String(await fatalReported(() => fatal))).toContain('disk full');
    await ws.close().catch(() => {});
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

  it('finds the port taken before it replays the journal, not after', async () => {
    const first = await startTestVenue();
    const journal = new MemoryJournal();
    // A journal with records: the start would replay them before it listens.
    await journal.append([{ type: 'openAccount', account: first.wallet(0).address, time: 1 }]);
    let reads = 0;
    const read = journal.read.bind(journal);
    journal.read = (afterSeq?: number) => {
      reads++;
      return read(afterSeq);
    };
    const lines: string[] = [];
    await expect(
      startVenue({
        journal,
        port: first.venue.port,
        priceFeed: 'none',
        log: (l) => lines.push(l),
      }),
    ).rejects.toThrow(/EADDRINUSE|address already in use/);
    expect(reads).toBe(0);
    expect(lines.filter((l) => l.startsWith('replayed'))).toEqual([]);
    await first.close();
  });

  it('a referral the engine has is answered once durable, however long; one still queued answers 504 and is never applied', async () => {
    /** A journal whose appends wait while a gate is set (a disk that stalls). */
    class StallingJournal extends MemoryJournal {
      gate: Promise<void> | null = null;
      override async append(commands: readonly Command[]): Promise<number> {
        if (this.gate !== null) await this.gate;
        return super.append(commands);
      }
    }
    const journal = new StallingJournal();
    const limits = { ...DEFAULT_CONFIG.limits, referralTimeoutMs: 200 };
    const t = await startTestVenue({ journal, config: { ...DEFAULT_CONFIG, limits } });
    const alice = t.wallet(0);
    const access = async () =>
      (await t.api('GET', `/user/access-status/${alice.address}`)).body.hasAppAccess;
    let release: () => void = () => {};
    journal.gate = new Promise((r) => {
      release = r;
    });
    // The first application reaches the engine and waits for the stalled disk.
    const first = await alice.referral(t.venue.inviteCode!);
    const firstAnswer = t.api('POST', '/referral/apply', first.body, first.headers);
    // A second one of the same wallet waits behind it in the wallet's queue: 504, and the spec's
    // states table holds (a failure leaves no app access from it).
    const second = await alice.referral(t.venue.inviteCode!);
    const queued = await t.api('POST', '/referral/apply', second.body, second.headers);
    expect(queued).toMatchObject({
      status: 504,
      body: { error: 'Referral service timed out, please try again later' },
    });
    // Not durable, so not applied as far as anyone can see; the first is still unanswered.
    expect(await access()).toBe(false);
    let answered = false;
    void firstAnswer.then(() => {
      answered = true;
    });
    await new Promise((w) => setTimeout(w, 300));
    expect(answered).toBe(false);
    journal.gate = null;
    release();
    expect(await firstAnswer).toMatchObject({ status: 201, body: { kind: 'system' } });
    expect(await access()).toBe(true);
    // The 504'd application never reached the engine: its nonce is unused, so the same signed
    // request is now refused for the wallet's state (422), not as a replay (401).
    expect(await t.api('POST', '/referral/apply', second.body, second.headers)).toMatchObject({
      status: 422,
      body: { error: 'ALREADY_REFERRED' },
    });
    await t.close();
  });
});
