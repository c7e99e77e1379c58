/**
 * Backpressure of the verification pool: a flood of recoveries beyond what the workers can take
 * does not queue without bound. Past `maxQueued` waiting jobs (default 1,024 per worker) a
 * recovery is refused at once with VerificationUnavailable, which the venue answers as a
 * retryable 5000; once the backlog drains, recoveries are accepted again. A backlog that never
 * drains does not keep the jobs already handed to a worker.
 */
import { Worker } from 'node:worker_threads';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { nobleVerifier, type ParsedSignature, parseSignature } from '@perp/core';
import { afterEach, describe, expect, it } from 'vitest';
import { VerificationUnavailable, VerifyPool } from '../src/verify/pool.js';

function signed(i: number): { digest: Uint8Array; sig: ParsedSignature; signer: string } {
  const key = new Uint8Array(32).fill((i % 200) + 1);
  const digest = new Uint8Array(32).fill(i % 251);
  const rec = secp256k1.sign(digest, key, { prehash: false, format: 'recovered' });
  const sig = parseSignature(
    `0x${Buffer.from(rec.subarray(1)).toString('hex')}${(27 + (rec[0] as number)).toString(16)}`,
  );
  if (!sig.ok) throw new Error(sig.error.message);
  return { digest, sig: sig.value, signer: nobleVerifier.recoverAddress(digest, sig.value) };
}

/** A worker that takes messages and never answers (the workers are saturated). */
function silentWorker(): Worker {
  return new Worker("require('node:worker_threads').parentPort.on('message', () => {});", {
    eval: true,
  });
}

let open: VerifyPool[] = [];
afterEach(async () => {
  await Promise.all(open.map((p) => p.close()));
  open = [];
});

/** Fires `n` recoveries in one turn; counts the immediate refusals. */
async function flood(p: VerifyPool, n: number) {
  const s = signed(1);
  const refused: Error[] = [];
  const all = Array.from({ length: n }, () =>
    p.recover(s.digest, s.sig).catch((e: Error) => {
      refused.push(e);
    }),
  );
  await new Promise((r) => setTimeout(r, 50));
  return { refused, all };
}

describe('a flood of recoveries', () => {
  it('with the default cap: at most 1,024 wait per worker, the rest are refused at once', async () => {
    const p = new VerifyPool({ size: 1, backend: 'noble', spawn: silentWorker });
    open.push(p);
    const { refused } = await flood(p, 20_000);
    // 1,024 waiting plus what the worker holds (2 batches of at most 64).
    expect(p.pending).toBeLessThanOrEqual(1_024 + 2 * 64);
    expect(refused.length).toBe(20_000 - 1_024);
    expect(refused[0]).toBeInstanceOf(VerificationUnavailable);
    expect(refused[0]?.message).toMatch(
      /signature verification is overloaded \(1024 signatures waiting\)/,
    );
  });

  it('the cap scales with the pool size', async () => {
    const p = new VerifyPool({ size: 2, backend: 'noble', spawn: silentWorker });
    open.push(p);
    const { refused } = await flood(p, 5_000);
    expect(refused.length).toBe(5_000 - 2_048);
  });

  it('refused ones are refused at once; accepted ones answer; after the backlog, new ones are accepted', async () => {
    const p = new VerifyPool({ size: 1, backend: 'noble', maxQueued: 8, maxBatch: 4 });
    open.push(p);
    const jobs = Array.from({ length: 40 }, (_, i) => signed(i));
    const results = await Promise.allSettled(jobs.map((j) => p.recover(j.digest, j.sig)));
    const answered = results.filter((r) => r.status === 'fulfilled');
    expect(answered).toHaveLength(8);
    expect(results.slice(0, 8)).toEqual(
      jobs.slice(0, 8).map((j) => ({ status: 'fulfilled', value: j.signer })),
    );
    for (const r of results.slice(8)) {
      expect(r.status).toBe('rejected');
      expect((r as PromiseRejectedResult).reason).toBeInstanceOf(VerificationUnavailable);
    }
    expect(p.pending).toBe(0);
    const again = await Promise.all(jobs.slice(8, 16).map((j) => p.recover(j.digest, j.sig)));
    expect(again).toEqual(jobs.slice(8, 16).map((j) => j.signer));
  });
});

/** A worker that answers every batch at once, each job unrecovered (a fast, busy worker). */
function echoWorker(): Worker {
  return new Worker(
    `const { parentPort } = require('node:worker_threads');
     parentPort.on('message', (m) => {
       const out = new Uint8Array(m.count * 21);
       parentPort.postMessage({ id: m.id, out }, [out.buffer]);
     });`,
    { eval: true },
  );
}

describe('a backlog that never drains', () => {
  it('does not keep the jobs already sent to a worker', async () => {
    const p = new VerifyPool({
      size: 1,
      backend: 'noble',
      spawn: echoWorker,
      pipeline: 1,
      maxBatch: 1,
    });
    open.push(p);
    const s = signed(1);
    const total = 4_000;
    const held = (): number => (p as unknown as { queue: unknown[] }).queue.length;
    let started = 0;
    let most = 0;
    // Each answer queues the next job, so a few always wait: the queue never empties.
    const next = async (): Promise<void> => {
      while (started < total) {
        started++;
        most = Math.max(most, held());
        await p.recover(s.digest, s.sig);
      }
    };
    await Promise.all([next(), next(), next(), next()]);
    expect(started).toBe(total);
    // Before, the queue's array kept every job sent while anything waited: all 4,000 here, and
    // for as long as a venue stayed busy.
    expect(most).toBeLessThanOrEqual(2_100);
  });
});
