/**
 * keccak-256 for state hashes: the optional native `keccak` binding when it loads and agrees with
 * the core's on known vectors, the core's pure-JS one otherwise. The results are the same either
 * way (`native-keccak.test.ts` compares them); the native one ran about 15 times faster here, and
 * a state hash is most of the work of writing a snapshot and of checking one at start-up.
 *
 * @module
 */
import { createRequire } from 'node:module';
import { type Keccak256, nobleKeccak256 } from '@perp/core';

interface NativeHash {
  update(data: Buffer): NativeHash;
  digest(): Buffer;
}

/** Known answers the native binding must give before it is used (lengths around the 136-byte rate). */
const VECTOR_LENGTHS = [0, 1, 135, 136, 137, 1_000, 70_000];

function vector(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 151 + 7) & 0xff;
  return bytes;
}

function digestWith(keccak: Keccak256, parts: readonly Uint8Array[]): string {
  const h = keccak();
  for (const p of parts) h.update(p);
  return Buffer.from(h.digest()).toString('hex');
}

/**
 * The native keccak-256 (`keccak` package's N-API binding, never its JS fallback), or `null` when
 * it does not load or disagrees with the core's on a known vector (`why` is told the reason).
 * `load` is the module loader (tests pass a fake binding).
 */
export function loadNativeKeccak(
  why: (reason: string) => void = () => {},
  load: (id: string) => unknown = createRequire(import.meta.url),
): Keccak256 | null {
  let create: (algorithm: 'keccak256') => NativeHash;
  try {
    create = load('keccak/bindings') as typeof create;
  } catch (e) {
    why(`the native keccak binding did not load: ${(e as Error).message.split('\n')[0]}`);
    return null;
  }
  const native: Keccak256 = () => {
    const h = create('keccak256');
    return {
      update(data: Uint8Array) {
        h.update(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
      },
      digest: () => new Uint8Array(h.digest()),
    };
  };
  for (const length of VECTOR_LENGTHS) {
    const data = vector(length);
    // Whole and in two updates: the snapshot hasher feeds its text in slices.
    const split = [data.subarray(0, length >> 1), data.subarray(length >> 1)];
    const expected = digestWith(nobleKeccak256, [data]);
    if (digestWith(native, [data]) !== expected || digestWith(native, split) !== expected) {
      why(`the native keccak binding disagrees with the core's on ${length} bytes`);
      return null;
    }
  }
  return native;
}

let chosen: Keccak256 | undefined;

/** The keccak-256 this process hashes states with: native when it loads, else the core's. */
export function stateKeccak(): Keccak256 {
  chosen ??= loadNativeKeccak() ?? nobleKeccak256;
  return chosen;
}
