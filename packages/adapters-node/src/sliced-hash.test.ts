/**
 * The sliced state hash: the same hash as `stateHash`, with turns of the event loop between its
 * slices, and of the state it was given even when the engine moves on meanwhile.
 */
import { reduce, stateHash } from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';
import { stateHashInSlices } from './sliced-hash.js';

function busyVenue(): TestVenue {
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  for (let i = 1; i <= 40; i++) {
    v.open(wallet(i));
    v.fund(wallet(i), '100000');
  }
  v.oracle({ 'BTC-PERP': '65000' });
  for (let i = 1; i <= 40; i++)
    v.place(wallet(i), 'BTC-PERP', { side: 'Buy', qty: '0.01', price: `${60000 + i}` });
  return v;
}

describe('stateHashInSlices', () => {
  it('gives stateHash, letting the event loop turn between slices', async () => {
    const v = busyVenue();
    let turns = 0;
    let counting = true;
    const count = (): void => {
      turns++;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    // A slice of 0 ms is one step of 512 values: a state of thousands yields many times.
    const hash = await stateHashInSlices(v.state, 0);
    counting = false;
    expect(hash).toBe(stateHash(v.state));
    expect(turns).toBeGreaterThan(3);
  });

  it('hashes the state it was given, whatever comes after it', async () => {
    const v = busyVenue();
    const before = v.state;
    const pending = stateHashInSlices(before, 0);
    const after = reduce(before, { type: 'openAccount', time: v.time + 1, account: wallet(99) });
    expect(await pending).toBe(stateHash(before));
    expect(stateHash(after.state)).not.toBe(stateHash(before));
  });

  it('gives up between slices when told to', async () => {
    let asked = 0;
    expect(await stateHashInSlices(busyVenue().state, 0, () => ++asked > 2)).toBeNull();
    expect(asked).toBe(3);
  });
});
