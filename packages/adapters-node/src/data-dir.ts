/**
 * Reading a data directory's files as start-up does, shared by `startVenue` and the read-only
 * `--check` (`data-dir-check.ts`), so the check runs the start's own checks with its messages.
 *
 * @module
 */
import { closeSync, fstatSync, openSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  InvalidChainSnapshotError,
  permitVerifier,
  SimulatedChain,
  type SimulatedChainOptions,
  type SimulatedChainSnapshot,
} from '@perp/adapters-memory';
import { createSigningContext, type SigningContext } from '@perp/core';
import type { VenueConfig } from './config.js';
import { FileSource } from './journal/byte-source.js';
import {
  firstRecordSeq,
  type JournalRequirements,
  RecordsArchivedError,
} from './journal/file-journal.js';
import {
  JournalBehindSnapshotError,
  type LoadedSnapshot,
  listSnapshotFiles,
} from './journal/snapshots.js';
import { StartupError } from './startup-error.js';

/** `<data>/venue.json`. */
export interface VenueFile {
  readonly adminToken: string;
  readonly createdTime: number;
}

/**
 * `<data>/venue.json` as written at creation. The admin token guards every admin route: a file
 * without one (edited, truncated) must stop the start, not open the API to `Bearer undefined`.
 */
export function readVenueFile(path: string): VenueFile {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new StartupError(`${path}: ${(e as Error).message}`);
  }
  const token =
    typeof parsed === 'object' && parsed !== null
      ? (parsed as Record<string, unknown>).adminToken
      : undefined;
  // Spaces around it could never match: HTTP strips them from the Authorization header.
  if (typeof token !== 'string' || token.length === 0 || token.trim() !== token)
    throw new StartupError(
      `${path}: adminToken must be a non-empty string without surrounding spaces (the admin API's bearer token)`,
    );
  return parsed as VenueFile;
}

/**
 * `<data>/chain.json`, parsed (not yet checked: {@link restoreChain}). A file that is not JSON
 * stops the start with a line naming it.
 */
export function readChainFile(path: string): SimulatedChainSnapshot {
  try {
    return JSON.parse(readFileSync(path, 'utf8')) as SimulatedChainSnapshot;
  } catch (e) {
    throw new StartupError(`${path}: ${(e as Error).message}`);
  }
}

/**
 * The simulated chain of `<data>/chain.json` (`path`, read by {@link readChainFile}). A snapshot
 * of the wrong shape, or of another token or vault than `options` name, stops the start with a
 * line naming the file.
 */
export function restoreChain(
  path: string,
  snapshot: SimulatedChainSnapshot,
  options: SimulatedChainOptions,
): SimulatedChain {
  try {
    return SimulatedChain.fromSnapshot(snapshot, options);
  } catch (e) {
    if (e instanceof InvalidChainSnapshotError) throw new StartupError(`${path}: ${e.message}`);
    throw e;
  }
}

/** The signing context of a venue run with `config`. */
export function signingContextOf(config: VenueConfig): SigningContext {
  return createSigningContext({
    network: config.network,
    vaultName: config.vault.name,
    vaultAddress: config.vault.address.toLowerCase(),
    tokenName: config.token.name,
    tokenAddress: config.token.address.toLowerCase(),
  });
}

/**
 * The embedded simulated chain's options for `config`; `SimulatedChain.fromSnapshot` checks a
 * `chain.json` against them (its token and vault).
 */
export function simulatedChainOptions(
  config: VenueConfig,
  signing: SigningContext,
  now: () => number,
  onChange?: (snapshot: SimulatedChainSnapshot) => void,
): SimulatedChainOptions {
  return {
    tokenName: config.token.name,
    tokenAddress: config.token.address.toLowerCase(),
    vaultAddress: config.vault.address.toLowerCase(),
    // The simulated token verifies permits with the same code the venue uses.
    verifyPermit: permitVerifier(signing),
    now,
    ...(onChange === undefined ? {} : { onChange }),
  };
}

/**
 * What start-up requires of `<data>/journal.log`, given the directory's snapshot files and the
 * newest valid one (`covering`, read before the journal is opened): snapshots prove the journal
 * held records, so one with none valid is not this venue's; and the records a valid snapshot
 * covers were acknowledged, so a journal whose valid records end before its seq lost some, and
 * the start is refused before the journal's torn-tail repair could cut one of them.
 */
export function journalRequirements(
  dataDir: string,
  covering: LoadedSnapshot | null,
): JournalRequirements {
  const newestSnapshot = listSnapshotFiles(dataDir)[0];
  const journalPath = join(dataDir, 'journal.log');
  // Records before the file's first were archived: only a snapshot at or past the last of them
  // can stand in for them.
  const firstSeq = journalStartSeq(journalPath);
  if (firstSeq > 1 && (covering === null || covering.seq < firstSeq - 1))
    throw new RecordsArchivedError(
      journalPath,
      firstSeq,
      covering === null
        ? 'there is no valid snapshot to start from'
        : `the newest valid snapshot, ${covering.path}, is at seq ${covering.seq}, before them`,
    );
  return {
    ...(firstSeq === 1 ? {} : { firstSeq }),
    ...(newestSnapshot === undefined
      ? {}
      : {
          expectRecords: `snapshot ${newestSnapshot.path} covers records up to seq ${newestSnapshot.seq}`,
        }),
    ...(covering === null
      ? {}
      : {
          mustReach: {
            seq: covering.seq,
            refuse: (lastSeq: number, validLength: number) =>
              new JournalBehindSnapshotError(journalPath, validLength, lastSeq, covering),
          },
        }),
    // The records it covers are not scanned when its last one is where it says (a restart
    // costs the journal's tail, not its history); they are checked when something reads them.
    ...(covering?.journal === undefined
      ? {}
      : { resumeAfter: { seq: covering.seq, position: covering.journal } }),
  };
}

/**
 * The seq of the first record of the journal file at `path`: 1 for a journal that holds its
 * whole history (or is absent, empty, or damaged at its start, which the scan then reports),
 * later once the records before it were archived (`archive-journal.ts`).
 */
export function journalStartSeq(path: string): number {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch {
    return 1;
  }
  try {
    // One record is read: a small window, grown for a longer record.
    return firstRecordSeq(new FileSource(fd, fstatSync(fd).size, 64 * 1024)) ?? 1;
  } finally {
    closeSync(fd);
  }
}
