/**
 * EIP-191 `personal_sign` (version 0x45): the hash wallets sign for a text message, and the
 * WebSocket authentication text `<lowercase address>:<nonce>` (protocol.md section 3).
 *
 * @module
 */
import { keccak_256 } from '@noble/hashes/sha3.js';
import { utf8ToBytes } from '@noble/hashes/utils.js';

/** The EIP-191 version 0x45 prefix; the message's UTF-8 byte length follows it in decimal. */
export const PERSONAL_MESSAGE_PREFIX = '\x19Ethereum Signed Message:\n';

/**
 * `keccak256("\x19Ethereum Signed Message:\n" + byteLength + message)`. A string is signed as
 * its UTF-8 bytes (the length counts bytes, not characters); a Uint8Array as raw bytes.
 */
export function personalMessageHash(message: string | Uint8Array): Uint8Array {
  const body = typeof message === 'string' ? utf8ToBytes(message) : message;
  return keccak_256
    .create()
    .update(utf8ToBytes(`${PERSONAL_MESSAGE_PREFIX}${body.length}`))
    .update(body)
    .digest();
}

/** The text a wallet signs to authenticate: `${account.toLowerCase()}:${nonce}` (decimal ms). */
export function authenticateMessage(account: string, nonce: bigint): string {
  return `${account.toLowerCase()}:${nonce}`;
}
