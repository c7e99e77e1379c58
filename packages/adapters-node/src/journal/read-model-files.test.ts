/**
 * Read-model checkpoint files (`read-model-files.ts`): written whole or not at all, restored only
 * when every check passes (the snapshot's seq and hash, each part's version, length, CRC, every
 * entry), with a reason naming the file otherwise; beside the snapshots, rotated with them.
 */
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { CheckpointEntryError, type CheckpointPart } from '../read/checkpoint.js';
import {
  type CheckpointSource,
  captureReadModels,
  checkCheckpoint,
  checkpointFileName,
  listCheckpointFiles,
  writeCheckpointFile,
} from './read-model-files.js';
import { listSnapshotFiles, Snapshotter } from './snapshots.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'perp-ckpt-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A part over a list of entries; what a restore committed lands in `restored`. */
function listPart(name: string, entries: unknown[], version = 1) {
  const state = { restored: null as unknown[] | null, released: 0 };
  const part: CheckpointPart = {
    name,
    version,
    capture: () => ({
      entries: () => entries,
      release: () => {
        state.released++;
      },
    }),
    restorer: () => {
      const aside: unknown[] = [];
      return {
        add: (e) => {
          if (e === 'refused') throw new CheckpointEntryError(name, 'this entry is refused');
          aside.push(e);
        },
        apply: () => {},
        commit: () => {
          state.restored = aside;
        },
      };
    },
  };
  return { part, state };
}

/** Restores the parts from their checkpoint, committing them only when every check passed. */
function restoreCheckpoint(source: CheckpointSource) {
  const r = checkCheckpoint(source);
  if (!r.restored) return r;
  for (const restorer of r.restorers) restorer.commit();
  return { restored: true as const, path: r.path, bytes: r.bytes };
}

const SNAP = { seq: 42, hash: '0xabc' };

async function write(dir: string, parts: CheckpointPart[], abandoned = () => false) {
  return writeCheckpointFile({
    dir,
    seq: SNAP.seq,
    stateHash: SNAP.hash,
    capture: captureReadModels(parts),
    sliceMs: () => 4,
    abandoned,
  });
}

describe('read-model checkpoint files', () => {
  it('round-trips every part, bigints included, and releases the captures', async () => {
    const dir = tempDir();
    const a = listPart('a', [{ x: 1n, y: 'z' }, [2, null]]);
    const b = listPart(
      'b',
      Array.from({ length: 3000 }, (_v, i) => ({ i, n: BigInt(i) ** 5n })),
    );
    const written = await write(dir, [a.part, b.part]);
    expect(written.path).toBe(join(dir, checkpointFileName(42)));
    expect(readdirSync(dir)).toEqual([checkpointFileName(42)]);
    expect([a.state.released, b.state.released]).toEqual([1, 1]);

    const a2 = listPart('a', []);
    const b2 = listPart('b', []);
    const r = restoreCheckpoint({ dir, snapshot: SNAP, parts: [a2.part, b2.part] });
    expect(r).toEqual({ restored: true, path: written.path, bytes: written.bytes });
    expect(a2.state.restored).toEqual([{ x: 1n, y: 'z' }, [2, null]]);
    expect(b2.state.restored).toHaveLength(3000);
    expect((b2.state.restored as { n: bigint }[])[2999]?.n).toBe(2999n ** 5n);
  });

  it('restores nothing, with a reason naming the file, unless every check passes', async () => {
    const dir = tempDir();
    const path = join(dir, checkpointFileName(42));
    const reasonFor = (snapshot = SNAP, parts?: CheckpointPart[]) => {
      const a = listPart('a', []);
      const b = listPart('b', []);
      const r = restoreCheckpoint({ dir, snapshot, parts: parts ?? [a.part, b.part] });
      expect([a.state.restored, b.state.restored]).toEqual([null, null]);
      return r.restored ? 'restored' : r.reason;
    };
    expect(reasonFor()).toBe(`${path}: there is none`);
    await write(dir, [listPart('a', [1, 2]).part, listPart('b', [3, 'refused']).part]);
    const good = readFileSync(path);
    expect(reasonFor({ seq: 42, hash: '0xdef' })).toMatch(
      /taken at seq 42 with state hash 0xabc, not the snapshot's \(seq 42, hash 0xdef\)/,
    );
    expect(reasonFor(SNAP, [listPart('a', []).part, listPart('b', [], 2).part])).toMatch(
      /its parts are a v1, b v1, this build reads a v1, b v2/,
    );
    expect(reasonFor(SNAP, [listPart('a', []).part])).toMatch(/this build reads a v1$/);
    // The entry a part refuses: the parts before it were not committed either.
    expect(reasonFor()).toBe(`${path}: entry 4: b: this entry is refused`);

    const flipped = Buffer.from(good);
    const at = flipped.length - 3;
    flipped.writeUInt8(flipped.readUInt8(at) ^ 0x01, at);
    writeFileSync(path, flipped);
    expect(reasonFor()).toMatch(/body checksum mismatch$/);
    writeFileSync(path, good.subarray(0, good.length - 1));
    expect(reasonFor()).toMatch(/body is \d+ bytes, the header says \d+$/);
    writeFileSync(path, 'not a header\n');
    expect(reasonFor()).toMatch(/the header is not JSON$/);
    writeFileSync(path, '{"format":"perp-engine-snapshot"}\n');
    expect(reasonFor()).toMatch(/not a read-model checkpoint$/);
  });

  it('a part reads the older versions it names (`reads`), and only those', async () => {
    const dir = tempDir();
    await write(dir, [listPart('a', [1, 2]).part, listPart('b', [3]).part]);
    const path = join(dir, checkpointFileName(42));
    // b is at version 2 now, and its version 1 entries are version 2 entries.
    const a = listPart('a', []);
    const b = { ...listPart('b', [], 2) };
    const bReadsOld: CheckpointPart = { ...b.part, reads: [1] };
    const r = restoreCheckpoint({ dir, snapshot: SNAP, parts: [a.part, bReadsOld] });
    expect(r.restored).toBe(true);
    expect([a.state.restored, b.state.restored]).toEqual([[1, 2], [3]]);
    // A version it does not name is refused, the message saying what it reads.
    const c = listPart('b', [], 3);
    const refused = restoreCheckpoint({
      dir,
      snapshot: SNAP,
      parts: [a.part, { ...c.part, reads: [2] }],
    });
    expect(refused).toMatchObject({
      restored: false,
      reason: `${path}: its parts are a v1, b v1, this build reads a v1, b v2/v3`,
    });
  });

  it('a part that finds its entries incomplete as a whole stops every part being committed', async () => {
    const dir = tempDir();
    await write(dir, [listPart('a', [1]).part, listPart('b', [2]).part]);
    const a = listPart('a', []);
    const b = listPart('b', []);
    const strict: CheckpointPart = {
      ...b.part,
      restorer: () => ({
        ...b.part.restorer(),
        check: () => {
          throw new CheckpointEntryError('b', 'market 1 lacks its 1h candles');
        },
      }),
    };
    expect(restoreCheckpoint({ dir, snapshot: SNAP, parts: [a.part, strict] })).toEqual({
      restored: false,
      reason: `${join(dir, checkpointFileName(42))}: b: market 1 lacks its 1h candles`,
    });
    expect([a.state.restored, b.state.restored]).toEqual([null, null]);
  });

  it('an abandoned write leaves no file and releases its captures', async () => {
    const dir = tempDir();
    const a = listPart(
      'a',
      Array.from({ length: 200_000 }, (_v, i) => ({ i })),
    );
    let turns = 0;
    await expect(write(dir, [a.part], () => ++turns > 1)).rejects.toThrow(/closing/);
    expect(readdirSync(dir)).toEqual([]);
    expect(a.state.released).toBe(1);
  });
});

describe('the snapshotter writes a checkpoint beside each snapshot', () => {
  function venueState() {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    v.open(wallet(1));
    v.fund(wallet(1), '1000');
    return v;
  }

  it('at the snapshot seq with its hash, none while the read models are incomplete, rotated with the snapshots', async () => {
    const dir = tempDir();
    const v = venueState();
    const a = listPart('a', [{ n: 1n }]);
    let complete = false;
    const lines: string[] = [];
    writeFileSync(join(dir, `${checkpointFileName(3)}.tmp`), 'torn');
    const s = new Snapshotter({
      dir,
      policy: { keep: 2 },
      log: (l) => lines.push(l),
      readModels: () => (complete ? [a.part] : null),
    });
    expect(lines).toContain(
      `snapshot: removed ${checkpointFileName(3)}.tmp, an unfinished read-model checkpoint write`,
    );
    const first = await s.write(v.state, 1);
    expect(first?.readModels).toBeNull();
    expect(listCheckpointFiles(dir)).toEqual([]);

    complete = true;
    const written = [];
    for (const seq of [2, 3, 4]) written.push(await s.write(v.state, seq));
    const last = written[2];
    expect(last?.readModels).toEqual({
      path: join(dir, checkpointFileName(4)),
      bytes: expect.any(Number),
    });
    // The sizes logged are the files' (header block included), as ls and --check give them.
    expect(last?.bytes).toBe(statSync(last?.path as string).size);
    expect(last?.readModels?.bytes).toBe(statSync(join(dir, checkpointFileName(4))).size);
    expect(lines[lines.length - 1]).toBe(
      `snapshot ${last?.path}: seq 4, ${last?.bytes} bytes, ${last?.ms.toFixed(0)} ms, read models ${last?.readModels?.bytes} bytes`,
    );
    // Two snapshots kept, and only their checkpoints.
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([4, 3]);
    expect(listCheckpointFiles(dir).map((f) => f.seq)).toEqual([4, 3]);
    const b = listPart('a', []);
    expect(
      restoreCheckpoint({ dir, snapshot: { seq: 4, hash: last?.hash as string }, parts: [b.part] }),
    ).toMatchObject({
      restored: true,
    });
    expect(b.state.restored).toEqual([{ n: 1n }]);
    expect(a.state.released).toBe(3);
  });

  it('a clean stop with nothing new writes the read models beside the newest snapshot if it has none', async () => {
    const dir = tempDir();
    const v = venueState();
    const plain = new Snapshotter({ dir, log: () => {} });
    const snap = await plain.write(v.state, 5);
    const a = listPart('a', [{ n: 5n }]);
    const lines: string[] = [];
    const options = {
      dir,
      lastSeq: 5,
      log: (l: string) => lines.push(l),
      readModels: () => [a.part],
    };
    expect(
      await new Snapshotter(options).writeFinal(() => ({ state: v.state, seq: 5 })),
    ).toBeNull();
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([5]);
    expect(lines).toEqual([
      expect.stringMatching(
        /^read models at seq 5 written beside snapshot .*snapshot-0+5\.snap: \d+ bytes$/,
      ),
    ]);
    const b = listPart('a', []);
    expect(
      restoreCheckpoint({ dir, snapshot: { seq: 5, hash: snap?.hash as string }, parts: [b.part] }),
    ).toMatchObject({
      restored: true,
    });
    // Once there, it is not written again.
    lines.length = 0;
    await new Snapshotter(options).writeFinal(() => ({ state: v.state, seq: 5 }));
    expect(lines).toEqual([]);
    expect(a.state.released).toBe(1);
  });

  it('writes none with the policy off (--no-read-model-checkpoints), at a clean stop neither', async () => {
    const dir = tempDir();
    const v = venueState();
    const a = listPart('a', [{ n: 1n }]);
    const s = new Snapshotter({
      dir,
      log: () => {},
      policy: { readModels: false },
      readModels: () => [a.part],
    });
    expect((await s.write(v.state, 2))?.readModels).toBeNull();
    await s.writeFinal(() => ({ state: v.state, seq: 2 }));
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([2]);
    expect(listCheckpointFiles(dir)).toEqual([]);
    expect(a.state.released).toBe(0);
  });

  it('a failed checkpoint keeps its snapshot and says why', async () => {
    const dir = tempDir();
    const v = venueState();
    const lines: string[] = [];
    const broken: CheckpointPart = {
      name: 'broken',
      version: 1,
      capture: () => ({
        entries: () => [{ cyclic: 1n, toJSON: () => JSON.parse('x') }],
        release: () => {},
      }),
      restorer: () => ({ add: () => {}, apply: () => {}, commit: () => {} }),
    };
    const s = new Snapshotter({ dir, log: (l) => lines.push(l), readModels: () => [broken] });
    const w = await s.write(v.state, 7);
    expect(w?.readModels).toBeNull();
    expect(existsSync(join(dir, checkpointFileName(7)))).toBe(false);
    expect(listSnapshotFiles(dir).map((f) => f.seq)).toEqual([7]);
    expect(lines).toContainEqual(
      expect.stringMatching(
        /^snapshot at seq 7: the read-model checkpoint failed and was abandoned \(a restart from this snapshot rebuilds them from the journal\): /,
      ),
    );
  });
});
