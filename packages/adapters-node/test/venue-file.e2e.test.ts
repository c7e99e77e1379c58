/**
 * `<data>/venue.json` holds the admin token: a file without a usable one stops the start with one
 * line naming it, and the admin routes never accept a bearer header built from a missing token.
 * A `chain.json` the start cannot restore stops it the same way.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { StartupError, startVenue } from '../src/index.js';
import { startTestVenue } from './support/fixture.js';

describe('venue.json', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'venue-file-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const startWith = (content: string) => {
    writeFileSync(join(dir, 'venue.json'), content);
    return startVenue({ dataDir: dir, port: 0, priceFeed: 'none', log: () => {} });
  };

  for (const [what, content] of [
    ['no adminToken', JSON.stringify({ createdTime: 1 })],
    ['an empty adminToken', JSON.stringify({ adminToken: '', createdTime: 1 })],
    ['a numeric adminToken', JSON.stringify({ adminToken: 12345, createdTime: 1 })],
    ['a JSON null', 'null'],
  ] as const) {
    it(`with ${what} stops the start, naming the file`, async () => {
      const start = startWith(content);
      await expect(start).rejects.toBeInstanceOf(StartupError);
      await expect(start).rejects.toThrow(
        `${join(dir, 'venue.json')}: adminToken must be a non-empty string`,
      );
    });
  }

  it('of a new venue is readable by its owner only, in a directory only the owner may enter', async () => {
    const data = join(dir, 'new');
    const venue = await startVenue({ dataDir: data, port: 0, priceFeed: 'none', log: () => {} });
    try {
      expect(statSync(join(data, 'venue.json')).mode & 0o777).toBe(0o600);
      expect(statSync(data).mode & 0o777).toBe(0o700);
    } finally {
      await venue.close();
    }
  });

  it('that is not JSON stops the start, naming the file', async () => {
    const start = startWith('{"adminToken": ');
    await expect(start).rejects.toBeInstanceOf(StartupError);
    await expect(start).rejects.toThrow(new RegExp(`^${join(dir, 'venue.json')}: .*JSON`));
  });
});

describe('chain.json', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'chain-file-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const startWith = (content: string) => {
    writeFileSync(join(dir, 'chain.json'), content);
    return startVenue({ dataDir: dir, port: 0, priceFeed: 'none', log: () => {} });
  };

  // The CLI prints a StartupError as its one line; anything else as a stack (a defect).
  it('that is not JSON stops the start, naming the file', async () => {
    const start = startWith('{"format":');
    await expect(start).rejects.toBeInstanceOf(StartupError);
    await expect(start).rejects.toThrow(new RegExp(`^${join(dir, 'chain.json')}: .*JSON`));
  });

  it('of another shape stops the start, naming the file and the field', async () => {
    const start = startWith(JSON.stringify({ format: 'something-else' }));
    await expect(start).rejects.toBeInstanceOf(StartupError);
    await expect(start).rejects.toThrow(
      `${join(dir, 'chain.json')}: invalid simulated chain snapshot at `,
    );
  });
});

it('the admin routes refuse "Bearer " and "Bearer undefined" when the venue has no token', async () => {
  const t = await startTestVenue();
  try {
    // Start-up refuses such a token; this is the second line of defence (a venue.json without
    // one used to make the expected header `Bearer undefined`).
    for (const token of [undefined, '']) {
      (t.venue.context as { adminToken: unknown }).adminToken = token;
      for (const authorization of ['Bearer ', 'Bearer undefined', 'Bearer']) {
        const r = await t.api('GET', '/admin/state-hash', undefined, { authorization });
        expect(r.status, `${token}: ${authorization}`).toBe(401);
      }
    }
  } finally {
    await t.close();
  }
});
