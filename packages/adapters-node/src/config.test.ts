import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, loadConfig, mergeConfig } from './config.js';

/** The default config with its first instrument's settings changed as a `--config` file would. */
function withInstrument(changes: Record<string, unknown>): () => unknown {
  const [first, ...rest] = DEFAULT_CONFIG.instruments;
  return () => mergeConfig(DEFAULT_CONFIG, { instruments: [{ ...first, ...changes }, ...rest] });
}

describe('--config instruments', () => {
  it('the defaults pass', () => {
    expect(mergeConfig(DEFAULT_CONFIG, {}).instruments).toHaveLength(
      DEFAULT_CONFIG.instruments.length,
    );
  });

  it('a field of the wrong JSON type is refused naming it, before any arithmetic on it', () => {
    expect(withInstrument({ marginTiers: 'x' })).toThrow(
      'instruments[0].marginTiers must be an array of { notionalFloor, maxLeverage }',
    );
    expect(withInstrument({ marginTiers: [null] })).toThrow(
      'instruments[0].marginTiers[0] must be an object { notionalFloor, maxLeverage }',
    );
    expect(withInstrument({ maxLeverage: '20' })).toThrow(
      'instruments[0].maxLeverage must be a number',
    );
    expect(withInstrument({ funding: { intervalMs: '3600000' } })).toThrow(
      'instruments[0].funding.intervalMs must be a number',
    );
    expect(() => mergeConfig(DEFAULT_CONFIG, { instruments: [7] })).toThrow(
      'instruments[0] must be an object',
    );
  });

  it('a key that is no setting is refused naming it; the flat engine-rules names are nested', () => {
    expect(withInstrument({ takerFee: '0.01' })).toThrow(
      'instruments[0].takerFee is not an instrument setting',
    );
    expect(withInstrument({ funding: { interval: 60_000 } })).toThrow(
      /^instruments\[0\]\.funding\.interval is not a funding setting/,
    );
    const [first] = mergeConfig(DEFAULT_CONFIG, {
      instruments: [{ ...DEFAULT_CONFIG.instruments[0], liquidationFeeRate: '0.01' }],
    }).instruments;
    expect(first).toMatchObject({ liquidation: { feeRate: '0.01' } });
    expect(first).not.toHaveProperty('liquidationFeeRate');
  });

  it('a bad value is refused with the instrument rules message', () => {
    expect(withInstrument({ tickSize: '0' })).toThrow(/^instruments\[0\]: .*tickSize/);
  });

  it('a setting without a default left out is named as required, not as malformed', () => {
    // Before: "symbol must match [A-Z0-9]...", "maxLeverage must be a multiple >= 1 ...".
    for (const name of ['symbol', 'maxLeverage', 'quantityDecimals', 'id']) {
      const { [name]: _, ...rest } = DEFAULT_CONFIG.instruments[0] as unknown as Record<
        string,
        unknown
      >;
      expect(() => mergeConfig(DEFAULT_CONFIG, { instruments: [rest] }), name).toThrow(
        `instruments[0].${name} is required for a new instrument (it has no default)`,
      );
    }
    expect(() => mergeConfig(DEFAULT_CONFIG, { instruments: [{ id: 4 }] })).toThrow(
      'instruments[0]: symbol, tickSize, lotSize, quantityDecimals, maxLeverage, openInterestCap are required for a new instrument (they have no default)',
    );
  });
});

describe('--config as a whole', () => {
  const merged = (override: unknown) => () => mergeConfig(DEFAULT_CONFIG, override);

  it('refuses a key that is no config key, naming it and the keys there are', () => {
    expect(merged({ instrument: [] })).toThrow(
      'instrument is not a config key (the keys: network, vault, token, instruments, limits, priceFeed, bootstrapInviteUses, verifyWorkers, trustProxy)',
    );
    expect(merged({ limits: { pingIntervalMS: 1000 } })).toThrow(
      /^limits\.pingIntervalMS is not a config key \(limits: connectionsPerAccount, /,
    );
    expect(merged({ priceFeed: { interval: 10 } })).toThrow(
      /^priceFeed\.interval is not a config key/,
    );
    expect(merged({ token: { symbol: 'USDC' } })).toThrow(/^token\.symbol is not a config key/);
    expect(merged(JSON.parse('{"__proto__": {"network": "x"}}'))).toThrow(
      '__proto__ is not a config key',
    );
  });

  it('refuses token.decimals other than 6: GET /network announces it, the engine counts in 6', () => {
    expect(merged({ token: { decimals: 18 } })).toThrow(
      "token.decimals must be 6 (the engine's collateral decimals), not 18",
    );
  });

  it('refuses a limit or interval that is not a positive integer a timer can hold', () => {
    expect(merged({ limits: { walletRequestsPerSecond: 'twenty' } })).toThrow(
      'limits.walletRequestsPerSecond must be an integer >= 1, not "twenty"',
    );
    expect(merged({ limits: { connectionsPerIp: 0 } })).toThrow(
      'limits.connectionsPerIp must be an integer >= 1, not 0',
    );
    // 0 would reset every plain HTTP connection as it is accepted.
    expect(merged({ limits: { httpConnectionsPerIp: 0 } })).toThrow(
      'limits.httpConnectionsPerIp must be an integer >= 1, not 0',
    );
    expect(merged({ limits: { pingIntervalMs: 2 ** 31 } })).toThrow(
      'limits.pingIntervalMs must be an integer in 1..2147483647, not 2147483648',
    );
    expect(merged({ limits: { maxJsonDepth: 1.5 } })).toThrow(/^limits\.maxJsonDepth must be/);
    // An IPv6 network wider than a /32 (a whole provider) or narrower than an address.
    expect(merged({ limits: { ipv6PrefixLength: 24 } })).toThrow(
      "limits.ipv6PrefixLength must be an integer 32..128 (64: one subscriber's network), not 24",
    );
    expect(merged({ limits: { ipv6PrefixLength: 129 } })).toThrow(
      /^limits\.ipv6PrefixLength must be/,
    );
    expect(merged({ limits: { ipv6PrefixLength: 48 } })).not.toThrow();
    expect(merged({ limits: 5 })).toThrow('limits must be an object');
    // The working-order cap: the engine's, validated like the others (0 would leave no order).
    expect(merged({ limits: { maxWorkingOrdersPerAccount: 0 } })).toThrow(
      'limits.maxWorkingOrdersPerAccount must be an integer >= 1, not 0',
    );
    expect(merged({ limits: { maxWorkingOrdersPerAccount: '200' } })).toThrow(
      'limits.maxWorkingOrdersPerAccount must be an integer >= 1, not "200"',
    );
    expect(DEFAULT_CONFIG.limits.maxWorkingOrdersPerAccount).toBe(1_000);
    expect(
      mergeConfig(DEFAULT_CONFIG, { limits: { maxWorkingOrdersPerAccount: 200 } }).limits,
    ).toMatchObject({ maxWorkingOrdersPerAccount: 200 });
    // The trading socket's slow-consumer bound: 4 MiB unless set, never 0.
    expect(DEFAULT_CONFIG.limits.slowConsumerBytes).toBe(4 * 1024 * 1024);
    expect(
      mergeConfig(DEFAULT_CONFIG, { limits: { slowConsumerBytes: 1 << 20 } }).limits,
    ).toMatchObject({ slowConsumerBytes: 1 << 20 });
    expect(merged({ limits: { slowConsumerBytes: 0 } })).toThrow(
      'limits.slowConsumerBytes must be an integer >= 1, not 0',
    );
    // No coalescing window is a choice: each summary goes out on the next turn.
    expect(mergeConfig(DEFAULT_CONFIG, { limits: { summaryCoalesceMs: 0 } }).limits).toMatchObject({
      summaryCoalesceMs: 0,
    });
  });

  it('refuses a price feed that would journal an oracle command every millisecond, or bad start prices', () => {
    expect(merged({ priceFeed: { intervalMs: 0 } })).toThrow(
      'priceFeed.intervalMs must be an integer in 100..2147483647, not 0',
    );
    expect(merged({ priceFeed: { start: { 'BTC-PERP': '65,000' } } })).toThrow(
      'priceFeed.start.BTC-PERP must be a positive decimal string, not "65,000"',
    );
    expect(merged({ priceFeed: { start: { 'BTC-PERP': 65000 } } })).toThrow(
      /^priceFeed\.start\.BTC-PERP must be a positive decimal string/,
    );
    expect(merged({ priceFeed: { start: { 'BTC-PERP': '0' } } })).toThrow(
      /^priceFeed\.start\.BTC-PERP must be/,
    );
    expect(merged({ priceFeed: { volatility: -0.1 } })).toThrow(
      'priceFeed.volatility must be a number in [0, 1)',
    );
    expect(merged({ priceFeed: { seed: 'x' } })).toThrow(/^priceFeed\.seed must be an integer/);
  });

  it('refuses bootstrapInviteUses 0: a new venue would start without an invite code', () => {
    expect(merged({ bootstrapInviteUses: 0 })).toThrow(
      'bootstrapInviteUses must be an integer >= 1, not 0',
    );
  });

  it('refuses two instruments with one id or one symbol', () => {
    const [btc, eth] = DEFAULT_CONFIG.instruments;
    expect(merged({ instruments: [btc, { ...eth, id: btc!.id }] })).toThrow(
      "instruments[1].id 1 is instruments[0]'s too",
    );
    expect(merged({ instruments: [btc, { ...eth, symbol: btc!.symbol }] })).toThrow(
      "instruments[1].symbol BTC-PERP is instruments[0]'s too",
    );
  });

  it('trustProxy: none by default; addresses, CIDR ranges and keywords; a malformed entry named', () => {
    expect(DEFAULT_CONFIG.trustProxy).toEqual([]);
    const proxies = ['10.0.0.0/8', 'loopback', '::1', '192.168.1.7', 'fd00::/8', 'uniquelocal'];
    expect(mergeConfig(DEFAULT_CONFIG, { trustProxy: proxies }).trustProxy).toEqual(proxies);
    // An array replaces the default whole, and [] is "trust nobody" again.
    expect(
      mergeConfig(mergeConfig(DEFAULT_CONFIG, { trustProxy: proxies }), { trustProxy: [] })
        .trustProxy,
    ).toEqual([]);
    // Every hop, as 0.0.0.0/0 and ::/0 (proxy-addr alone refuses a /0 range).
    expect(mergeConfig(DEFAULT_CONFIG, { trustProxy: ['0.0.0.0/0', '::/0'] }).trustProxy).toEqual([
      '0.0.0.0/0',
      '::/0',
    ]);
    expect(merged({ trustProxy: ['loopback', '10.0.0.0/33'] })).toThrow(
      'trustProxy[1] must be an IP address, a CIDR range (10.0.0.0/8, fd00::/8, 0.0.0.0/0, ::/0) or one of loopback, linklocal, uniquelocal, not "10.0.0.0/33"',
    );
    expect(merged({ trustProxy: ['localhost'] })).toThrow(
      /^trustProxy\[0\] must be .*, not "localhost"$/,
    );
    expect(merged({ trustProxy: ['10.0.0.0/8 '] })).toThrow(/^trustProxy\[0\] must be /);
    expect(merged({ trustProxy: [8] })).toThrow(/^trustProxy\[0\] must be .*, not 8$/);
    // A single string would be split by nobody: "loopback" is not read as ["loopback"].
    expect(merged({ trustProxy: 'loopback' })).toThrow(
      'trustProxy must be an array of proxy addresses, CIDR ranges or loopback, linklocal, uniquelocal ([] trusts nobody), not "loopback"',
    );
  });

  it('refuses empty names and bad addresses', () => {
    expect(merged({ vault: { name: '' } })).toThrow('vault.name must be a non-empty string');
    expect(merged({ token: { address: '0x1' } })).toThrow('token.address must be a 0x address');
    expect(merged({ network: 'devnet' })).toThrow('network must be testnet or mainnet');
  });
});

describe('loadConfig', () => {
  it('reads a file that starts with a byte-order mark (before: "not JSON: Unexpected token")', () => {
    const dir = mkdtempSync(join(tmpdir(), 'config-bom-'));
    try {
      const file = join(dir, 'venue-config.json');
      writeFileSync(file, `\uFEFF${JSON.stringify({ network: 'mainnet' })}`);
      expect(loadConfig(file).network).toBe('mainnet');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
