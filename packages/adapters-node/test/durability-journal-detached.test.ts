/**
 * A journal deleted, replaced or written in place while the venue runs. Probe that found it: `rm journal.log`
 * under a running venue; the next two oracle updates were acknowledged (written and fsynced to
 * the open, unlinked file), the venue kept running, and after SIGTERM those records existed
 * nowhere. The journal now checks after each flush, before acknowledging, that its path still
 * names the file it writes; if not it stops (5002, exit 70) after copying the records out.
 */
import {
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Command, createEngineState } from '@perp/core';
import { wallet } from '@perp/core/testing';
import { afterAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../src/engine/clock.js';
import { EngineHost, HostStoppedError } from '../src/engine/host.js';
import { FileJournal, JournalCorruptError, scanFrames } from '../src/journal/file-journal.js';

const dirs: string[] = [];
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'perp-dur-detached-'));
  dirs.push(d);
  return d;
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

const open = (i: number): Command => ({ type: 'openAccount', account: wallet(i), time: 1000 + i });

describe('a journal file deleted or replaced while the venue runs', () => {
  it('deleted: the next append is refused, naming the file and offset; its records are copied out', async () => {
    const dir = tempDir();
    const path = join(dir, 'journal.log');
    const lines: string[] = [];
    const j = FileJournal.open(path, { log: (l) => lines.push(l) });
    expect(await j.append([open(1), open(2)])).toBe(2);
    const size = readFileSync(path).length;
    unlinkSync(path);
    const error = await j.append([open(3)]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JournalCorruptError);
    expect((error as JournalCorruptError).file).toBe(path);
    expect((error as Error).message).toContain(`journal ${path} is damaged at byte `);
    expect((error as Error).message).toContain('the file was deleted while the venue ran');
    // Never again: the journal is broken.
    await expect(j.append([open(4)])).rejects.toBe(error);
    await j.close();
    const copies = readdirSync(dir).filter((n) => n.startsWith('journal.log.detached-'));
    expect(copies).toHaveLength(1);
    expect(lines[0]).toContain(`copied to ${join(dir, copies[0] as string)}`);
    const data = readFileSync(join(dir, copies[0] as string));
    // Every acknowledged record (1, 2), and the refused group's (3): either outcome is allowed.
    expect(data.length).toBeGreaterThan(size);
    expect(scanFrames(copies[0] as string, data).offsets).toHaveLength(3);
  });

  it('replaced by another file: refused the same way, the other file is left alone', async () => {
    const dir = tempDir();
    const path = join(dir, 'journal.log');
    const j = FileJournal.open(path, { log: () => {} });
    expect(await j.append([open(1)])).toBe(1);
    writeFileSync(join(dir, 'other.log'), 'another file');
    renameSync(join(dir, 'other.log'), path);
    await expect(j.append([open(2)])).rejects.toThrow('the file was replaced by another file');
    await j.close();
    expect(readFileSync(path, 'utf8')).toBe('another file');
  });

  it('written in place by another process (a backup copied over it): refused, nothing copied out', async () => {
    const dir = tempDir();
    const path = join(dir, 'journal.log');
    const lines: string[] = [];
    const j = FileJournal.open(path, { log: (l) => lines.push(l) });
    expect(await j.append([open(1)])).toBe(1);
    const backup = readFileSync(path);
    expect(await j.append([open(2), open(3)])).toBe(3);
    const wrote = readFileSync(path).length;
    // `cp backup journal.log`: same inode, truncated and rewritten with the older records.
    writeFileSync(path, backup);
    const error = await j.append([open(4)]).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JournalCorruptError);
    // The refused group went after the backup's bytes; the venue expected it after its own.
    const after = readFileSync(path).length;
    const group = after - backup.length;
    expect((error as Error).message).toContain(
      `the file was written by another process (it holds ${after} bytes where this venue wrote ${wrote + group})`,
    );
    expect((error as Error).message).toContain('Restore the data directory from a backup');
    expect(lines).toEqual([expect.stringContaining('the venue stops')]);
    await expect(j.append([open(5)])).rejects.toBe(error);
    await j.close();
    expect(readdirSync(dir).filter((n) => n.includes('detached'))).toEqual([]);
  });

  it('appended to by another process: refused the same way', async () => {
    const dir = tempDir();
    const path = join(dir, 'journal.log');
    const j = FileJournal.open(path, { log: () => {} });
    expect(await j.append([open(1)])).toBe(1);
    writeFileSync(path, 'stray bytes', { flag: 'a' });
    await expect(j.append([open(2)])).rejects.toThrow('was written by another process');
    await j.close();
  });

  it('stops the host: the request is refused with 5002 and onFatal runs', async () => {
    const dir = tempDir();
    const path = join(dir, 'journal.log');
    const journal = FileJournal.open(path, { log: () => {} });
    let fatal: unknown;
    const host = new EngineHost({
      state: createEngineState({}, 1000),
      journal,
      clock: new ManualClock(1000),
      onFatal: (e) => {
        fatal = e;
      },
    });
    const first = await host.submit({ type: 'openAccount', account: wallet(1) });
    expect(first.seq).toBe(1);
    unlinkSync(path);
    const refused = await host
      .submit({ type: 'openAccount', account: wallet(2) })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(HostStoppedError);
    expect((refused as HostStoppedError).message).toContain('LEDGER_UNAVAILABLE');
    await new Promise((r) => setImmediate(r));
    expect(fatal).toBeInstanceOf(JournalCorruptError);
    await journal.close();
  });

  it('the refused request is in the detached copy: it is told its outcome is unknown, not that nothing was applied', async () => {
    const dir = tempDir();
    const path = join(dir, 'journal.log');
    const journal = FileJournal.open(path, { log: () => {} });
    const host = new EngineHost({
      state: createEngineState({}, 1000),
      journal,
      clock: new ManualClock(1000),
      onFatal: () => {},
    });
    await host.submit({ type: 'openAccount', account: wallet(1) });
    unlinkSync(path);
    const refused = await host
      .submit({ type: 'openAccount', account: wallet(2) })
      .catch((e: unknown) => e);
    expect((refused as HostStoppedError).mayBeApplied).toBe(true);
    expect((refused as Error).message).toContain('its outcome is unknown until the venue restarts');
    expect((refused as Error).message).not.toContain('nothing of this request was applied');
    await journal.close();
    // The operator does what the log says: the copy goes back as journal.log, and the restart
    // applies the refused request.
    const copy = readdirSync(dir).find((n) => n.startsWith('journal.log.detached-'));
    renameSync(join(dir, copy as string), path);
    const restored = FileJournal.open(path, { log: () => {} });
    const accounts = [...restored.readSync(0)].map((r) =>
      r.command.type === 'openAccount' ? r.command.account : r.command.type,
    );
    expect(accounts).toEqual([wallet(1), wallet(2)]);
    await restored.close();
  });
});
