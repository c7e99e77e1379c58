/**
 * After a restart from a snapshot, the market-data service is created before the journal's tail
 * is replayed (venue.ts): the candles it seeds must start at the snapshot's time, so the tail's
 * trades land in their own minutes, not in the minute of the restart.
 */
import type { Command, JournalRecord, JournalStore } from '@perp/core';
import { BTC_SETTINGS, T0, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';
import { ManualClock } from '../engine/clock.js';
import { EngineHost } from '../engine/host.js';
import { createMarketDataService } from './service.js';

class NullJournal implements JournalStore {
  lastSeq = 0;
  async append(c: readonly Command[]): Promise<number> {
    this.lastSeq += c.length;
    return this.lastSeq;
  }
  async *read(): AsyncIterable<JournalRecord> {}
  async close(): Promise<void> {}
}

const M = 60_000;

describe('restart from a snapshot: candles of the tail replay', () => {
  it('keep their own minutes (durability.md: candles start at the snapshot)', async () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    const [a, b] = [wallet(1), wallet(2)];
    for (const w of [a, b]) {
      v.open(w);
      v.fund(w, '1000000');
    }
    v.oracle({ 'BTC-PERP': '65000' });
    v.place(a, 'BTC-PERP', { side: 'Sell', qty: '0.1', price: '65000' });
    v.place(b, 'BTC-PERP', { side: 'Buy', qty: '0.1', price: '65000' });
    // --- snapshot taken here ---
    const snapshotState = v.state;
    const from = v.log.length;
    // Tail: two trades, at T0+5 min and T0+10 min.
    v.run({ type: 'tick', time: T0 + 5 * M });
    v.place(a, 'BTC-PERP', { side: 'Sell', qty: '0.1', price: '65100' });
    v.place(b, 'BTC-PERP', { side: 'Buy', qty: '0.1', price: '65100' });
    v.run({ type: 'tick', time: T0 + 10 * M });
    v.place(a, 'BTC-PERP', { side: 'Sell', qty: '0.1', price: '65200' });
    v.place(b, 'BTC-PERP', { side: 'Buy', qty: '0.1', price: '65200' });
    const tail = v.log.slice(from);

    // Restart one hour later, as venue.ts does: host on the snapshot state, market data
    // created before the tail replay, then the replay.
    const clock = new ManualClock(T0 + 60 * M);
    const host = new EngineHost({ state: snapshotState, journal: new NullJournal(), clock });
    const md = createMarketDataService({ host, now: () => clock.now() });
    host.replay(tail);
    const candles = md.candles('BTC-PERP', '1m')!.filter((c) => c.trades > 0);
    await md.close();
    expect(candles.map((c) => [c.openTime - T0, c.close, c.trades])).toEqual([
      [5 * M, '65100', 1],
      [10 * M, '65200', 1],
    ]);
  });
});
