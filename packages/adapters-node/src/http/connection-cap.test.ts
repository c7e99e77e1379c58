import { EventEmitter } from 'node:events';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { compileProxyTrust } from './client-address.js';
import { HttpConnectionCap } from './connection-cap.js';

/** A socket from `peer` as far as the cap looks at one: an address and a `close` event. */
function socketFrom(peer: string): Socket {
  const socket = new EventEmitter();
  Object.defineProperty(socket, 'remoteAddress', { value: peer });
  Object.defineProperty(socket, 'destroy', { value: () => socket });
  return socket as unknown as Socket;
}

/** A cap of `perAddress` attached to a stand-in server; `accept` hands it a connection. */
function capOf(perAddress: number, trust: string[] = []) {
  const server = new EventEmitter();
  const cap = new HttpConnectionCap(perAddress, compileProxyTrust(trust));
  cap.attach(server as unknown as Server);
  return {
    cap,
    accept(peer: string): Socket {
      const socket = socketFrom(peer);
      server.emit('connection', socket);
      return socket;
    },
  };
}

describe('HttpConnectionCap', () => {
  it('counts an IPv4 peer and its IPv4-mapped form as one address', () => {
    const { cap, accept } = capOf(2);
    expect(cap.isOverCap(accept('::ffff:203.0.113.7'))).toBe(false);
    expect(cap.isOverCap(accept('203.0.113.7'))).toBe(false);
    // Both slots of 203.0.113.7 are taken, in whichever form the third one comes.
    expect(cap.isOverCap(accept('::FFFF:203.0.113.7'))).toBe(true);
    expect(cap.isOverCap(accept('203.0.113.7'))).toBe(true);
    // Another address has its own.
    expect(cap.isOverCap(accept('203.0.113.8'))).toBe(false);
  });

  it('gives a slot back when its socket closes, to either form', () => {
    const { cap, accept } = capOf(1);
    const first = accept('::ffff:203.0.113.7');
    expect(cap.isOverCap(accept('203.0.113.7'))).toBe(true);
    first.emit('close');
    expect(cap.isOverCap(accept('203.0.113.7'))).toBe(false);
  });

  it('does not count a trusted proxy, in either form', () => {
    const { cap, accept } = capOf(1, ['127.0.0.1']);
    for (const peer of ['127.0.0.1', '::ffff:127.0.0.1', '127.0.0.1'])
      expect(cap.isOverCap(accept(peer))).toBe(false);
  });
});
