/**
 * Signature recovery off the event loop (issue 6 item 5): a pool of `node:worker_threads` workers
 * that recover signers in batches, with native libsecp256k1 when the optional `secp256k1` package
 * loads and @noble/curves otherwise (identical results, see verify.test.ts). Size 0 recovers inline.
 *
 * The pool only answers "who signed this digest"; decoding, the signature's form, the digest and
 * the signer comparison stay in core (`prepareSignature`, `settleSignature`), and the per-wallet
 * order of commands is kept by the caller (requests.ts), not here: answers may come back in any
 * order.
 *
 * A worker that dies fails its in-flight jobs with {@link VerificationUnavailable} (the request
 * gets a retryable 5000, never a hang) and is replaced; if workers keep dying, the pool stops
 * replacing them and recovers inline. A worker that is alive but does not answer (stuck in a loop)
 * counts as dead once it has held work for {@link VerifyPoolOptions.answerTimeoutMs} without
 * answering: it is terminated, its jobs fail and it is replaced, so neither the request, its
 * wallet's queue nor the venue's shutdown waits for it forever.
 *
 * The queue of jobs waiting for a worker is bounded ({@link VerifyPoolOptions.maxQueued}): a
 * flood of signed requests beyond what the workers can recover is refused at once with
 * {@link VerificationUnavailable} (retryable 5000) instead of growing memory and latency without
 * bound.
 *
 * @module
 */
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
import {
  nobleVerifier,
  type ParsedSignature,
  publicKeyToAddress,
  recoverSigner,
  type SignatureVerifier,
} from '@perp/core';
import { JOB_BYTES, loadNativeRecovery, RESULT_BYTES } from './recover-batch.mjs';

/** Recovers signers, possibly elsewhere; see the module comment. */
export interface SignatureRecovery {
  /** Which ECDSA backend recovers. */
  readonly backend: 'native' | 'noble';
  /** Worker threads; 0 when recovery runs inline on the event loop. */
  readonly workers: number;
  /**
   * Lowercase address that signed `digest` with `signature`, or null when no key recovers.
   * Rejects only with {@link VerificationUnavailable} (a worker died, or the pool is closed).
   */
  recover(digest: Uint8Array, signature: ParsedSignature): Promise<string | null>;
  /** Terminates the workers; pending recoveries reject. Idempotent. */
  close(): Promise<void>;
}

/** Recovery could not run (a worker died, or the pool closed): retry the request. */
export class VerificationUnavailable extends Error {
  override readonly name = 'VerificationUnavailable';
}

/** `workerData` of a recovery worker. */
export interface RecoverWorkerData {
  readonly backend: 'native' | 'noble';
}

/** The worker script; `.mjs` so the same file runs from `src/` (tests) and `dist/`. */
export const RECOVER_WORKER_URL: URL = new URL('./recover-worker.mjs', import.meta.url);

/** Default pool size: one core for the event loop, the rest (at most 4) for recovery; at least 1. */
export function defaultVerifyWorkers(cores: number = availableParallelism()): number {
  return Math.max(1, Math.min(4, cores - 1));
}

function wordHex(v: bigint): string {
  return v.toString(16).padStart(64, '0');
}

/** A {@link SignatureVerifier} on native libsecp256k1, or undefined when the binding does not load. */
export function loadNativeVerifier(): SignatureVerifier | undefined {
  const recover = loadNativeRecovery();
  if (recover === undefined) return undefined;
  return Object.freeze({
    recoverAddress(digest: Uint8Array, sig: ParsedSignature): string {
      const rs = Buffer.from(wordHex(sig.r) + wordHex(sig.s), 'hex');
      return publicKeyToAddress(recover(digest, rs, sig.yParity));
    },
  });
}

/** Recovery on the event loop with a synchronous verifier (pool size 0). */
export class InlineRecovery implements SignatureRecovery {
  readonly workers = 0;
  readonly backend: 'native' | 'noble';
  private readonly verifier: SignatureVerifier;

  constructor(verifier: SignatureVerifier, backend: 'native' | 'noble') {
    this.verifier = verifier;
    this.backend = backend;
  }

  recover(digest: Uint8Array, signature: ParsedSignature): Promise<string | null> {
    return Promise.resolve(recoverSigner(this.verifier, digest, signature));
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

interface Job {
  readonly digest: Uint8Array;
  readonly signature: ParsedSignature;
  readonly resolve: (signer: string | null) => void;
  readonly reject: (error: Error) => void;
}

interface Slot {
  readonly worker: Worker;
  /** Batches sent and not answered, by batch id. */
  readonly inflight: Map<number, readonly Job[]>;
  dead: boolean;
  /** Armed while the worker holds work: fires when it has not answered for answerTimeoutMs. */
  watchdog: NodeJS.Timeout | undefined;
}

/** Options of {@link VerifyPool}. */
export interface VerifyPoolOptions {
  /** Worker threads, at least 1. */
  readonly size: number;
  readonly backend: 'native' | 'noble';
  /** Most jobs in one batch (default 64). */
  readonly maxBatch?: number;
  /** Batches a worker may hold at once, so it never waits for the next message (default 2). */
  readonly pipeline?: number;
  /** After this many worker deaths within {@link VerifyPoolOptions.crashWindowMs}, stop replacing them (default 5). */
  readonly maxCrashes?: number;
  readonly crashWindowMs?: number;
  /**
   * A worker holding work that has not answered for this long is taken as hung: terminated, its
   * jobs failed, replaced (default 5,000 ms; a full batch takes well under 200 ms with noble).
   */
  readonly answerTimeoutMs?: number;
  /**
   * Most jobs waiting for a worker (not counting those in flight); a recovery beyond it is
   * refused at once (default 1,024 per worker: about 2 s of noble recovery per worker).
   */
  readonly maxQueued?: number;
  readonly log?: (line: string) => void;
  /** Starts one worker (tests substitute misbehaving workers). */
  readonly spawn?: (data: RecoverWorkerData) => Worker;
}

/** A pool of recovery workers; see the module comment. */
export class VerifyPool implements SignatureRecovery {
  readonly backend: 'native' | 'noble';
  private readonly slots: Slot[] = [];
  private queue: Job[] = [];
  private head = 0;
  private nextBatch = 1;
  private flushing = false;
  private closed = false;
  private crashes: number[] = [];
  /** Set once workers keep dying: recover on the event loop instead. */
  private fallback: SignatureVerifier | undefined;
  private readonly options: Required<Omit<VerifyPoolOptions, 'log' | 'spawn'>>;
  private readonly log: (line: string) => void;
  private readonly spawnWorker: (data: RecoverWorkerData) => Worker;

  constructor(options: VerifyPoolOptions) {
    if (!Number.isInteger(options.size) || options.size < 1) {
      throw new RangeError(`pool size must be a positive integer, got ${options.size}`);
    }
    this.backend = options.backend;
    this.options = {
      size: options.size,
      backend: options.backend,
      maxBatch: options.maxBatch ?? 64,
      pipeline: options.pipeline ?? 2,
      maxCrashes: options.maxCrashes ?? 5,
      crashWindowMs: options.crashWindowMs ?? 10_000,
      answerTimeoutMs: options.answerTimeoutMs ?? 5_000,
      maxQueued: options.maxQueued ?? 1_024 * options.size,
    };
    this.log = options.log ?? (() => {});
    this.spawnWorker =
      options.spawn ?? ((workerData) => new Worker(RECOVER_WORKER_URL, { workerData }));
    for (let i = 0; i < options.size; i++) this.startWorker();
  }

  /** Live worker threads. */
  get workers(): number {
    return this.slots.length;
  }

  /** Thread ids of the live workers (tests check none leaks). */
  get threadIds(): readonly number[] {
    return this.slots.map((s) => s.worker.threadId);
  }

  /** Jobs waiting for a worker plus jobs in flight. */
  get pending(): number {
    let n = this.queue.length - this.head;
    for (const s of this.slots) for (const b of s.inflight.values()) n += b.length;
    return n;
  }

  recover(digest: Uint8Array, signature: ParsedSignature): Promise<string | null> {
    if (this.closed) {
      return Promise.reject(
        new VerificationUnavailable('the signature verification pool is closed'),
      );
    }
    if (this.fallback !== undefined) {
      return Promise.resolve(recoverSigner(this.fallback, digest, signature));
    }
    const waiting = this.queue.length - this.head;
    if (waiting >= this.options.maxQueued) {
      return Promise.reject(
        new VerificationUnavailable(
          `signature verification is overloaded (${waiting} signatures waiting)`,
        ),
      );
    }
    return new Promise<string | null>((resolve, reject) => {
      this.queue.push({ digest, signature, resolve, reject });
      if (!this.flushing) {
        this.flushing = true;
        // Jobs arriving in the same turn of the event loop travel in one batch.
        queueMicrotask(() => {
          this.flushing = false;
          this.flush();
        });
      }
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const error = new VerificationUnavailable('the signature verification pool is closed');
    this.failQueued(error);
    const slots = this.slots.splice(0);
    for (const slot of slots) {
      slot.dead = true;
      if (slot.watchdog !== undefined) clearTimeout(slot.watchdog);
      slot.watchdog = undefined;
      this.failInflight(slot, error);
    }
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  private startWorker(): void {
    const worker = this.spawnWorker({ backend: this.backend });
    const slot: Slot = { worker, inflight: new Map(), dead: false, watchdog: undefined };
    worker.on('message', (msg: { id: number; out: Uint8Array }) => this.answer(slot, msg));
    worker.on('error', (e) => this.log(`verify worker ${worker.threadId} failed: ${String(e)}`));
    worker.on('exit', (code) => this.died(slot, code));
    worker.unref();
    this.slots.push(slot);
  }

  private answer(slot: Slot, msg: { id: number; out: Uint8Array }): void {
    const jobs = slot.inflight.get(msg.id);
    if (jobs === undefined) return;
    slot.inflight.delete(msg.id);
    if (slot.inflight.size === 0) slot.worker.unref();
    // The worker made progress: its next answer gets a fresh deadline.
    this.arm(slot);
    const out = Buffer.from(msg.out.buffer, msg.out.byteOffset, msg.out.byteLength);
    for (let i = 0; i < jobs.length; i++) {
      const at = i * RESULT_BYTES;
      const job = jobs[i] as Job;
      job.resolve(out[at] === 1 ? `0x${out.toString('hex', at + 1, at + RESULT_BYTES)}` : null);
    }
    this.flush();
  }

  /** (Re)starts the slot's answer deadline while it holds work; stops it when idle. */
  private arm(slot: Slot): void {
    if (slot.watchdog !== undefined) clearTimeout(slot.watchdog);
    slot.watchdog = undefined;
    if (slot.dead || slot.inflight.size === 0) return;
    const timer = setTimeout(() => {
      // After a stall of the main thread this timer can run before the worker's answer, which
      // may already wait on its port: look again once pending messages have been delivered
      // (an immediate runs after the poll phase that delivers them). An answer re-arms the slot.
      setImmediate(() => {
        if (slot.watchdog === timer) this.hung(slot);
      });
    }, this.options.answerTimeoutMs);
    timer.unref();
    slot.watchdog = timer;
  }

  /** A worker that holds work and stopped answering: treated as dead, then terminated. */
  private hung(slot: Slot): void {
    if (slot.dead) return;
    const ms = this.options.answerTimeoutMs;
    this.log(
      `verify worker ${slot.worker.threadId} did not answer within ${ms} ms; terminating it`,
    );
    this.died(slot, `a signature verification worker did not answer within ${ms} ms`);
    // Its exit event finds the slot dead and does nothing more.
    void slot.worker.terminate();
  }

  private died(slot: Slot, cause: number | string): void {
    if (slot.dead) return; // terminated by close(), or already declared hung
    slot.dead = true;
    if (slot.watchdog !== undefined) clearTimeout(slot.watchdog);
    slot.watchdog = undefined;
    const i = this.slots.indexOf(slot);
    if (i >= 0) this.slots.splice(i, 1);
    const reason =
      typeof cause === 'number' ? `a signature verification worker exited (code ${cause})` : cause;
    this.failInflight(slot, new VerificationUnavailable(reason));
    const now = Date.now();
    this.crashes = this.crashes.filter((t) => now - t < this.options.crashWindowMs);
    this.crashes.push(now);
    if (this.crashes.length < this.options.maxCrashes) {
      this.log(`verify worker ${slot.worker.threadId} failed (${reason}); replacing it`);
      this.startWorker();
    } else if (this.slots.length === 0 && this.fallback === undefined) {
      this.log(
        `verify workers exited ${this.crashes.length} times in ${this.options.crashWindowMs} ms; verifying on the event loop`,
      );
      this.fallback =
        (this.backend === 'native' ? loadNativeVerifier() : undefined) ?? nobleVerifier;
    }
    this.flush();
  }

  private failInflight(slot: Slot, error: Error): void {
    for (const jobs of slot.inflight.values()) for (const job of jobs) job.reject(error);
    slot.inflight.clear();
  }

  private failQueued(error: Error): void {
    for (let i = this.head; i < this.queue.length; i++) (this.queue[i] as Job).reject(error);
    this.queue = [];
    this.head = 0;
  }

  /** Sends queued jobs to the least busy workers, batched. */
  private flush(): void {
    if (this.closed) return;
    if (this.fallback !== undefined && this.slots.length === 0) {
      const verifier = this.fallback;
      for (let i = this.head; i < this.queue.length; i++) {
        const job = this.queue[i] as Job;
        job.resolve(recoverSigner(verifier, job.digest, job.signature));
      }
      this.queue = [];
      this.head = 0;
      return;
    }
    while (this.head < this.queue.length) {
      let best: Slot | undefined;
      for (const s of this.slots) {
        if (
          s.inflight.size < this.options.pipeline &&
          (best === undefined || s.inflight.size < best.inflight.size)
        )
          best = s;
      }
      if (best === undefined) return;
      const waiting = this.queue.length - this.head;
      // Spread a backlog over the workers rather than filling the first one.
      const n = Math.min(
        waiting,
        this.options.maxBatch,
        Math.max(1, Math.ceil(waiting / this.slots.length)),
      );
      const jobs = this.queue.slice(this.head, this.head + n);
      this.head += n;
      if (this.head === this.queue.length) {
        this.queue = [];
        this.head = 0;
      } else if (this.head >= 1_024 && this.head * 2 >= this.queue.length) {
        // A backlog that never empties (a venue busy for hours) would otherwise keep every job
        // ever sent, each with its promise, in the array's spent prefix: drop it now and then,
        // at an amortised constant cost per job.
        this.queue = this.queue.slice(this.head);
        this.head = 0;
      }
      this.send(best, jobs);
    }
  }

  private send(slot: Slot, jobs: readonly Job[]): void {
    const bytes = new Uint8Array(jobs.length * JOB_BYTES);
    const view = Buffer.from(bytes.buffer);
    for (let i = 0; i < jobs.length; i++) {
      const job = jobs[i] as Job;
      const at = i * JOB_BYTES;
      bytes.set(job.digest, at);
      view.write(wordHex(job.signature.r), at + 32, 'hex');
      view.write(wordHex(job.signature.s), at + 64, 'hex');
      bytes[at + 96] = job.signature.yParity;
    }
    const id = this.nextBatch++;
    slot.inflight.set(id, jobs);
    if (slot.inflight.size === 1) {
      slot.worker.ref();
      this.arm(slot);
    }
    slot.worker.postMessage({ id, count: jobs.length, jobs: bytes }, [bytes.buffer]);
  }
}

/** How to verify: worker count (`'auto'`: {@link defaultVerifyWorkers}; 0 inline) and backend. */
export interface SignatureRecoveryOptions {
  readonly workers: number | 'auto';
  /** `'auto'` (default): native when the `secp256k1` binding loads, else noble. */
  readonly backend?: 'auto' | 'native' | 'noble';
  readonly log?: (line: string) => void;
}

/** Builds the recovery the venue uses: a pool, or inline for 0 workers. */
export function createSignatureRecovery(options: SignatureRecoveryOptions): SignatureRecovery {
  const log = options.log ?? (() => {});
  const wanted = options.backend ?? 'auto';
  const native = wanted === 'noble' ? undefined : loadNativeVerifier();
  if (native === undefined && wanted !== 'noble') {
    log('secp256k1 native binding not available; verifying signatures with @noble/curves');
  }
  const backend = native === undefined ? 'noble' : 'native';
  const size = options.workers === 'auto' ? defaultVerifyWorkers() : options.workers;
  if (!Number.isInteger(size) || size < 0) {
    throw new RangeError(`verifyWorkers must be 'auto' or a non-negative integer, got ${size}`);
  }
  if (size === 0) return new InlineRecovery(native ?? nobleVerifier, backend);
  return new VerifyPool({ size, backend, log });
}
