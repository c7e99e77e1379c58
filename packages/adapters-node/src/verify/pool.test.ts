/**
 * The verification pool's life cycle: batches spread over the workers; close() terminates every
 * worker and fails what is pending; a worker that dies (terminated, or an uncaught error) fails
 * its in-flight jobs with VerificationUnavailable and is replaced; workers that keep dying make
 * the pool verify inline rather than hang.
 */
import { Worker } from 'node:worker_threads';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { nobleVerifier, type ParsedSignature, parseSignature } from '@perp/core';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createSignatureRecovery,
  defaultVerifyWorkers,
  InlineRecovery,
  RECOVER_WORKER_URL,
  type RecoverWorkerData,
  VerificationUnavailable,
  VerifyPool,
} from './pool.js';

function signed(i: number): { digest: Uint8Array; sig: ParsedSignature; signer: string } {
  const key = new Uint8Array(32).fill(0).map((_, j) => (j === 31 ? i + 1 : j === 0 ? 1 : 0));
  const digest = new Uint8Array(32).fill(i & 0xff);
  const rec = secp256k1.sign(digest, key, { prehash: false, format: 'recovered' });
  const sig = parseSignature(
    `0x${Buffer.from(rec.subarray(1)).toString('hex')}${(27 + (rec[0] as number)).toString(16)}`,
  );
  if (!sig.ok) throw new Error(sig.error.message);
  return { digest, sig: sig.value, signer: nobleVerifier.recoverAddress(digest, sig.value) };
}

/** A worker that accepts messages and never answers. */
function hangingWorker(): Worker {
  return new Worker("require('node:worker_threads').parentPort.on('message', () => {});", {
    eval: true,
  });
}

/** A worker that throws an uncaught error on its first message. */
function throwingWorker(): Worker {
  return new Worker(
    "require('node:worker_threads').parentPort.on('message', () => { throw new Error('boom'); });",
    { eval: true },
  );
}

/** Records the workers a pool starts and waits for each one's exit. */
function tracking(make: (n: number, data: RecoverWorkerData) => Worker) {
  const started: Worker[] = [];
  const exited: Promise<number>[] = [];
  const spawn = (data: RecoverWorkerData): Worker => {
    const w = make(started.length, data);
    started.push(w);
    exited.push(new Promise((resolve) => w.once('exit', resolve)));
    return w;
  };
  return { spawn, started, allExited: () => Promise.all(exited) };
}

const real = (_: number, data: RecoverWorkerData) =>
  new Worker(RECOVER_WORKER_URL, { workerData: data });
const tick = (ms: number) => new Promise((r) => setTimeout(r, ms));

let open: VerifyPool[] = [];
afterEach(async () => {
  await Promise.all(open.map((p) => p.close()));
  open = [];
});
function pool(options: ConstructorParameters<typeof VerifyPool>[0]): VerifyPool {
  const p = new VerifyPool(options);
  open.push(p);
  return p;
}

describe('sizing', () => {
  it('default: min(4, cores - 1), at least 1', () => {
    expect([1, 2, 3, 4, 5, 8, 64].map((c) => defaultVerifyWorkers(c))).toEqual([
      1, 1, 2, 3, 4, 4, 4,
    ]);
  });

  it('0 workers verifies inline; a negative or fractional size is refused', async () => {
    const inline = createSignatureRecovery({ workers: 0 });
    expect(inline).toBeInstanceOf(InlineRecovery);
    expect(inline.workers).toBe(0);
    const s = signed(1);
    expect(await inline.recover(s.digest, s.sig)).toBe(s.signer);
    expect(() => createSignatureRecovery({ workers: -1 })).toThrow(RangeError);
    expect(() => createSignatureRecovery({ workers: 1.5 })).toThrow(RangeError);
    expect(() => new VerifyPool({ size: 0, backend: 'noble' })).toThrow(RangeError);
  });
});

describe('batches', () => {
  it('spreads a burst over the workers in batches and answers each job', async () => {
    const t = tracking(real);
    const p = pool({ size: 2, backend: 'noble', maxBatch: 8, spawn: t.spawn });
    const jobs = Array.from({ length: 40 }, (_, i) => signed(i));
    const sent: number[] = [];
    for (const w of t.started) {
      const post = w.postMessage.bind(w);
      w.postMessage = (msg: { count: number }, transfer?: never) => {
        sent.push(msg.count);
        post(msg, transfer);
      };
    }
    const got = await Promise.all(jobs.map((j) => p.recover(j.digest, j.sig)));
    expect(got).toEqual(jobs.map((j) => j.signer));
    expect(sent.length).toBeLessThan(jobs.length);
    expect(Math.max(...sent)).toBeLessThanOrEqual(8);
    expect(sent.reduce((a, b) => a + b, 0)).toBe(40);
    expect(p.pending).toBe(0);
  });
});

describe('close', () => {
  it('terminates every worker, fails pending jobs and refuses new ones', async () => {
    const t = tracking(hangingWorker);
    const p = pool({ size: 3, backend: 'noble', spawn: t.spawn });
    expect(p.workers).toBe(3);
    const s = signed(2);
    const pending = Promise.allSettled([p.recover(s.digest, s.sig), p.recover(s.digest, s.sig)]);
    await tick(20);
    await p.close();
    for (const r of await pending) {
      expect(r.status).toBe('rejected');
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(VerificationUnavailable);
    }
    await expect(p.recover(s.digest, s.sig)).rejects.toBeInstanceOf(VerificationUnavailable);
    expect(await t.allExited()).toHaveLength(3);
    expect(p.workers).toBe(0);
    await p.close(); // idempotent
  });

  it('real workers exit too', async () => {
    const t = tracking(real);
    const p = pool({ size: 2, backend: 'noble', spawn: t.spawn });
    const s = signed(3);
    expect(await p.recover(s.digest, s.sig)).toBe(s.signer);
    await p.close();
    expect(await t.allExited()).toHaveLength(2);
  });
});

describe('a worker that dies', () => {
  it('terminated under load: its in-flight jobs fail, a replacement takes the next ones', async () => {
    const t = tracking((n, data) => (n === 0 ? hangingWorker() : real(n, data)));
    const logs: string[] = [];
    const p = pool({ size: 1, backend: 'noble', spawn: t.spawn, log: (l) => logs.push(l) });
    const s = signed(4);
    const inflight = p.recover(s.digest, s.sig);
    await tick(20);
    await t.started[0]!.terminate();
    await expect(inflight).rejects.toThrow(/worker exited/);
    expect(t.started).toHaveLength(2);
    expect(logs.join('\n')).toMatch(/replacing it/);
    expect(await p.recover(s.digest, s.sig)).toBe(s.signer);
    expect(p.workers).toBe(1);
  });

  it("an uncaught error in the worker fails only that worker's jobs", async () => {
    const t = tracking((n, data) => (n === 0 ? throwingWorker() : real(n, data)));
    const p = pool({ size: 2, backend: 'noble', maxBatch: 1, pipeline: 1, spawn: t.spawn });
    const jobs = [signed(5), signed(6)];
    const results = await Promise.allSettled(jobs.map((j) => p.recover(j.digest, j.sig)));
    const failed = results.filter((r) => r.status === 'rejected');
    const answered = results.filter((r) => r.status === 'fulfilled');
    expect(failed).toHaveLength(1);
    expect((failed[0] as PromiseRejectedResult).reason).toBeInstanceOf(VerificationUnavailable);
    expect(answered).toHaveLength(1);
    await tick(20);
    expect(p.workers).toBe(2);
    const again = await Promise.all(jobs.map((j) => p.recover(j.digest, j.sig)));
    expect(again).toEqual(jobs.map((j) => j.signer));
  });

  it('workers that keep dying: the pool stops replacing them and verifies inline, never hangs', async () => {
    const logs: string[] = [];
    const t = tracking(() => throwingWorker());
    const p = pool({
      size: 1,
      backend: 'noble',
      maxCrashes: 3,
      spawn: t.spawn,
      log: (l) => logs.push(l),
    });
    const s = signed(7);
    const outcomes: string[] = [];
    for (let i = 0; i < 6; i++) {
      try {
        outcomes.push(String(await p.recover(s.digest, s.sig)));
      } catch (e) {
        outcomes.push((e as Error).name);
      }
    }
    expect(outcomes.slice(0, 3)).toEqual(Array(3).fill('VerificationUnavailable'));
    expect(outcomes.slice(3)).toEqual(Array(3).fill(s.signer));
    expect(t.started).toHaveLength(3);
    expect(p.workers).toBe(0);
    expect(logs.join('\n')).toMatch(/verifying on the event loop/);
  });
});
