/**
 * Writes of files that must be whole once renamed into place (snapshots, read-model
 * checkpoints).
 *
 * @module
 */
import { type FileHandle, open } from 'node:fs/promises';

/**
 * Writes all of `data` at `position`. A write may write less than asked (a disk that is nearly
 * full writes what fits and reports the rest only on the next call): the rest is written after
 * it, and a write that makes no progress fails. Ignoring the count left snapshots short of their
 * header's length, reported as written, and the rotation then deleted the older, valid ones.
 */
export async function writeFully(fh: FileHandle, data: Buffer, position: number): Promise<void> {
  for (let done = 0; done < data.length; ) {
    const rest = data.subarray(done);
    const { bytesWritten } = await fh.write(rest, 0, rest.length, position + done);
    if (bytesWritten <= 0) throw new Error(`write made no progress at byte ${position + done}`);
    done += bytesWritten;
  }
}

/** fsync of a directory, so a rename in it is durable. */
export async function syncDir(dir: string): Promise<void> {
  const dh = await open(dir, 'r');
  try {
    await dh.sync();
  } finally {
    await dh.close();
  }
}
