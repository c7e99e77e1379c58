/**
 * Diff review: docs/durability.md's "Rules versions so far" tells an operator what each engine
 * rules version changed (what may reduce differently when old records are replayed under it,
 * `--replay-under-new-rules`). Row 4 lists only the working-order cap, but the same version also
 * changed the outcome of `withdraw`, `transferMargin` and `updateLeverage` for an account that is
 * not a lowercase 0x address (commit a3a5bc3): under rules 3 such a command was accepted and
 * opened an account under that spelling; under rules 4 it is refused with 4000 and changes
 * nothing (test/account-address.test.ts). A core-library user replaying a log of rules 3 (the
 * unsigned path of simulations and tests, docs/core-library.md "A journal outlives the build")
 * gets different states and is not told why.
 */
import { readFileSync } from 'node:fs';
import { ENGINE_RULES_VERSION, outcomeOf } from '@perp/core';
import { BTC_SETTINGS, TestVenue } from '@perp/core/testing';
import { describe, expect, it } from 'vitest';

const row = (version: number): string => {
  const text = readFileSync(new URL('../../../docs/durability.md', import.meta.url), 'utf8');
  const line = text.split('\n').find((l) => l.startsWith(`| ${version} `));
  if (line === undefined) throw new Error(`no row for rules ${version}`);
  return line;
};

describe('docs/durability.md, rules version 4', () => {
  it('the behaviour change exists under this version', () => {
    expect(ENGINE_RULES_VERSION).toBe(4);
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    const out = outcomeOf(
      v.run({
        type: 'updateLeverage',
        account: `0x${'AB'.repeat(20)}`,
        market: 1,
        mode: 'Cross',
        leverage: 500,
      }),
    );
    expect(out).toMatchObject({ ok: false, code: 4000 });
  });

  it('names the account-spelling refusal of withdraw, transferMargin and updateLeverage', () => {
    // Actual: the row speaks of the working-order cap only.
    expect(row(4)).toMatch(/lowercase|account spelling|updateLeverage/);
  });
});
