/**
 * Snapshot writes on a disk that writes less than asked (a nearly full disk: write(2) returns
 * a short count, then ENOSPC). Probe that found it: a venue on a 2 MB tmpfs logged
 * `snapshot …: seq 80, 4351 bytes` for files of 4,096 bytes, and the rotation deleted the
 * older, valid snapshots.
 */
import { existsSync, mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stateHash } from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import {
  listSnapshotFiles,
  readSnapshotFile,
  Snapshotter,
  snapshotFileName,
} from '../src/journal/snapshots.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'perp-dur-snap-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
afterEach(() => {
  vi.restoreAllMocks();
});

function sampleState() {
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  for (const w of [wallet(1), wallet(2)]) {
    v.open(w);
    v.fund(w, '50000');
  }
  v.oracle({ 'BTC-PERP': '65000' });
  v.place(wallet(2), 'BTC-PERP', { side: 'Sell', qty: '0.02', price: '66000' });
  return v.state;
}

type Write = (
  buffer: Uint8Array,
  offset: number,
  length: number,
  position: number,
) => Promise<{ bytesWritten: number; buffer: Uint8Array }>;

/** Replaces `FileHandle.prototype.write` (positioned buffer form) for the test. */
async function patchWrites(make: (original: Write) => Write): Promise<{ calls: () => number }> {
  const probe = await open(join(tempDir(), 'probe'), 'w');
  const proto = Object.getPrototypeOf(probe) as { write: Write };
  await probe.close();
  const original = proto.write;
  let calls = 0;
  const replaced = make(original);
  vi.spyOn(proto, 'write').mockImplementation(function (this: unknown, ...args: unknown[]) {
    calls++;
    return replaced.apply(this, args as Parameters<Write>);
  });
  return { calls: () => calls };
}

describe('snapshot writes that write less than asked', () => {
  it('a short write is continued: the snapshot is complete and reads back', async () => {
    const dir = tempDir();
    const state = sampleState();
    // Every write writes half of what it was asked (at least one byte): legal for write(2).
    const writes = await patchWrites(
      (original) =>
        function (this: unknown, buffer, offset, length, position) {
          return original.call(this, buffer, offset, Math.max(1, length >> 1), position);
        },
    );
    const s = new Snapshotter({ dir, log: () => {} });
    const written = await s.write(state, 7);
    expect(writes.calls()).toBeGreaterThan(2);
    vi.restoreAllMocks();
    expect(written).not.toBeNull();
    const loaded = readSnapshotFile(join(dir, snapshotFileName(7)));
    expect(loaded.hash).toBe(stateHash(state));
  });

  it('a write that stops making progress (disk full) abandons the snapshot and keeps the older ones', async () => {
    const dir = tempDir();
    const state = sampleState();
    const lines: string[] = [];
    const s = new Snapshotter({ dir, log: (l) => lines.push(l) });
    expect(await s.write(state, 1)).not.toBeNull();
    expect(await s.write(state, 2)).not.toBeNull();
    // The disk fills: the next write gets 100 bytes in, then nothing more fits.
    let budget = 100;
    await patchWrites(
      (original) =>
        function (this: unknown, buffer, offset, length, position) {
          const n = Math.min(length, budget);
          budget -= n;
          return original.call(this, buffer, offset, n, position);
        },
    );
    const written = await s.write(state, 3);
    vi.restoreAllMocks();
    expect(written).toBeNull();
    expect(lines.some((l) => l.includes('snapshot at seq 3 failed and was abandoned'))).toBe(true);
    // The two valid snapshots are still there and valid; no short one took their place.
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([2, 1]);
    for (const f of listSnapshotFiles(dir))
      expect(readSnapshotFile(f.path).hash).toBe(stateHash(state));
  });
});

describe('a snapshot becomes visible only whole and durable', () => {
  it('says so when the snapshot is in place but the directory fsync after the rename failed', async () => {
    const dir = tempDir();
    const state = sampleState();
    const probe = await open(join(tempDir(), 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
    await probe.close();
    const original = proto.sync;
    vi.spyOn(proto, 'sync').mockImplementation(function (this: { fd: number }) {
      // The file's own fsync passes; the directory's (after the rename) fails.
      if (readlinkSync(`/proc/self/fd/${this.fd}`) === dir)
        return Promise.reject(Object.assign(new Error('EIO: i/o error, fsync'), { code: 'EIO' }));
      return original.call(this);
    });
    const lines: string[] = [];
    const written = await new Snapshotter({ dir, log: (l) => lines.push(l) }).write(state, 5);
    vi.restoreAllMocks();
    expect(written).toBeNull();
    // Not "abandoned": the whole file is under its final name, and a restart may use it.
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /snapshot .*5\.snap at seq 5 is in place, but the fsync of its directory failed .*EIO/,
    );
    expect(lines[0]).not.toMatch(/abandoned/);
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([5]);
    expect(readSnapshotFile(join(dir, snapshotFileName(5))).hash).toBe(stateHash(state));
  });

  it('fsyncs the tmp file before the rename, and the directory after it', async () => {
    const dir = tempDir();
    const state = sampleState();
    const final = join(dir, snapshotFileName(4));
    const probe = await open(join(tempDir(), 'probe'), 'w');
    const proto = Object.getPrototypeOf(probe) as { sync: () => Promise<void> };
    await probe.close();
    const original = proto.sync;
    const syncs: { file: string; finalExists: boolean; tmpExists: boolean }[] = [];
    vi.spyOn(proto, 'sync').mockImplementation(function (this: { fd: number }) {
      syncs.push({
        file: readlinkSync(`/proc/self/fd/${this.fd}`),
        finalExists: existsSync(final),
        tmpExists: existsSync(`${final}.tmp`),
      });
      return original.call(this);
    });
    const written = await new Snapshotter({ dir, log: () => {} }).write(state, 4);
    vi.restoreAllMocks();
    expect(written?.path).toBe(final);
    expect(syncs).toEqual([
      // The complete file, under its temporary name: the final name does not exist yet.
      { file: `${final}.tmp`, finalExists: false, tmpExists: true },
      // The rename made durable.
      { file: dir, finalExists: true, tmpExists: false },
    ]);
  });
});
