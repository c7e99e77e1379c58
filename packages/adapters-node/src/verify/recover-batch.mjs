// @ts-check
/**
 * ECDSA public-key recovery over batches of fixed-size records, shared by the verification worker
 * and the main thread. Plain JavaScript so a worker thread can load it directly, from `src/` under
 * the tests as from `dist/` in production.
 *
 * A job record is {@link JOB_BYTES} bytes: digest (32) || r (32) || s (32) || recovery bit (1);
 * a result record {@link RESULT_BYTES}: 1 then the 20-byte address, or 0 when no public key
 * recovers. The signature form (65 bytes, v, ranges, low s) is checked before a job is made.
 *
 * @module
 */
import { createRequire } from 'node:module';
import { secp256k1 } from '@noble/curves/secp256k1.js';
import { keccak_256 } from '@noble/hashes/sha3.js';

/** Bytes of one job record. */
export const JOB_BYTES = 97;
/** Bytes of one result record. */
export const RESULT_BYTES = 21;

/**
 * Uncompressed public key (65 bytes, 0x04 first) that signed `digest` with `r || s` and the
 * recovery bit; throws when none recovers.
 * @typedef {(digest: Uint8Array, rs: Uint8Array, recovery: number) => Uint8Array} RecoverPublicKey
 */

/**
 * The native libsecp256k1 binding of the `secp256k1` package, or undefined when it does not load.
 * `secp256k1/bindings` is the native build only: the package's main entry would silently fall
 * back to `elliptic`, which is slower than noble and not the code we measured.
 * @returns {RecoverPublicKey | undefined}
 */
export function loadNativeRecovery() {
  try {
    /** @type {{ ecdsaRecover(sig: Uint8Array, recid: number, msg32: Uint8Array, compressed: boolean): Uint8Array }} */
    const native = createRequire(import.meta.url)('secp256k1/bindings');
    /** @type {RecoverPublicKey} */
    const recover = (digest, rs, recovery) => native.ecdsaRecover(rs, recovery, digest, false);
    return recover;
  } catch {
    return undefined;
  }
}

/**
 * @param {Uint8Array} bytes
 * @param {number} start
 * @returns {bigint}
 */
function word(bytes, start) {
  return BigInt(`0x${Buffer.from(bytes.buffer, bytes.byteOffset + start, 32).toString('hex')}`);
}

/**
 * @noble/curves recovery, the same calls as core's `nobleVerifier` (digest used as is, the
 * recovery bit given explicitly).
 * @type {RecoverPublicKey}
 */
export const nobleRecovery = (digest, rs, recovery) =>
  new secp256k1.Signature(word(rs, 0), word(rs, 32), recovery)
    .recoverPublicKey(digest)
    .toBytes(false);

/**
 * Recovers the signer address of each of `count` job records.
 * @param {RecoverPublicKey} recover
 * @param {Uint8Array} jobs
 * @param {number} count
 * @returns {Uint8Array<ArrayBuffer>} `count` result records
 */
export function recoverBatch(recover, jobs, count) {
  const out = new Uint8Array(count * RESULT_BYTES);
  for (let i = 0; i < count; i++) {
    const at = i * JOB_BYTES;
    try {
      const key = recover(
        jobs.subarray(at, at + 32),
        jobs.subarray(at + 32, at + 96),
        /** @type {number} */ (jobs[at + 96]),
      );
      out[i * RESULT_BYTES] = 1;
      out.set(keccak_256(key.subarray(1)).subarray(12), i * RESULT_BYTES + 1);
    } catch {
      // A forged r need not be the x-coordinate of any point: no signer.
      out[i * RESULT_BYTES] = 0;
    }
  }
  return out;
}
