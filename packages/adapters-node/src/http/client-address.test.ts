import { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  clientAddress,
  compileProxyTrust,
  limitKey,
  normalizeAddress,
  trustProxyEntryError,
} from './client-address.js';

/** A request from `peer` (undefined: a socket that closed) with an `X-Forwarded-For` header. */
function request(peer: string | undefined, forwardedFor?: string): IncomingMessage {
  const socket = new Socket();
  Object.defineProperty(socket, 'remoteAddress', { value: peer });
  const req = new IncomingMessage(socket);
  if (forwardedFor !== undefined) req.headers['x-forwarded-for'] = forwardedFor;
  return req;
}

describe('clientAddress', () => {
  it('is the TCP peer when nobody is trusted, whatever X-Forwarded-For says', () => {
    const none = compileProxyTrust([]);
    expect(none).toBeNull();
    expect(clientAddress(request('127.0.0.1', '203.0.113.7'), none)).toBe('127.0.0.1');
    expect(clientAddress(request('10.1.2.3'), none)).toBe('10.1.2.3');
    expect(clientAddress(request(undefined, '203.0.113.7'), none)).toBe('unknown');
  });

  it('from a trusted peer, is the address the proxy appended', () => {
    const trust = compileProxyTrust(['10.0.0.0/8']);
    expect(clientAddress(request('10.0.0.5', '203.0.113.7'), trust)).toBe('203.0.113.7');
    // Spaces around the entries are the header's syntax, not the address.
    expect(clientAddress(request('10.0.0.5', ' 203.0.113.7 '), trust)).toBe('203.0.113.7');
    // No header: the proxy itself is the client (a health check, say).
    expect(clientAddress(request('10.0.0.5'), trust)).toBe('10.0.0.5');
    expect(clientAddress(request('10.0.0.5', ''), trust)).toBe('10.0.0.5');
  });

  it('from an untrusted peer, ignores the header: a forged one changes nothing', () => {
    const trust = compileProxyTrust(['10.0.0.0/8']);
    expect(clientAddress(request('198.51.100.9', '203.0.113.7'), trust)).toBe('198.51.100.9');
    expect(clientAddress(request('198.51.100.9', '10.0.0.1, 203.0.113.7'), trust)).toBe(
      '198.51.100.9',
    );
    // A socket that closed has no peer to vouch for the header.
    expect(clientAddress(request(undefined, '203.0.113.7'), trust)).toBe('unknown');
  });

  it('walks a chain from the right and stops at the first untrusted hop', () => {
    const trust = compileProxyTrust(['loopback', '10.0.0.0/8']);
    // The client wrote `spoofed`; the proxy appended the address it saw: that one is the client.
    expect(clientAddress(request('127.0.0.1', '192.0.2.66, 203.0.113.7'), trust)).toBe(
      '203.0.113.7',
    );
    // Two trusted proxies (an edge one at 10.0.0.9 in front of the local one): both are passed.
    expect(clientAddress(request('127.0.0.1', '192.0.2.66, 203.0.113.7, 10.0.0.9'), trust)).toBe(
      '203.0.113.7',
    );
    // A spoofed entry that looks trusted is never reached: the real client stops the walk first.
    expect(clientAddress(request('127.0.0.1', '10.0.0.1, 203.0.113.7'), trust)).toBe('203.0.113.7');
    // All trusted: the leftmost is the client.
    expect(clientAddress(request('127.0.0.1', '10.0.0.1, 10.0.0.2'), trust)).toBe('10.0.0.1');
  });

  it('passes a trusted proxy written with its port, as the client itself is taken without one', () => {
    const trust = compileProxyTrust(['loopback', '10.0.0.0/8']);
    // An inner proxy (Azure Application Gateway) appended the edge proxy it saw with its port:
    // the edge proxy is still trusted, so the client is the address left of it.
    expect(clientAddress(request('127.0.0.1', '203.0.113.7, 10.0.0.9:51234'), trust)).toBe(
      '203.0.113.7',
    );
    expect(clientAddress(request('127.0.0.1', '203.0.113.7, [::1]:443'), trust)).toBe(
      '203.0.113.7',
    );
    // An untrusted address with a port still stops the walk, and is the client without its port.
    expect(clientAddress(request('127.0.0.1', '192.0.2.66, 203.0.113.7:4000'), trust)).toBe(
      '203.0.113.7',
    );
    // The trust function fastify's req.ip uses says the same.
    expect(trust!('10.0.0.9:51234', 1)).toBe(true);
    expect(trust!('203.0.113.7:51234', 1)).toBe(false);
  });

  it('matches IPv6 and IPv4-mapped peers as proxy-addr does', () => {
    const trust = compileProxyTrust(['loopback']);
    expect(clientAddress(request('::1', '2001:db8::1'), trust)).toBe('2001:db8::1');
    // A dual-stack listener reports IPv4 peers as ::ffff:a.b.c.d; loopback still matches.
    expect(clientAddress(request('::ffff:127.0.0.1', '203.0.113.7'), trust)).toBe('203.0.113.7');
    // An untrusted mapped peer is the client, keyed as the IPv4 address it maps.
    expect(clientAddress(request('::ffff:192.0.2.1', '203.0.113.7'), trust)).toBe('192.0.2.1');
  });

  it('gives one client one address, whichever form the peer or the header wrote it in', () => {
    const none = compileProxyTrust([]);
    const trust = compileProxyTrust(['loopback']);
    for (const [peer, header] of [
      ['::ffff:203.0.113.7', undefined],
      ['203.0.113.7', undefined],
      ['127.0.0.1', '::ffff:203.0.113.7'],
      ['::1', '203.0.113.7'],
      ['::ffff:127.0.0.1', '0:0:0:0:0:FFFF:cb00:7107'],
    ] as const) {
      const req = request(peer, header);
      expect(clientAddress(req, header === undefined ? none : trust), `${peer} ${header}`).toBe(
        '203.0.113.7',
      );
    }
    expect(clientAddress(request('2001:DB8:0:0::1'), none)).toBe('2001:db8::1');
    expect(clientAddress(request('127.0.0.1', '2001:db8:0::0:1'), trust)).toBe('2001:db8::1');
  });

  it('0.0.0.0/0 trusts every IPv4 hop, ::/0 every IPv6 one; together every hop', () => {
    const v4 = compileProxyTrust(['0.0.0.0/0']);
    const v6 = compileProxyTrust(['::/0']);
    const all = compileProxyTrust(['0.0.0.0/0', '::/0']);
    const chain = '192.0.2.66, 2001:db8::7, 198.51.100.1';
    // IPv4 only: the walk stops at the IPv6 hop.
    expect(clientAddress(request('203.0.113.1', chain), v4)).toBe('2001:db8::7');
    expect(clientAddress(request('::ffff:203.0.113.1', chain), v4)).toBe('2001:db8::7');
    // IPv6 only: an IPv4 peer, in either form, is not trusted and is the client.
    expect(clientAddress(request('2001:db8::1', '203.0.113.7'), v6)).toBe('203.0.113.7');
    expect(clientAddress(request('2001:db8::1', chain), v6)).toBe('198.51.100.1');
    expect(clientAddress(request('::ffff:203.0.113.1', chain), v6)).toBe('203.0.113.1');
    // Every hop: the leftmost entry, whatever wrote it.
    expect(clientAddress(request('203.0.113.1', chain), all)).toBe('192.0.2.66');
    expect(clientAddress(request('2001:db8::1', chain), all)).toBe('192.0.2.66');
    // A prefix of zero on any address of the family means the same.
    expect(compileProxyTrust(['10.0.0.0/0'])!('8.8.8.8', 0)).toBe(true);
    expect(compileProxyTrust(['10.0.0.0/0'])!('2001:db8::1', 0)).toBe(false);
  });
});

describe('normalizeAddress', () => {
  it('writes an IPv4-mapped address as its IPv4 address', () => {
    expect(normalizeAddress('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(normalizeAddress('::FFFF:203.0.113.7')).toBe('203.0.113.7');
    expect(normalizeAddress('::ffff:cb00:7107')).toBe('203.0.113.7');
    expect(normalizeAddress('0:0:0:0:0:ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(normalizeAddress('::ffff:0.0.0.0')).toBe('0.0.0.0');
    expect(normalizeAddress('::ffff:255.255.255.255')).toBe('255.255.255.255');
  });

  it('writes other IPv6 addresses canonically (RFC 5952)', () => {
    expect(normalizeAddress('2001:DB8:0:0:0:0:0:1')).toBe('2001:db8::1');
    expect(normalizeAddress('::1')).toBe('::1');
    // Not mapped: the IPv4-compatible and NAT64 forms are other addresses.
    expect(normalizeAddress('::203.0.113.7')).toBe('::cb00:7107');
    expect(normalizeAddress('64:ff9b::203.0.113.7')).toBe('64:ff9b::cb00:7107');
    expect(normalizeAddress('::fffe:203.0.113.7')).toBe('::fffe:cb00:7107');
  });

  it('keeps IPv4 addresses, scoped addresses and non-addresses as they are', () => {
    for (const a of ['203.0.113.7', 'fe80::1%eth0', 'unknown', 'not an address', '', '1.2.3.4:x'])
      expect(normalizeAddress(a)).toBe(a);
  });

  it('drops the port a proxy may write after the address (each connection has its own)', () => {
    expect(normalizeAddress('203.0.113.7:51234')).toBe('203.0.113.7');
    expect(normalizeAddress('[2001:DB8::1]:443')).toBe('2001:db8::1');
    expect(normalizeAddress('[2001:db8::1]')).toBe('2001:db8::1');
    expect(normalizeAddress('[::ffff:203.0.113.7]:80')).toBe('203.0.113.7');
    // Not an address with a port: kept as written.
    expect(normalizeAddress('999.0.113.7:80')).toBe('999.0.113.7:80');
    expect(normalizeAddress('[nope]:80')).toBe('[nope]:80');
  });
});

describe('limitKey', () => {
  it('keys an IPv6 client on its /64 network, written canonically', () => {
    expect(limitKey('2001:db8:1:2:3:4:5:6')).toBe('2001:db8:1:2::/64');
    expect(limitKey('2001:DB8:1:2:ffff:ffff:ffff:ffff')).toBe('2001:db8:1:2::/64');
    expect(limitKey('2001:db8::1')).toBe('2001:db8::/64');
    expect(limitKey('2001:db8:0:1::1')).toBe('2001:db8:0:1::/64');
  });

  it('takes any prefix length, one that cuts through a group included', () => {
    const a = '2001:db8:abcd:12ff:ffff::1';
    expect(limitKey(a, 56)).toBe('2001:db8:abcd:1200::/56');
    expect(limitKey(a, 48)).toBe('2001:db8:abcd::/48');
    expect(limitKey(a, 33)).toBe('2001:db8:8000::/33');
    expect(limitKey(a, 63)).toBe('2001:db8:abcd:12fe::/63');
    expect(limitKey(a, 128)).toBe(a);
  });

  it('keeps IPv4, mapped IPv4, loopback, link-local and non-addresses whole', () => {
    expect(limitKey('203.0.113.7')).toBe('203.0.113.7');
    expect(limitKey('::ffff:203.0.113.7')).toBe('203.0.113.7');
    expect(limitKey('::1')).toBe('::1');
    expect(limitKey('fe80::1%eth0')).toBe('fe80::1%eth0');
    expect(limitKey('fe80::1:2')).toBe('fe80::1:2');
    expect(limitKey('febf::1')).toBe('febf::1');
    expect(limitKey('unknown')).toBe('unknown');
  });

  it('keys a NAT64 well-known-prefix address on the IPv4 client it carries', () => {
    expect(limitKey('64:ff9b::203.0.113.7')).toBe('203.0.113.7');
    expect(limitKey('64:ff9b::cb00:7107', 128)).toBe('203.0.113.7');
    // Outside the /96 it is an ordinary IPv6 address.
    expect(limitKey('64:ff9b:1::cb00:7107')).toBe('64:ff9b:1::/64');
  });
});

describe('trustProxyEntryError', () => {
  it('accepts addresses, CIDR ranges, netmasks and the keywords', () => {
    for (const entry of [
      '10.0.0.1',
      '10.0.0.0/8',
      '10.0.0.0/255.0.0.0',
      'fd00::/8',
      '::1',
      'loopback',
      'linklocal',
      'uniquelocal',
      '0.0.0.0/0',
      '::/0',
    ])
      expect(trustProxyEntryError(entry), entry).toBeNull();
  });

  it('names a malformed entry and what would be accepted', () => {
    for (const entry of [
      '10.0.0.0/33',
      '10.0.0.256',
      'localhost',
      '',
      '10.0.0.0/',
      '::1/129',
      'localhost/0',
      '/0',
      '10.0.0.0/-0',
    ])
      expect(trustProxyEntryError(entry)).toBe(
        `must be an IP address, a CIDR range (10.0.0.0/8, fd00::/8, 0.0.0.0/0, ::/0) or one of loopback, linklocal, uniquelocal, not ${JSON.stringify(entry)}`,
      );
    expect(trustProxyEntryError(8)).toMatch(/, not 8$/);
  });
});
