import { describe, expect, it } from 'vitest';
import { parseArgs, USAGE } from './cli.js';
import { DEFAULT_CONFIG } from './config.js';
import { DEFAULT_SNAPSHOT_POLICY } from './journal/snapshots.js';

describe('pnpm start --help', () => {
  it('lists every flag parseArgs accepts', () => {
    const flags = [
      '--port',
      '--host',
      '--data',
      '--memory',
      '--config',
      '--price-feed',
      '--snapshot-records',
      '--snapshot-seconds',
      '--no-snapshots',
      '--verify-workers',
      '--trust-proxy',
      '--replay-under-new-rules',
      '--json',
      '--check',
      '--replay',
      '--help',
    ];
    for (const flag of flags) expect(USAGE).toContain(`  ${flag} `);
    expect(() => parseArgs(['--bogus'])).toThrow('unknown option --bogus');
    expect(parseArgs([]).replayUnderNewRules).toBe(false);
    expect(parseArgs(['--replay-under-new-rules']).replayUnderNewRules).toBe(true);
  });

  it('states the real defaults: the config decides the price feed, the timer needs 10,000 new records', () => {
    // Without --price-feed the config's mode applies (a --config file can make it `none`).
    expect(parseArgs([]).priceFeed).toBeUndefined();
    expect(USAGE).toContain(`the config's priceFeed.mode, ${DEFAULT_CONFIG.priceFeed.mode} unless`);
    expect(USAGE).toContain(`(default ${DEFAULT_SNAPSHOT_POLICY.everyRecords}; 0 off)`);
    expect(USAGE).toContain(
      `every\n                             ${DEFAULT_SNAPSHOT_POLICY.everyMs / 1000} s once ${DEFAULT_SNAPSHOT_POLICY.minRecords} records are new`,
    );
    // Given on the command line, the timer takes a snapshot when any record is new.
    expect(parseArgs(['--snapshot-seconds', '5']).snapshots).toEqual({
      everyMs: 5_000,
      minRecords: 1,
    });
    expect(parseArgs(['--snapshot-records', '10', '--no-snapshots']).snapshots).toBe(false);
    expect(parseArgs(['--no-read-model-checkpoints']).snapshots).toEqual({ readModels: false });
  });
});

describe('pnpm start --trust-proxy', () => {
  it('takes a comma-separated list, spaces after the commas allowed; unset keeps the config', () => {
    expect(parseArgs([]).trustProxy).toBeUndefined();
    expect(parseArgs(['--trust-proxy', '10.0.0.0/8, loopback,::1']).trustProxy).toEqual([
      '10.0.0.0/8',
      'loopback',
      '::1',
    ]);
    // Every hop: the two /0 ranges, which proxy-addr itself would refuse.
    expect(parseArgs(['--trust-proxy', '0.0.0.0/0,::/0']).trustProxy).toEqual([
      '0.0.0.0/0',
      '::/0',
    ]);
  });

  it('refuses a malformed entry, naming it', () => {
    expect(() => parseArgs(['--trust-proxy', 'loopback,10.0.0.0/33'])).toThrow(
      '--trust-proxy entries must be an IP address, a CIDR range (10.0.0.0/8, fd00::/8, 0.0.0.0/0, ::/0) or one of loopback, linklocal, uniquelocal, not "10.0.0.0/33"',
    );
    expect(() => parseArgs(['--trust-proxy', 'loopback,'])).toThrow(/, not ""$/);
    expect(() => parseArgs(['--trust-proxy'])).toThrow('--trust-proxy needs a value');
  });
});

describe('pnpm start flag values', () => {
  it('refuses an empty or non-digit number instead of taking it as 0', () => {
    expect(() => parseArgs(['--port', ''])).toThrow('--port must be 0..65535, not ""');
    expect(() => parseArgs(['--port', ' '])).toThrow('--port must be 0..65535');
    expect(() => parseArgs(['--port', '0x50'])).toThrow('--port must be 0..65535');
    expect(() => parseArgs(['--port', '65536'])).toThrow('--port must be 0..65535');
    expect(() => parseArgs(['--snapshot-records', ''])).toThrow(
      '--snapshot-records must be a non-negative integer (digits), not ""',
    );
    // Before: accepted, and the start refused "snapshots.everyMs must be an integer in ...".
    expect(() => parseArgs(['--snapshot-seconds', '2147484'])).toThrow(
      '--snapshot-seconds must be at most 2147483 (about 24 days)',
    );
    expect(parseArgs(['--snapshot-seconds', '2147483']).snapshots).toMatchObject({
      everyMs: 2_147_483_000,
    });
    expect(() => parseArgs(['--snapshot-seconds', '1e3'])).toThrow(
      '--snapshot-seconds must be a non-negative integer',
    );
    expect(() => parseArgs(['--verify-workers', '-1'])).toThrow(
      '--verify-workers must be a non-negative integer',
    );
    expect(() => parseArgs(['--verify-workers', '2.5'])).toThrow(
      '--verify-workers must be a non-negative integer',
    );
    expect(parseArgs(['--port', '0']).port).toBe(0);
    expect(parseArgs(['--port', '8081']).port).toBe(8081);
    expect(parseArgs(['--snapshot-records', '0']).snapshots).toEqual({ everyRecords: 0 });
  });

  it('refuses --memory with --data, in either order', () => {
    expect(() => parseArgs(['--memory', '--data', '/tmp/x'])).toThrow(
      '--memory and --data exclude each other: give one',
    );
    expect(() => parseArgs(['--data', '/tmp/x', '--memory'])).toThrow(
      '--memory and --data exclude each other',
    );
    expect(parseArgs(['--memory']).memory).toBe(true);
  });

  it('refuses --memory with a flag that acts on a data directory only (it did nothing)', () => {
    for (const flags of [
      ['--snapshot-records', '5'],
      ['--snapshot-seconds', '5'],
      ['--no-snapshots'],
      ['--no-read-model-checkpoints'],
      ['--replay-under-new-rules'],
    ]) {
      const message = `${flags[0]} acts on a data directory (--data <dir>): --memory has none, it keeps nothing`;
      expect(() => parseArgs(['--memory', ...flags])).toThrow(message);
      expect(() => parseArgs([...flags, '--memory'])).toThrow(message);
    }
    expect(parseArgs(['--memory', '--json', '--port', '0', '--price-feed', 'none']).memory).toBe(
      true,
    );
  });
});

describe('pnpm start --check', () => {
  it('takes --data and the flags that change what a start would do', () => {
    const o = parseArgs(['--check', '--data', '/backup', '--no-snapshots', '--json', '--replay']);
    expect(o).toMatchObject({ check: true, replay: true, data: '/backup', snapshots: false });
    expect(parseArgs([]).check).toBe(false);
    expect(parseArgs(['--check', '--replay-under-new-rules', '--config', 'c.json']).check).toBe(
      true,
    );
  });

  it('refuses --memory, a flag that only a start uses, and --replay without --check', () => {
    expect(() => parseArgs(['--check', '--memory'])).toThrow(
      '--check reads a data directory (--data <dir>): not with --memory',
    );
    expect(() => parseArgs(['--check', '--data', '/b', '--port', '0'])).toThrow(
      '--check starts nothing: --port has no meaning with it',
    );
    expect(() => parseArgs(['--price-feed', 'none', '--check'])).toThrow(
      '--check starts nothing: --price-feed has no meaning with it',
    );
    expect(() => parseArgs(['--replay'])).toThrow('--replay goes with --check');
  });
});

describe('pnpm start --archive-journal', () => {
  it('takes --data, --config, --json and --archive-to', () => {
    expect(
      parseArgs(['--archive-journal', '--data', '/v', '--archive-to', '/cold', '--json']),
    ).toMatchObject({ archiveJournal: true, archiveTo: '/cold', data: '/v', json: true });
    expect(parseArgs([])).toMatchObject({ archiveJournal: false, archiveTo: undefined });
  });

  it('refuses a flag that starts something, --check, --memory, and --archive-to alone', () => {
    expect(() => parseArgs(['--archive-journal', '--port', '0'])).toThrow(
      '--archive-journal starts nothing: --port has no meaning with it',
    );
    expect(() => parseArgs(['--archive-journal', '--no-snapshots'])).toThrow(
      '--archive-journal starts nothing: --no-snapshots has no meaning with it',
    );
    expect(() => parseArgs(['--archive-journal', '--check'])).toThrow(
      '--archive-journal and --check exclude each other',
    );
    expect(() => parseArgs(['--archive-journal', '--memory'])).toThrow(
      '--archive-journal works on a data directory (--data <dir>): not with --memory',
    );
    expect(() => parseArgs(['--archive-to', '/cold'])).toThrow(
      '--archive-to goes with --archive-journal',
    );
  });
});
