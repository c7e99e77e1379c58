/**
 * Writes of files that must be whole once renamed into place (snapshots, read-model
 * checkpoints).
 *
 * @module
 */
import { type FileHandle, open } from 'node:fs/promises';
import { crc32 } from 'node:zlib';

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

/**
 * The body of a file with a reserved header block (snapshots, read-model checkpoints), written
 * in ~1 MB pieces as text is added, so no step ever joins or copies the whole body; the header
 * line is written last, once the body's length and CRC-32 are known.
 */
export class BlockFileWriter {
  /** Body bytes written so far. */
  bytes = 0;
  /** CRC-32 of the body written so far. */
  crc = 0;
  private pending: string[] = [];
  private pendingChars = 0;
  private readonly fh: FileHandle;
  private readonly headerBlock: number;

  constructor(fh: FileHandle, headerBlock: number) {
    this.fh = fh;
    this.headerBlock = headerBlock;
  }

  /** Adds body text; true once a piece is due (call {@link flush}). */
  add(text: string): boolean {
    this.pending.push(text);
    this.pendingChars += text.length;
    return this.pendingChars >= PIECE_CHARS;
  }

  /** Whether a piece is due. */
  get full(): boolean {
    return this.pendingChars >= PIECE_CHARS;
  }

  /** Writes the text added since the last flush. */
  async flush(): Promise<void> {
    if (this.pendingChars === 0) return;
    const piece = Buffer.from(this.pending.join(''), 'utf8');
    this.pending = [];
    this.pendingChars = 0;
    this.crc = crc32(piece, this.crc);
    await writeFully(this.fh, piece, this.headerBlock + this.bytes);
    this.bytes += piece.length;
  }

  /**
   * Flushes, then writes `header` (JSON, given the body's length and CRC) as the first line,
   * padded with spaces to the block: the header line stays plain JSON.
   */
  async finish(header: (body: { bytes: number; crc: number }) => object): Promise<void> {
    await this.flush();
    const line = JSON.stringify(header({ bytes: this.bytes, crc: this.crc }));
    if (line.length >= this.headerBlock) throw new Error('the header does not fit its block');
    await writeFully(
      this.fh,
      Buffer.from(`${line.padEnd(this.headerBlock - 1, ' ')}\n`, 'utf8'),
      0,
    );
  }
}

/** Body text gathered before it is written (characters). */
const PIECE_CHARS = 1 << 20;
