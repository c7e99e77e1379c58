/**
 * A system clock set back between restarts: command times never go below the last journaled
 * one (the engine refuses time going backwards), and the start says so in the log.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { wallet } from '@perp/core/testing';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { startVenue } from '../src/venue.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('a system clock behind the journal', () => {
  it('holds command times at the last journaled one and logs how far behind it is', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'perp-dur-clock-'));
    dirs.push(dir);
    const start = (lines: string[]) =>
      startVenue({ dataDir: dir, port: 0, priceFeed: 'none', log: (l) => lines.push(l) });
    const first = await start([]);
    const before = await first.context.host.submit({ type: 'openAccount', account: wallet(1) });
    const lastTime = first.context.host.state.time;
    await first.close();
    expect(before.outcome.ok).toBe(true);

    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(lastTime - 600_000);
    const lines: string[] = [];
    const second = await start(lines);
    expect(
      lines.some((l) => /the system clock is 6\d{5} ms behind the last journaled/.test(l)),
    ).toBe(true);
    const after = await second.context.host.submit({ type: 'openAccount', account: wallet(2) });
    expect(after.outcome.ok).toBe(true);
    expect(second.context.host.state.time).toBe(lastTime);
    await second.close();
  });
});
