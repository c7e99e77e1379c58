/**
 * Group commit over the asynchronous journal: while one append (write + fdatasync) is in flight
 * the host goes on applying commands in memory and collects them into the next group; nothing
 * is answered or published before every record up to it is durable; at most one write or flush
 * is in flight; a failed write or flush refuses everything not yet answered and is never
 * retried. The journal's file calls are held by the test, so no assertion depends on timing.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngineState, type EngineState } from '@perp/core';
import { wallet } from '@perp/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { FileJournal, type JournalFs, nodeJournalFs, scanFrames } from '../journal/file-journal.js';
import { type CommandResult, EngineHost, HostStoppedError } from './host.js';

const dirs: string[] = [];
function journalPath(): string {
  const d = mkdtempSync(join(tmpdir(), 'perp-host-'));
  dirs.push(d);
  return join(d, 'journal.log');
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const T = 1_700_000_000_000;
const EIO = () => Object.assign(new Error('EIO: i/o error'), { code: 'EIO' });

/** Real file calls, each held until the test releases it; can fail the next write or flush. */
class HeldFs implements JournalFs {
  readonly calls: { op: 'write' | 'sync'; data?: Buffer }[] = [];
  active = 0;
  maxActive = 0;
  fail: 'write' | 'sync' | null = null;
  private readonly gates: (() => void)[] = [];

  write(fd: number, data: Buffer): Promise<void> {
    return this.hold('write', () => nodeJournalFs.write(fd, data), data);
  }

  sync(fd: number): Promise<void> {
    return this.hold('sync', () => nodeJournalFs.sync(fd));
  }

  /** Calls started and not released yet. */
  get held(): number {
    return this.gates.length;
  }

  release(): void {
    const gate = this.gates.shift();
    if (gate === undefined) throw new Error('nothing is held');
    gate();
  }

  private async hold(op: 'write' | 'sync', run: () => Promise<void>, data?: Buffer) {
    this.calls.push(data === undefined ? { op } : { op, data });
    this.active++;
    this.maxActive = Math.max(this.maxActive, this.active);
    try {
      await new Promise<void>((resolve) => this.gates.push(resolve));
      if (this.fail === op) throw EIO();
      await run();
    } finally {
      this.active--;
    }
  }
}

/** Lets the event loop run until `cond` holds (real file calls take their time: up to 20 s). */
async function until(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 20_000 && !cond(); i++)
    await new Promise((r) => (i < 100 ? setImmediate(r) : setTimeout(r, 1)));
  expect(cond()).toBe(true);
}

const turns = async (n: number) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

function track<T>(p: Promise<T>): { settled: boolean; value?: T; error?: unknown } {
  const t: { settled: boolean; value?: T; error?: unknown } = { settled: false };
  p.then(
    (v) => Object.assign(t, { settled: true, value: v }),
    (e: unknown) => Object.assign(t, { settled: true, error: e }),
  );
  return t;
}

function setup(fs: HeldFs) {
  const path = journalPath();
  const journal = FileJournal.open(path, { fs });
  let now = T;
  // A fraction of a millisecond on the stamped time breaks the reducer's time invariant.
  const skew = { fraction: 0 };
  const fatal: unknown[] = [];
  const host = new EngineHost({
    state: createEngineState({}, T),
    journal,
    clock: { now: () => ++now + skew.fraction },
    onFatal: (e) => fatal.push(e),
  });
  const seen: { state: EngineState; seq: number }[] = [];
  host.subscribe((b) => seen.push({ state: b.state, seq: host.journalSeq }));
  return { path, journal, host, fatal, seen, skew };
}

describe('EngineHost group commit over the asynchronous journal', () => {
  it('applies and collects the next group while a flush is in flight; answers only once durable', async () => {
    const fs = new HeldFs();
    const { path, journal, host, seen } = setup(fs);
    const initial = host.state;
    const first = track(host.submit({ type: 'openAccount', account: wallet(1) }));
    await until(() => fs.held === 1);
    expect(fs.calls.map((c) => c.op)).toEqual(['write']);

    // The event loop runs while the write is held: more commands arrive and are applied.
    const rest = [2, 3, 4].map((i) =>
      track(host.submit({ type: 'openAccount', account: wallet(i) })),
    );
    await until(() => host.backlog.waiting === 3);
    expect(host.backlog).toEqual({ queued: 0, waiting: 3, inFlight: 1 });
    // Nothing is answered or published, and no second write starts.
    expect(fs.calls).toHaveLength(1);
    expect([first, ...rest].some((t) => t.settled)).toBe(false);
    expect(host.state).toBe(initial);
    expect(host.journalSeq).toBe(0);
    expect(seen).toHaveLength(0);

    fs.release(); // the write returns; the flush starts
    await until(() => fs.held === 1 && fs.calls.length === 2);
    expect(fs.calls[1]?.op).toBe('sync');
    await turns(5);
    expect(first.settled).toBe(false);

    fs.release(); // the flush returns: the first group is durable
    await until(() => first.settled);
    expect((first.value as CommandResult).seq).toBe(1);
    expect(rest.some((t) => t.settled)).toBe(false);
    expect(seen.map((s) => s.seq)).toEqual([1]);
    expect(host.journalSeq).toBe(1);

    // The next group is one write of the three records applied meanwhile, seqs 2..4.
    await until(() => fs.calls.length === 3);
    const second = fs.calls[2];
    expect(second?.op).toBe('write');
    const frames = scanFrames('group', second?.data as Buffer, 2);
    expect(frames.offsets).toHaveLength(3);
    expect(frames.tornBytes).toBe(0);
    fs.release();
    await until(() => fs.calls.length === 4);
    await turns(5);
    expect(rest.some((t) => t.settled)).toBe(false);
    fs.release();
    await until(() => rest.every((t) => t.settled));
    expect(rest.map((t) => (t.value as CommandResult).seq)).toEqual([2, 3, 4]);
    // Listeners saw each batch with its own last seq, in order.
    expect(seen.map((s) => s.seq)).toEqual([1, 4]);
    expect(host.state).toBe(seen[seen.length - 1]?.state);
    expect(fs.maxActive).toBe(1);
    await host.idle();
    await journal.close();

    // The file holds the four records in seq order, each exactly once.
    const scan = scanFrames(path, readFileSync(path));
    expect(scan.offsets).toHaveLength(4);
    expect(scan.tornBytes).toBe(0);
  });

  it('unpublishedSince is the stamp of the oldest command not published yet', async () => {
    const fs = new HeldFs();
    const { journal, host } = setup(fs);
    expect(host.unpublishedSince()).toBeNull();
    const first = track(host.submit({ type: 'openAccount', account: wallet(1) }));
    // Queued: stamped, not applied.
    expect(host.unpublishedSince()).toBe(T + 1);
    await until(() => fs.held === 1);
    // In flight, then more applied and waiting behind it: still the oldest.
    const second = track(host.submit({ type: 'openAccount', account: wallet(2) }));
    await until(() => host.backlog.waiting === 1);
    expect(host.unpublishedSince()).toBe(T + 1);
    fs.release();
    await until(() => fs.held === 1);
    fs.release();
    await until(() => first.settled);
    // The first is published: the second (in the next group) is the oldest now.
    expect(host.unpublishedSince()).toBe(T + 2);
    while (!second.settled) {
      await until(() => fs.held === 1 || second.settled);
      if (fs.held === 1) fs.release();
    }
    expect(host.unpublishedSince()).toBeNull();
    await host.idle();
    await journal.close();
  });

  it('splits a queue longer than maxBatch into batches and answers every command', async () => {
    const journal = FileJournal.open(journalPath());
    let now = T;
    const host = new EngineHost({
      state: createEngineState({}, T),
      journal,
      clock: { now: () => ++now },
      maxBatch: 2,
    });
    const sizes: number[] = [];
    host.subscribe((b) => sizes.push(b.commands.length));
    // Submitted in one turn: one pump takes two, the rest must be picked up without a new submit.
    const results = await Promise.all(
      [1, 2, 3, 4, 5].map((i) => host.submit({ type: 'openAccount', account: wallet(i) })),
    );
    expect(results.map((r) => r.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(sizes).toEqual([2, 2, 1]);
    expect(host.state.accounts.size).toBe(5);
    await journal.close();
  });

  it('answers a refusal computed during a flight only after that flight is durable', async () => {
    const fs = new HeldFs();
    const { host, journal } = setup(fs);
    const first = track(host.submit({ type: 'openAccount', account: wallet(1) }));
    await until(() => fs.held === 1);
    // A refusal: it journals nothing, but it was computed on a state that is not durable yet.
    const again = track(host.submit({ type: 'openAccount', account: 'not an address' }));
    await until(() => host.backlog.waiting === 1);
    await turns(5);
    expect(again.settled).toBe(false);
    fs.release();
    await until(() => fs.held === 1);
    await turns(5);
    expect(again.settled).toBe(false);
    fs.release();
    await until(() => first.settled && again.settled);
    const r = again.value as CommandResult;
    expect(r.seq).toBeUndefined();
    expect(r.outcome.ok).toBe(false);
    // The refusal journals nothing: no second write.
    expect(fs.calls.map((c) => c.op)).toEqual(['write', 'sync']);
    await journal.close();
  });

  it('a broken invariant refuses its batch and the queue; what was applied before it is still written and answered, then onFatal', async () => {
    const fs = new HeldFs();
    const { host, journal, fatal, seen, skew } = setup(fs);
    const first = track(host.submit({ type: 'openAccount', account: wallet(1) }));
    await until(() => fs.held === 1);
    const second = track(host.submit({ type: 'openAccount', account: wallet(2) }));
    await until(() => host.backlog.waiting === 1);
    // A command stamped with a fractional time makes the reducer throw an InvariantError.
    skew.fraction = 0.5;
    const broken = track(host.submit({ type: 'tick' }));
    skew.fraction = 0;
    await until(() => broken.settled);
    // The request gets the spec's 5001; the broken invariant itself is the cause (for the log).
    expect(broken.error).toBeInstanceOf(HostStoppedError);
    expect((broken.error as HostStoppedError).code).toBe(5001);
    expect(String((broken.error as HostStoppedError).cause)).toContain(
      'not a whole number of milliseconds',
    );
    expect(host.failed).toBe(true);
    await expect(host.submit({ type: 'tick' })).rejects.toBeInstanceOf(HostStoppedError);
    // Not reported yet: the two valid groups are still on their way to the disk.
    expect(fatal).toHaveLength(0);
    expect(first.settled || second.settled).toBe(false);
    for (let i = 0; i < 4; i++) {
      await until(() => fs.held === 1);
      fs.release();
    }
    await until(() => first.settled && second.settled);
    expect([first, second].map((t) => (t.value as CommandResult).seq)).toEqual([1, 2]);
    expect(seen.map((s) => s.seq)).toEqual([1, 2]);
    await host.idle();
    // Reported a turn after the last answers went out.
    await until(() => fatal.length > 0);
    expect(fatal).toHaveLength(1);
    expect(String(fatal[0])).toContain('not a whole number of milliseconds');
    expect(fs.calls.map((c) => c.op)).toEqual(['write', 'sync', 'write', 'sync']);
    await journal.close();
  });

  for (const op of ['sync', 'write'] as const) {
    it(`a failed ${op} refuses the group in flight and the next one, never retried, host stops`, async () => {
      const fs = new HeldFs();
      const { host, journal, fatal, seen } = setup(fs);
      const ok = await (async () => {
        const p = host.submit({ type: 'openAccount', account: wallet(1) });
        await until(() => fs.held === 1);
        fs.release();
        await until(() => fs.held === 1);
        fs.release();
        return p;
      })();
      expect(ok.seq).toBe(1);
      const before = host.state;

      fs.fail = op;
      const inFlight = track(host.submit({ type: 'openAccount', account: wallet(2) }));
      // Same batch, so in the same group, but refused for its fields: it has no record.
      const unwritten = track(host.submit({ type: 'openAccount', account: 'not an address' }));
      await until(() => fs.held === 1);
      const next = [3, 4].map((i) =>
        track(host.submit({ type: 'openAccount', account: wallet(i) })),
      );
      await until(() => host.backlog.waiting === 2);
      fs.release();
      if (op === 'sync') {
        await until(() => fs.held === 1);
        fs.release();
      }
      await until(() => inFlight.settled && unwritten.settled && next.every((t) => t.settled));
      // Each request gets the spec's 5002 (retry after a delay), the disk error as its cause.
      for (const t of [inFlight, unwritten, ...next]) {
        expect(t.error).toBeInstanceOf(HostStoppedError);
        expect((t.error as HostStoppedError).code).toBe(5002);
        expect(String((t.error as HostStoppedError).cause)).toContain('EIO');
      }
      // The record in flight may be in the file (a restart applies it): its outcome is unknown,
      // and the client must retry the same signed request, not sign a new one.
      expect((inFlight.error as HostStoppedError).mayBeApplied).toBe(true);
      expect((inFlight.error as Error).message).toMatch(
        /^LEDGER_UNAVAILABLE: .*outcome is unknown until the venue restarts: retry after a delay with the same signed request, not a re-signed one/,
      );
      expect((inFlight.error as Error).message).not.toContain('nothing of this request');
      // No record of these was written: nothing of them was applied.
      for (const t of [unwritten, ...next]) {
        expect((t.error as HostStoppedError).mayBeApplied).toBe(false);
        expect((t.error as Error).message).toContain(
          'nothing of this request was applied, retry after a delay',
        );
      }
      await until(() => fatal.length > 0);
      expect(fatal).toHaveLength(1);
      expect(host.failed).toBe(true);
      expect(host.state).toBe(before);
      expect(host.journalSeq).toBe(1);
      expect(seen).toHaveLength(1);
      // One attempt at the failing call, nothing after it.
      const ops = fs.calls.map((c) => c.op);
      expect(ops).toEqual(
        op === 'sync' ? ['write', 'sync', 'write', 'sync'] : ['write', 'sync', 'write'],
      );
      await expect(host.submit({ type: 'tick' })).rejects.toThrow(
        'nothing of this request was applied',
      );
      await expect(journal.append([])).rejects.toThrow('EIO');
      await host.idle();
      await journal.close();
      expect(fs.calls).toHaveLength(ops.length);
    });
  }
});
