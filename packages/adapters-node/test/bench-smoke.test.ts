/**
 * Smoke test of the service benchmarks (`bench/ws-orders.mjs`, `bench/md-fanout.mjs`): each runs
 * once in a tiny configuration against the built `dist/` and its counts must add up. No timing
 * is asserted; the figures of a run this small mean nothing.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bench = (name: string) => fileURLToPath(new URL(`../bench/${name}`, import.meta.url));

interface Phase {
  sent: number;
  acked: number;
  errors: Record<string, unknown>;
  reports: Record<string, number>;
}
interface WsOrdersResult {
  runs: { journal: string; saturation: Phase; halfLoad: Phase | null }[];
  anchor: { nobleRecoverPerSecond: number };
}
interface MdFanoutResult {
  service: {
    ready: { everyOneHasSnapshots: boolean; snapshotCounts: Record<string, number> };
    errorCount: number;
    total: number;
  };
  orders: Phase;
  anchor: { total: number; subsWithNone: number };
}

function runJson<T>(script: string, args: string[]): Promise<T> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [bench(script), ...args, '--json'],
      { timeout: 90_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error) return reject(new Error(`${script} failed: ${error.message}\n${stderr}`));
        const last = stdout.trim().split('\n').pop() ?? '';
        resolve(JSON.parse(last) as T);
      },
    );
  });
}

describe('service benchmarks (tiny configurations)', () => {
  it('ws-orders: every signed order sent is acknowledged, in memory and on disk', async () => {
    const r = await runJson<WsOrdersResult>('ws-orders.mjs', [
      '--wallets',
      '2',
      '--orders',
      '20',
      '--journal',
      'both',
      '--half-load-secs',
      '0',
      '--anchor-ms',
      '50',
      '--anchor-rounds',
      '1',
    ]);
    expect(r.runs.map((run) => run.journal)).toEqual(['memory', 'disk']);
    for (const run of r.runs) {
      const s = run.saturation;
      expect(s.sent).toBe(40);
      expect(s.acked).toBe(s.sent);
      expect(s.errors).toEqual({});
      expect(s.reports.OrderAccepted).toBe(s.acked);
      expect(run.halfLoad).toBeNull();
    }
    expect(r.anchor.nobleRecoverPerSecond).toBeGreaterThan(0);
  });

  it('md-fanout: every subscriber gets its snapshots while orders flow; the raw anchor delivers', async () => {
    const subscribers = 20;
    const r = await runJson<MdFanoutResult>('md-fanout.mjs', [
      '--subscribers',
      String(subscribers),
      '--wallets',
      '2',
      '--order-rate',
      '20',
      '--baseline-secs',
      '0.5',
      '--measure-secs',
      '1',
      '--order-slack-secs',
      '5',
    ]);
    expect(r.service.ready.everyOneHasSnapshots).toBe(true);
    expect(r.service.ready.snapshotCounts).toEqual({
      orderbook: subscribers,
      tickers: subscribers,
    });
    expect(r.service.errorCount).toBe(0);
    expect(r.service.total).toBeGreaterThan(0);
    expect(r.orders.acked).toBe(r.orders.sent);
    expect(r.orders.errors).toEqual({});
    expect(r.anchor.total).toBeGreaterThan(0);
    expect(r.anchor.subsWithNone).toBe(0);
  });
});
