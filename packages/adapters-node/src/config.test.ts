import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG, mergeConfig } from './config.js';

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
});
