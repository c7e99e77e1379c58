/**
 * An in-memory {@link JournalStore}: "durable" means held in this process, so an append resolves
 * at once. For tests, for `--memory` runs, and as the reference the on-disk journal is compared
 * with. Stored commands are deep-frozen copies, so a caller that later mutates its own command
 * object cannot rewrite history.
 *
 * @module
 */
import type { Command, JournalRecord, JournalStore } from '@perp/core';

/** The operation was called on a journal after {@link MemoryJournal.close}. */
export class JournalClosedError extends Error {
  constructor(operation: string) {
    super(`journal is closed: cannot ${operation}`);
    this.name = 'JournalClosedError';
  }
}

/** A {@link JournalStore} that keeps its records in memory, with failure injection for tests. */
export class MemoryJournal implements JournalStore {
  readonly #records: JournalRecord[] = [];
  #injectedFailure: unknown;
  #failureArmed = false;
  #closed = false;

  /** Seq of the last record (0 when empty). */
  get lastSeq(): number {
    return this.#records.length;
  }

  /**
   * Appends commands as one batch with the next seqs and resolves with the last one. All or
   * nothing: a command that is not plain data (holds a function, Map, Set, Date, ...) or an
   * injected failure rejects, and nothing of the batch is stored.
   */
  async append(commands: readonly Command[]): Promise<number> {
    if (this.#closed) throw new JournalClosedError('append');
    if (this.#failureArmed) {
      this.#failureArmed = false;
      const error = this.#injectedFailure;
      this.#injectedFailure = undefined;
      throw error;
    }
    let seq = this.#records.length;
    const records = commands.map(
      (command, i): JournalRecord => Object.freeze({ seq: ++seq, command: frozenCopy(command, i) }),
    );
    this.#records.push(...records);
    return seq;
  }

  /**
   * Every record with `seq > afterSeq`, in order, up to the last record at the time of the call
   * (records appended while iterating are not included).
   */
  read(afterSeq = 0): AsyncIterable<JournalRecord> {
    if (this.#closed) throw new JournalClosedError('read');
    if (!Number.isSafeInteger(afterSeq) || afterSeq < 0) {
      throw new RangeError(`afterSeq must be a non-negative integer, got ${afterSeq}`);
    }
    // Records are frozen, so copying the references is enough to fix the range.
    const records = this.#records.slice(afterSeq);
    return {
      async *[Symbol.asyncIterator]() {
        yield* records;
      },
    };
  }

  /**
   * Makes the next `append` reject with `error` and store nothing; later appends work again, so a
   * test can observe whether the host (wrongly) keeps appending after a failed flush.
   */
  failNextAppend(error: unknown): void {
    this.#injectedFailure = error;
    this.#failureArmed = true;
  }

  /** Closes the journal; later appends and reads throw {@link JournalClosedError}. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
  }
}

/**
 * A deep copy of a command, frozen all the way down (commands hold bigints and plain objects).
 * Anything else is refused with a TypeError that names the command and the field.
 */
function frozenCopy(command: Command, index: number): Command {
  const problem = notPlainData(command, 'command', new Set());
  if (problem !== undefined) {
    const type = (command as { type?: unknown } | null)?.type;
    throw new TypeError(
      `journal commands must be plain data (objects, arrays, primitives): command ${index}` +
        `${typeof type === 'string' ? ` (${type})` : ''} has ${problem}`,
    );
  }
  return deepFreeze(structuredClone(command));
}

/**
 * Where a value stops being plain data, as `<path> <what>`, or `undefined` when it is plain.
 * structuredClone would copy a Map, Set, Date or typed array (whose contents freezing cannot
 * protect) and throws a DataCloneError naming neither command nor field for a function.
 */
function notPlainData(value: unknown, path: string, seen: Set<object>): string | undefined {
  if (typeof value === 'function') return `a function at ${path}`;
  if (typeof value === 'symbol') return `a symbol at ${path}`;
  if (typeof value !== 'object' || value === null || seen.has(value)) return undefined;
  seen.add(value);
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== Array.prototype && proto !== null) {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return `a ${typeof name === 'string' && name !== '' ? name : 'non-plain object'} at ${path}`;
  }
  for (const key of Reflect.ownKeys(value)) {
    if (typeof key === 'symbol') return `a symbol key at ${path}`;
    const inner = Array.isArray(value) ? `${path}[${key}]` : `${path}.${key}`;
    const problem = notPlainData((value as Record<string, unknown>)[key], inner, seen);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const key of Reflect.ownKeys(value)) {
      deepFreeze((value as Record<PropertyKey, unknown>)[key]);
    }
  }
  return value;
}
