/**
 * Start-up failures the operator causes (a port in use) are one line naming the cause, with exit
 * status 1; a stack trace is for defects.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { resolve } from 'node:path';
import { expect, it } from 'vitest';

const CLI = resolve(import.meta.dirname, '../dist/cli.js');

it('a port in use: one line on stderr naming it, exit status 1', async () => {
  const busy = createServer();
  busy.listen(0, '127.0.0.1');
  await once(busy, 'listening');
  const port = (busy.address() as { port: number }).port;
  try {
    const child = spawn(
      process.execPath,
      [CLI, '--memory', '--price-feed', 'none', '--host', '127.0.0.1', '--port', String(port)],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr.on('data', (d) => {
      stderr += String(d);
    });
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(1);
    const lines = stderr.trim().split('\n');
    expect(lines.at(-1)).toMatch(
      new RegExp(
        `^failed to start: listen EADDRINUSE.*:${port} \\(another process listens there: choose --port\\)$`,
      ),
    );
    expect(stderr).not.toMatch(/\n\s+at /); // no stack trace
  } finally {
    busy.close();
  }
});
