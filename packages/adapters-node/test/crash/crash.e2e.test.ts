/**
 * Kill -9 under load, restart, reconcile (reliability-anchors 5.4 F1, F8, F10, F11; 5.6). The suite
 * runs a short version; `pnpm soak` runs hundreds of cycles. Environment: `CRASH_CYCLES`
 * (default 5), `CRASH_SEED` (default: random, printed), `CRASH_KEEP=1` keeps the data directory.
 */
import { describe, expect, it } from 'vitest';
import { runCrashHarness } from './harness.js';

const cycles = Number(process.env.CRASH_CYCLES ?? 5);
const seed = Number(process.env.CRASH_SEED ?? Math.floor(Math.random() * 2 ** 31));

describe('crash harness', () => {
  it(
    `survives ${cycles} SIGKILLs under signed load with nothing lost, duplicated or half-applied (seed ${seed})`,
    async () => {
      const summary = await runCrashHarness({
        cycles,
        seed,
        keep: process.env.CRASH_KEEP === '1',
        log: (line) => {
          if (process.env.CRASH_VERBOSE === '1') console.log(line);
        },
      });
      console.log(`crash harness seed ${seed}: ${JSON.stringify(summary)}`);
      expect(summary.acknowledged).toBeGreaterThan(0);
      expect(summary.replaysRefused).toBeGreaterThan(0);
      // Records the service reported as committed stay on disk byte for byte across restarts.
      expect(summary.replaysFromGenesis).toBe(1);
      // Cycles 2, 6, 10, ... stop cleanly and archive the journal before the restart.
      expect(summary.archives).toBe(Math.floor((cycles + 2) / 4));
      // Every kind of signed request the load sends was re-sent after a restart and refused as
      // a replay (a GTD order's expiry may pass first, so it is not re-sent).
      expect(summary.replayedKinds).toEqual(
        [
          'auth',
          'cancel',
          'cancelAll',
          'cancelCloid',
          'churn',
          'claim',
          'deposit',
          'leverage',
          'order',
          'referral',
          'replace',
          'transfer',
          'withdrawal',
        ].sort(),
      );
      expect(summary.withdrawalsCompleted).toBeGreaterThan(0);
      expect(summary.gtdExpiredWhileDown).toBeGreaterThan(0);
      // The level behind the long-lived order is repacked under load (engine rules 10).
      if (cycles >= 3) expect(summary.repackedChecks).toBeGreaterThan(0);
      // A soak crosses funding times, some while the service is down.
      if (cycles >= 30) {
        expect(summary.fundingTimesChecked).toBeGreaterThan(0);
        expect(summary.fundingWhileDown).toBeGreaterThan(0);
      }
    },
    60_000 + cycles * 20_000,
  );
});
