/**
 * Bytes of a journal read by position, either from a buffer or from a file through a window, so
 * the journal's checks and reads never need the whole file in memory (a journal outgrows any one
 * buffer: Node 20's limit is 4 GiB, about 15 million records, and `readFileSync` stops at 2 GiB).
 *
 * @module
 */
import { readSync, writeSync } from 'node:fs';

/** Bytes read by position. */
export interface ByteSource {
  /** The number of bytes. */
  readonly size: number;
  /** Position in the source of byte 0 of the buffer {@link cover} returned last. */
  readonly start: number;
  /**
   * A buffer holding bytes `[pos, pos + length)` (clamped to the end) from index
   * `pos - start`. Valid until the next call: the buffer may be reused.
   */
  cover(pos: number, length: number): Buffer;
  /** A source over the same bytes whose window moves independently of this one's. */
  fork(): ByteSource;
}

/** A whole buffer as a {@link ByteSource}. */
export class BufferSource implements ByteSource {
  readonly start = 0;
  readonly size: number;
  private readonly data: Buffer;

  constructor(data: Buffer) {
    this.data = data;
    this.size = data.length;
  }

  cover(): Buffer {
    return this.data;
  }

  fork(): ByteSource {
    return this;
  }
}

/** Bytes a {@link FileSource} reads at a time, unless told otherwise. */
export const FILE_WINDOW_BYTES = 8 * 1024 * 1024;

/**
 * The first `size` bytes of an open file, read (pread: the descriptor's position is left alone,
 * so appends may go on) through a window of `window` bytes, grown for a longer range.
 */
export class FileSource implements ByteSource {
  readonly size: number;
  start = 0;
  private readonly fd: number;
  private readonly window: number;
  private storage: Buffer = Buffer.alloc(0);
  private held: Buffer = this.storage;

  constructor(fd: number, size: number, window = FILE_WINDOW_BYTES) {
    if (!(window >= 1)) throw new RangeError(`a file window of ${window} bytes`);
    this.fd = fd;
    this.size = size;
    this.window = window;
  }

  cover(pos: number, length: number): Buffer {
    const end = Math.min(pos + length, this.size);
    if (pos >= this.start && end <= this.start + this.held.length) return this.held;
    const want = Math.max(0, Math.min(Math.max(end - pos, this.window), this.size - pos));
    if (this.storage.length < want) this.storage = Buffer.allocUnsafe(Math.max(want, this.window));
    const into = this.storage.subarray(0, want);
    let read = 0;
    while (read < want) {
      const n = readSync(this.fd, into, read, want - read, pos + read);
      if (n <= 0) throw new Error(`the file ended at byte ${pos + read}, before ${this.size}`);
      read += n;
    }
    this.start = pos;
    this.held = into;
    return into;
  }

  fork(): ByteSource {
    // Probes jump around: a small window, grown only for a long range.
    return new FileSource(this.fd, this.size, Math.min(this.window, 64 * 1024));
  }
}

/**
 * Reads bytes `[from, to)` of `fd` in pieces of at most {@link FILE_WINDOW_BYTES} (a file
 * outgrows any one buffer), handing each to `sink` (valid only during the call); stops early
 * where the file ends. Returns the bytes read.
 */
export function forEachPiece(
  fd: number,
  from: number,
  to: number,
  sink: (piece: Buffer) => void,
): number {
  const piece = Buffer.allocUnsafe(Math.max(1, Math.min(FILE_WINDOW_BYTES, to - from)));
  let at = from;
  while (at < to) {
    const n = readSync(fd, piece, 0, Math.min(piece.length, to - at), at);
    if (n <= 0) break;
    sink(piece.subarray(0, n));
    at += n;
  }
  return at - from;
}

/**
 * Appends bytes `[from, to)` of `fd` to `out` (see {@link forEachPiece}); returns the bytes
 * copied. A write that makes no progress throws.
 */
export function copyRange(fd: number, from: number, to: number, out: number): number {
  let copied = 0;
  return forEachPiece(fd, from, to, (piece) => {
    for (let done = 0; done < piece.length; ) {
      const n = writeSync(out, piece, done, piece.length - done);
      if (n <= 0) throw new Error(`a write made no progress at byte ${copied + done}`);
      done += n;
    }
    copied += piece.length;
  });
}
