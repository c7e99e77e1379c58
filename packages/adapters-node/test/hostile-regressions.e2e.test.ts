/**
 * Focused regressions for defects found by hostile-input.e2e.test.ts, one per fix: each failed
 * before its fix and names the rule it holds the venue to.
 */
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { DEFAULT_CONFIG } from '../src/config.js';
import { startTestVenue } from './support/fixture.js';

/** Writes `text` on a fresh TCP connection; resolves with what the server wrote before closing. */
function raw(port: number, text: string, waitMs = 2_000): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    let out = '';
    const t = setTimeout(() => s.destroy(), waitMs);
    s.on('data', (d) => {
      out += d.toString('latin1');
    });
    s.on('close', () => {
      clearTimeout(t);
      resolve(out);
    });
    s.on('error', () => {});
    s.write(text);
  });
}

describe('trading socket: a refused handshake gives its per-address slot back', () => {
  it('more refused handshakes than the cap still leave room for real connections', async () => {
    const t = await startTestVenue();
    try {
      const cap = DEFAULT_CONFIG.limits.connectionsPerIp;
      for (let i = 0; i <= cap; i++) {
        // No Sec-WebSocket-Key: the WebSocket server refuses with 400 and never opens a session.
        const answer = await raw(
          t.venue.port,
          'GET /ws HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n',
        );
        expect(answer).toMatch(/^HTTP\/1\.1 400/);
      }
      const ws = new WebSocket(t.venue.ws);
      const outcome = await new Promise<string>((resolve) => {
        ws.once('open', () => resolve('open'));
        ws.once('unexpected-response', (_req, res) => resolve(String(res.statusCode)));
      });
      expect(outcome).toBe('open');
      ws.close();
    } finally {
      await t.close();
    }
  });
});
