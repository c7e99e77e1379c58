/**
 * What a library user is promised beyond the types (found by a review):
 * 1. the API reference (`pnpm docs`) covers every entry point a package exports, so
 *    `@perp/core/testing` (TestVenue, runSimulation, the builders) is documented;
 * 2. `decodeSnapshot` throws `SnapshotFormatError` for damaged content too, not the `RangeError`
 *    of the structure it was rebuilding;
 * 3. a command without a proper `time` is a host bug: `reduce` throws `InvariantError` naming
 *    it, as docs/core-library.md section 5 says;
 * 4. every name the library's entry points export has a TSDoc comment (what the API reference
 *    and an editor's hover show).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import {
  type Command,
  decodeSnapshot,
  encodeSnapshot,
  InvariantError,
  reduce,
  SnapshotFormatError,
} from '@perp/core';
import { BTC_SETTINGS, TestVenue, wallet } from '@perp/core/testing';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

describe('library promises', () => {
  it('the API reference covers every entry point the package exports', () => {
    const read = (path: string) =>
      JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as Record<string, unknown>;
    const exported = Object.values(
      read('../package.json').exports as Record<string, { source: string }>,
    ).map((e) => e.source.replace(/^\.\//, ''));
    expect(exported).toContain('src/testing/index.ts');
    expect(read('../typedoc.json').entryPoints).toEqual(exported);
  });

  it('decodeSnapshot throws SnapshotFormatError for a trade stored under another id', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    const [a, b] = [wallet(1), wallet(2)];
    for (const w of [a, b]) {
      v.open(w);
      v.fund(w, '100000');
    }
    v.oracle({ 'BTC-PERP': '65000' });
    v.place(b, 'BTC-PERP', { side: 'Sell', qty: '1', price: '65000' });
    v.place(a, 'BTC-PERP', { side: 'Buy', qty: '1', price: '65000' });
    const text = encodeSnapshot(v.state);
    // The trade table's first row: key 1, a row whose first field, tradeId, is 1.
    const first = /\["L",\["tradeId",[^\]]*\],"[nsv]+",1,\[1,/.exec(text)?.[0];
    expect(first).toBeDefined();
    const bad = text.replace(first!, `${first!.slice(0, -2)}2,`);
    expect(() => JSON.parse(bad)).not.toThrow();
    // The trade log's own check throws RangeError "trade 2 stored under 1" underneath.
    expect(() => decodeSnapshot(bad)).toThrow(SnapshotFormatError);
  });

  it('a command without a time is a host bug: reduce throws InvariantError naming it', () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    const command = { type: 'openAccount', account: wallet(1) } as unknown as Command;
    expect(() => reduce(v.state, command)).toThrow(InvariantError);
    expect(() => reduce(v.state, command)).toThrow(/command time undefined/);
  });

  it('every name the entry points export has a TSDoc comment', () => {
    const entries = [
      '../src/index.ts',
      '../src/testing/index.ts',
      '../../adapters-memory/src/index.ts',
    ].map((path) => fileURLToPath(new URL(path, import.meta.url)));
    const program = ts.createProgram(entries, {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      skipLibCheck: true,
      noEmit: true,
    });
    const checker = program.getTypeChecker();
    const undocumented: string[] = [];
    for (const entry of entries) {
      const module = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
      const exported = checker.getExportsOfModule(module);
      expect(exported.length).toBeGreaterThan(10);
      for (const symbol of exported) {
        const target =
          symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
        const doc = ts.displayPartsToString(target.getDocumentationComment(checker)).trim();
        if (doc === '') undocumented.push(`${symbol.name} (${entry.split('/packages/')[1]})`);
      }
    }
    expect(undocumented).toEqual([]);
  });
});
