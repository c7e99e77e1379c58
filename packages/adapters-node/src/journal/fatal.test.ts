/**
 * A failed journal fsync in a running venue (reliability-anchors 1.7, 5.4 F6): the write is not
 * acknowledged, the venue stops accepting work and closes itself, and `onFatal` runs (the CLI
 * exits with status 70 there). Nothing is retried.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { startVenue } from '../venue.js';
import { FileJournal, type JournalFs, nodeJournalFs } from './file-journal.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('fsync failure in a running venue', () => {
  it('refuses the write, closes the venue and calls onFatal once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'perp-fatal-'));
    dirs.push(dir);
    let failing = false;
    let syncsAfterFailure = 0;
    const fs: JournalFs = {
      write: (fd, data) => nodeJournalFs.write(fd, data),
      async sync(fd) {
        if (failing) {
          syncsAfterFailure++;
          throw Object.assign(new Error('EIO: i/o error, fdatasync'), { code: 'EIO' });
        }
        await nodeJournalFs.sync(fd);
      },
    };
    const lines: string[] = [];
    const fatal: unknown[] = [];
    let closed!: () => void;
    const fatalDone = new Promise<void>((r) => {
      closed = r;
    });
    const venue = await startVenue({
      dataDir: dir,
      journal: FileJournal.open(join(dir, 'journal.log'), { fs }),
      port: 0,
      priceFeed: 'none',
      log: (l) => lines.push(l),
      onFatal: (e) => {
        fatal.push(e);
        closed();
      },
    });
    const auth = {
      authorization: `Bearer ${venue.adminToken}`,
      'content-type': 'application/json',
    };
    const ok = await fetch(`${venue.rest}/admin/oracle`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ prices: { 'BTC-PERP': '65000' } }),
    });
    expect(ok.status).toBe(200);
    const seqBefore = venue.context.host.journalSeq;

    failing = true;
    const res = await fetch(`${venue.rest}/admin/oracle`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ prices: { 'BTC-PERP': '65100' } }),
    });
    // The spec's 5002 answer: 503, retry after a delay (the venue comes back from its data dir).
    expect(res.status).toBe(503);
    expect(res.headers.get('retry-after')).toBe('5');
    expect(((await res.json()) as { error: string }).error).toMatch(/^LEDGER_UNAVAILABLE: /);
    await fatalDone;
    expect(fatal).toHaveLength(1);
    expect(String(fatal[0])).toContain('EIO');
    expect(
      lines.some((l) => l.startsWith('FATAL: the engine stopped and acknowledges nothing more')),
    ).toBe(true);
    expect(venue.context.host.failed).toBe(true);
    expect(venue.context.host.journalSeq).toBe(seqBefore);
    // The failed fsync was tried once, never again.
    expect(syncsAfterFailure).toBe(1);
    await expect(venue.context.host.submit({ type: 'tick' })).rejects.toThrow('LEDGER_UNAVAILABLE');
    // The venue closed itself: it no longer answers.
    await expect(fetch(`${venue.rest}/time`)).rejects.toThrow();
  });
});
