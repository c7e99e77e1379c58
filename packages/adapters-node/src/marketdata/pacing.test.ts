import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { DEFAULT_PACING, deliveryAction, Pacer } from './pacing.js';

describe('deliveryAction', () => {
  const caps = { softBufferBytes: 1_024, hardBufferBytes: 4_096 };
  it('sends below the soft cap, skips snapshots above it, terminates above the hard cap', () => {
    const table: [number, boolean, string][] = [
      [0, true, 'send'],
      [1_024, true, 'send'],
      [1_025, true, 'drop'],
      [4_096, true, 'drop'],
      [4_097, true, 'terminate'],
      [0, false, 'send'],
      [1_025, false, 'send'],
      [4_096, false, 'send'],
      [4_097, false, 'terminate'],
    ];
    for (const [buffered, droppable, action] of table) {
      expect(deliveryAction(buffered, droppable, caps)).toBe(action);
    }
  });

  it('defaults follow research 6.6', () => {
    expect(DEFAULT_PACING).toEqual({
      tickerMinIntervalMs: 1_000,
      tickerKeepAliveMs: 10_000,
      orderbookMinIntervalMs: 100,
      orderbookKeepAliveMs: 5_000,
      candleMinIntervalMs: 250,
      housekeepingMs: 250,
    });
  });
});

describe('Pacer', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('flushes at once after a quiet period and merges a burst into one trailing flush', () => {
    const flushes: number[] = [];
    const pacer = new Pacer(100, Date.now, () => {
      flushes.push(Date.now());
      return true;
    });
    const start = Date.now();
    pacer.request();
    expect(flushes).toEqual([start]);
    for (let i = 0; i < 50; i++) {
      vi.advanceTimersByTime(1);
      pacer.request();
    }
    expect(pacer.pending).toBe(true);
    vi.advanceTimersByTime(49);
    expect(flushes).toEqual([start]);
    vi.advanceTimersByTime(1);
    expect(flushes).toEqual([start, start + 100]);
    expect(pacer.pending).toBe(false);
    vi.advanceTimersByTime(1_000);
    expect(flushes).toHaveLength(2);
  });

  it('a flush that sent nothing does not start the interval', () => {
    let changed = false;
    let sends = 0;
    const pacer = new Pacer(100, Date.now, () => {
      if (!changed) return false;
      sends++;
      return true;
    });
    pacer.request();
    changed = true;
    pacer.request();
    expect(sends).toBe(1);
  });

  it('sent() restarts the interval and cancel() drops a scheduled flush', () => {
    let sends = 0;
    const pacer = new Pacer(100, Date.now, () => {
      sends++;
      return true;
    });
    pacer.sent();
    pacer.request();
    expect(sends).toBe(0);
    pacer.cancel();
    expect(pacer.pending).toBe(false);
    vi.advanceTimersByTime(500);
    expect(sends).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});
