/**
 * EIP-191 personal_sign vectors (research 4.2): ethers' and viem's `hello world`, the binary
 * message trap, the UTF-8 byte length, and the WebSocket authentication text.
 */
import { hashMessage } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { describe, expect, it } from 'vitest';
import {
  authenticateMessage,
  nobleVerifier,
  parseSignature,
  personalMessageHash,
} from '../../src/auth/index.js';
import { A, bytes, hex } from './fixtures.js';

function recover(digest: Uint8Array, sig: string): string {
  const parsed = parseSignature(sig);
  if (!parsed.ok) throw new Error(parsed.error.message);
  return nobleVerifier.recoverAddress(digest, parsed.value);
}

describe('personalMessageHash', () => {
  it('hello world', () => {
    expect(hex(personalMessageHash('hello world'))).toBe(
      '0xd9eba16ed0ecae432b71fe008c98cc872bb4cc214d3220a36f365326cf807d68',
    );
  });

  it('binary trap: 32 bytes hash as bytes, the same hex as text hashes differently', () => {
    const h = '0x47173285a8d7341e5e972fc677286384f802f8ef42a5ec5f03bbfa254cb01fad';
    expect(hex(personalMessageHash(bytes(h)))).toBe(
      '0x93100cc9477ba6522a2d7d5e83d0e075b167224ed8aa0c5860cfd47fa9f22797',
    );
    expect(hex(personalMessageHash(h))).toBe(
      '0xa3c7d06690e8886eea67ea91f7e6143114bedc491639a34b6373702b6b4fa035',
    );
  });

  it('the prefix carries the UTF-8 byte length, not the character count', () => {
    for (const text of ['héllo', '日本語', '🦊:1', '']) {
      expect(hex(personalMessageHash(text)), text).toBe(hashMessage(text));
    }
  });
});

describe('public personal_sign signatures', () => {
  it.each([
    [
      'ethers',
      '0x0123456789012345678901234567890123456789012345678901234567890123',
      '0x14791697260E4c9A71f18484C9f997B308e59325',
      '0xddd0a7290af9526056b4e35a077b9a11b513aa0028ec6c9880948544508f3c63265e99e47ad31bb2cab9646c504576b3abc6939a1710afc08cbf3034d73214b81c',
    ],
    [
      'viem',
      A.privateKey,
      '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266',
      '0xa461f509887bd19e312c0c58467ce8ff8e300d3c1a90b608a760c5b80318eaf15fe57c96f9175d6cd4daad4663763baa7e78836e067d0163e9a2ccf2ff753f5b1b',
    ],
  ] as const)('%s key, hello world', async (_, key, address, sig) => {
    const account = privateKeyToAccount(key);
    expect(account.address).toBe(address);
    expect(await account.signMessage({ message: 'hello world' })).toBe(sig);
    expect(recover(personalMessageHash('hello world'), sig)).toBe(address.toLowerCase());
  });
});

describe('authentication text', () => {
  const expected = '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266:1767225600000';

  it('is <lowercase address>:<decimal nonce>', () => {
    expect(authenticateMessage(A.signer, 1767225600000n)).toBe(expected);
    expect(A.authenticate.message).toBe(expected);
  });

  it('hash and signature of the research vector', async () => {
    expect(hex(personalMessageHash(expected))).toBe(A.authenticate.eip191Hash);
    expect(recover(personalMessageHash(expected), A.authenticate.sig)).toBe(A.signer.toLowerCase());
    expect(await privateKeyToAccount(A.privateKey).signMessage({ message: expected })).toBe(
      A.authenticate.sig,
    );
  });

  it('the checksummed text is a different message', async () => {
    const checksummed = `${A.signer}:1767225600000`;
    const sig = await privateKeyToAccount(A.privateKey).signMessage({ message: checksummed });
    expect(sig.startsWith('0xb19776a6')).toBe(true);
    expect(sig.endsWith('851b')).toBe(true);
    expect(recover(personalMessageHash(expected), sig)).not.toBe(A.signer.toLowerCase());
  });
});
