/**
 * docs/core-library.md as an embedder reads it. The `typescript` blocks (sections 5 and 6:
 * snapshots, branches, time, the in-memory journal and chain) run here as written, and this file
 * checks that they are its code; guide.test.ts does the same for the `ts` blocks. On top of that,
 * for every block of the page: each name an import line names is exported by the package it is
 * imported from (a doc that imports `px` from `@perp/core` instead of `@perp/core/testing` fails),
 * every block type-checks against the public API with the repository's strict settings (tests
 * are not type-checked otherwise: vitest strips types), the API names its prose puts in code
 * (`commandShapeProblem(command)`, `SNAPSHOT_VERSION`, `MemoryJournal.failNextAppend(error)`)
 * exist, and the page's relative links resolve.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { MemoryJournal, SimulatedChain } from '../../adapters-memory/src/index.js';
import {
  type Command,
  decodeSnapshot,
  depthOf,
  type EngineEvent,
  type EngineState,
  encodeJson,
  encodeSnapshot,
  nextWakeTime,
  reduce,
  reduceAll,
  stateHash,
} from '../src/index.js';
import { BTC_SETTINGS, px, TestVenue, wallet } from '../src/testing/index.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const GUIDE = join(ROOT, 'docs/core-library.md');

/** Where each package specifier the docs may import from lives in the sources. */
const SOURCES: Record<string, string> = {
  '@perp/core': 'packages/core/src/index.ts',
  '@perp/core/testing': 'packages/core/src/testing/index.ts',
  '@perp/adapters-memory': 'packages/adapters-memory/src/index.ts',
};

interface Block {
  lang: 'ts' | 'typescript';
  code: string;
  /** Index of the `## ` section the block is in (0 before the first). */
  section: number;
}

function blocksOf(markdown: string): Block[] {
  const blocks: Block[] = [];
  let section = 0;
  const re = /^## |^```(ts|typescript)\n([\s\S]*?)^```/gm;
  for (const m of markdown.matchAll(re)) {
    if (m[0].startsWith('## ')) section++;
    else blocks.push({ lang: m[1] as Block['lang'], code: m[2] as string, section });
  }
  return blocks;
}

const isImports = (code: string) => /^import\b/.test(code);

interface ImportLine {
  specifier: string;
  /** Value names (type-only names are left out: they do not exist at run time). */
  values: string[];
  types: string[];
  defaultName: string | null;
}

function importsOf(code: string): ImportLine[] {
  const lines: ImportLine[] = [];
  const re = /import\s+(?:(\w+)\s*,?\s*)?(?:\{([^}]*)\})?\s*from\s*'([^']+)'/g;
  for (const m of code.matchAll(re)) {
    const names = (m[2] ?? '')
      .split(',')
      .map((n) => n.trim())
      .filter((n) => n.length > 0);
    lines.push({
      specifier: m[3] as string,
      values: names.filter((n) => !n.startsWith('type ')),
      types: names.filter((n) => n.startsWith('type ')).map((n) => n.slice(5).trim()),
      defaultName: m[1] ?? null,
    });
  }
  return lines;
}

describe('docs/core-library.md for embedders', () => {
  it('5 and 6. snapshots, branches, time; an in-memory journal and chain', async () => {
    const v = new TestVenue();
    v.list(BTC_SETTINGS);
    const [maker, taker] = [wallet(1), wallet(2)];
    for (const w of [maker, taker]) {
      v.open(w);
      v.fund(w, '10000');
    }
    v.oracle({ 'BTC-PERP': '65000' });
    v.place(maker, 'BTC-PERP', { side: 'Sell', qty: '1', price: '65000' });
    const root = v.state;
    const rootHash = stateHash(root);
    const buy = (qty: string): Command => ({
      type: 'placeOrder',
      time: root.time + 1,
      account: taker,
      order: v.request('BTC-PERP', { side: 'Buy', qty, price: '65000', tif: 'IOC' }),
    });
    const small = reduce(root, buy('0.1'));
    const large = reduce(root, buy('0.9'));
    expect(stateHash(root)).toBe(rootHash); // neither branch touched the root
    // BTC_SETTINGS counts quantity in 4 decimals: 1 BTC is 10,000 units.
    expect(depthOf(small.state.markets.get(1)!.asks, 1)[0]?.quantity).toBe(9_000n);
    expect(depthOf(large.state.markets.get(1)!.asks, 1)[0]?.quantity).toBe(1_000n);

    const text = encodeSnapshot(small.state);
    const restored = decodeSnapshot(text);
    expect(stateHash(restored)).toBe(stateHash(small.state));
    const next: Command = {
      type: 'oracle',
      time: root.time + 2,
      prices: [{ market: 1, price: px('64000') }],
    };
    const fromRestored = reduce(restored, next);
    const fromLive = reduce(small.state, next);
    expect(stateHash(fromRestored.state)).toBe(stateHash(fromLive.state));
    expect(encodeJson(fromRestored.events)).toBe(encodeJson(fromLive.events));

    let s = fromLive.state;
    const due: EngineEvent[] = [];
    const until = s.time + 2 * 3_600_000;
    for (let t = nextWakeTime(s); t !== null && t <= until; t = nextWakeTime(s)) {
      const r = reduce(s, { type: 'tick', time: t });
      s = r.state;
      due.push(...r.events);
    }
    // Two hours: two funding settlements, each charging the taker's long and crediting the maker's short.
    expect(due.filter((e) => e.type === 'fundingSettled')).toHaveLength(2);

    const USD = 10n ** 6n;
    const VAULT = `0x${'d0'.repeat(20)}`;
    let state: EngineState = v.state; // the venue of section 5
    const journal = new MemoryJournal();
    const chain = new SimulatedChain({
      tokenName: 'Test USD',
      tokenAddress: `0x${'7e'.repeat(20)}`,
      vaultAddress: VAULT,
      verifyPermit: () => true, // a simulation: no signatures to check
      now: () => state.time, // the chain judges permit deadlines by engine time
    });
    async function submit(commands: Command[]): Promise<EngineEvent[][]> {
      const result = reduceAll(state, commands);
      state = result.state;
      // Only commands that changed the state need keeping: replaying those gives the same state.
      await journal.append(commands.filter((_, i) => result.changed[i]));
      return result.events;
    }

    const carol = wallet(3);
    chain.faucet(carol, 5_000n * USD); // test collateral in her wallet
    await submit([{ type: 'openAccount', time: state.time + 1, account: carol }]);
    const [depositEvents] = await submit([
      {
        type: 'deposit',
        time: state.time + 1,
        account: carol,
        amount: 3_000n * USD,
        target: { mode: 'Cross', market: 0 },
      },
    ]);
    const submitted = depositEvents?.find((e) => e.type === 'outcome');
    if (submitted?.type !== 'outcome' || !submitted.ok || submitted.kind !== 'command') {
      throw new Error('deposit refused');
    }
    const paid = await chain.executeDeposit({
      commandId: submitted.commandId,
      owner: carol,
      amount: 3_000n * USD,
      permit: {
        spender: VAULT,
        value: 3_000n * USD,
        nonce: await chain.permitNonce(carol),
        deadline: BigInt(Math.floor(state.time / 1000) + 60), // seconds
        signature: '0x', // verifyPermit above accepts anything
      },
    });
    await submit([
      {
        type: 'settleDeposit',
        time: state.time + 1,
        commandId: submitted.commandId,
        success: paid.ok,
        ...(paid.ok ? { txHash: paid.txHash } : { reason: paid.reason }),
      },
    ]);
    expect(await chain.balanceOf(carol)).toBe(2_000n * USD);
    expect(state.accounts.get(carol)?.crossCash).toBe(3_000n * USD);

    // The journal replays into the same state.
    const replay: Command[] = [];
    for await (const record of journal.read()) replay.push(record.command);
    expect(stateHash(reduceAll(v.state, replay).state)).toBe(stateHash(state));
  });

  const guide = readFileSync(GUIDE, 'utf8');
  const blocks = blocksOf(guide);

  it('every typescript block of the guide is code of this file', () => {
    const self = readFileSync(fileURLToPath(import.meta.url), 'utf8');
    const squash = (text: string) => text.replace(/\s+/g, ' ').trim();
    const own = blocks.filter((b) => b.lang === 'typescript');
    expect(own.length).toBeGreaterThanOrEqual(4);
    const header = self.slice(0, self.indexOf('\ndescribe('));
    for (const block of own) {
      if (isImports(block.code)) {
        // Names from the project's packages; the intro's vitest and fast-check lines are
        // checked by the compile below.
        for (const line of importsOf(block.code).filter((l) => l.specifier in SOURCES)) {
          for (const name of [...line.values, ...line.types, line.defaultName ?? 'import']) {
            expect(header).toMatch(new RegExp(`\\b${name}\\b`));
          }
        }
        continue;
      }
      const where = `section ${block.section} block starting "${block.code.split('\n')[0]}"`;
      expect(squash(self).includes(squash(block.code)), `${where} is not code of this file`).toBe(
        true,
      );
    }
  });

  it('every name the guide imports is exported by the package it names', async () => {
    const lines = blocks.filter((b) => isImports(b.code)).flatMap((b) => importsOf(b.code));
    expect(lines.length).toBeGreaterThanOrEqual(4);
    for (const line of lines) {
      const source = SOURCES[line.specifier];
      if (source === undefined) {
        // Third-party: it must at least be installed at the root.
        expect(existsSync(join(ROOT, 'node_modules', line.specifier)), line.specifier).toBe(true);
        continue;
      }
      // The subpath is one the package exports, and the name is among its exports.
      const [scope, name, ...rest] = line.specifier.split('/');
      const manifest = JSON.parse(
        readFileSync(join(ROOT, 'packages', name as string, 'package.json'), 'utf8'),
      ) as { name: string; exports: Record<string, unknown> };
      expect(manifest.name).toBe(`${scope}/${name}`);
      expect(Object.keys(manifest.exports)).toContain(['.', ...rest].join('/'));
      const module = (await import(join(ROOT, source))) as Record<string, unknown>;
      for (const value of line.values) {
        expect(module[value], `${value} from '${line.specifier}'`).toBeDefined();
      }
      // Type-only names are checked by the compile below.
    }
  });

  it('every block type-checks against the public API', () => {
    // One module per run of sections sharing imports: a block that re-imports a name already
    // imported starts a new module (section 5 starts over, section 6 continues it).
    const modules: { imports: string[]; code: string[] }[] = [];
    let current: { imports: string[]; code: string[]; names: Set<string> } | undefined;
    for (const block of blocks) {
      if (isImports(block.code)) {
        const names = importsOf(block.code).flatMap((l) => [
          ...l.values,
          ...l.types,
          ...(l.defaultName === null ? [] : [l.defaultName]),
        ]);
        const clash = current === undefined || names.some((n) => current?.names.has(n));
        if (clash && (current === undefined || current.code.length > 0)) {
          current = { imports: [], code: [], names: new Set() };
          modules.push(current);
        }
        for (const n of names) current?.names.add(n);
        current?.imports.push(block.code);
      } else {
        current?.code.push(block.code);
      }
    }
    expect(modules.length).toBeGreaterThanOrEqual(2);
    const files = new Map<string, string>();
    modules.forEach((m, i) => {
      const imports = m.imports.join('\n');
      // The page's intro tells a script to import expect and fc; add them where not imported.
      const extra = [
        /\bexpect\b/.test(imports) ? '' : "import { expect } from 'vitest';",
        /\bfc\b/.test(imports) ? '' : "import fc from 'fast-check';",
      ];
      const body = m.code.join('\n');
      files.set(
        join(ROOT, `packages/core/test/__guide_example_${i}.ts`),
        `${extra.join('\n')}\n${imports}\nexport async function example() {\n${body}\n}\n`,
      );
    });
    const options: ts.CompilerOptions = {
      target: ts.ScriptTarget.ES2022,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      strict: true,
      noUncheckedIndexedAccess: true,
      exactOptionalPropertyTypes: true,
      noImplicitReturns: true,
      skipLibCheck: true,
      noEmit: true,
      types: ['node'],
      lib: ['lib.es2022.d.ts'],
      paths: Object.fromEntries(
        Object.entries(SOURCES).map(([spec, path]) => [spec, [join(ROOT, path)]]),
      ),
    };
    const host = ts.createCompilerHost(options);
    const { fileExists, readFile, getSourceFile } = host;
    host.fileExists = (f) => files.has(f) || fileExists.call(host, f);
    host.readFile = (f) => files.get(f) ?? readFile.call(host, f);
    host.getSourceFile = (f, lang, ...rest) => {
      const text = files.get(f);
      return text === undefined
        ? getSourceFile.call(host, f, lang, ...rest)
        : ts.createSourceFile(f, text, lang);
    };
    const program = ts.createProgram([...files.keys()], options, host);
    const problems = [...files.keys()].flatMap((f) =>
      ts.getPreEmitDiagnostics(program, program.getSourceFile(f)).map((d) => {
        // Name the doc's line, not the generated file's: the guide is what needs fixing.
        const line =
          d.file && d.start !== undefined
            ? (d.file.text.split('\n')[d.file.getLineAndCharacterOfPosition(d.start).line] ?? '')
            : '';
        return `${ts.flattenDiagnosticMessageText(d.messageText, '\n')} at: ${line.trim()}`;
      }),
    );
    expect(problems).toEqual([]);
  });

  it('every API name the prose of the guide puts in code is one the packages export', () => {
    // Inline code that is a call (`commandShapeProblem(command)`, `MemoryJournal.failNextAppend(e)`,
    // `toSnapshot()`), a PascalCase name (`TestVenue`, `JournalStore`) or a CONSTANT
    // (`SNAPSHOT_VERSION`): an export of one of the packages, or a member of an exported class.
    const notApi = new Set(['ERR_MODULE_NOT_FOUND', 'FC_NUM_RUNS', 'Order']);
    const prose = guide.replace(/^```[\s\S]*?^```/gm, '');
    const program = ts.createProgram(
      Object.values(SOURCES).map((path) => join(ROOT, path)),
      { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext },
    );
    const checker = program.getTypeChecker();
    const exported = new Set<string>();
    const members = new Map<string, Set<string>>();
    for (const path of Object.values(SOURCES)) {
      const module = checker.getSymbolAtLocation(program.getSourceFile(join(ROOT, path))!)!;
      for (const symbol of checker.getExportsOfModule(module)) {
        exported.add(symbol.name);
        const target =
          symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
        const names = new Set<string>();
        for (const table of [target.members, target.exports]) {
          for (const name of table?.keys() ?? []) names.add(String(name));
        }
        members.set(symbol.name, names);
      }
    }
    const checked: string[] = [];
    const unknown: string[] = [];
    for (const [, span] of prose.matchAll(/`([^`\n]+)`/g)) {
      const m = /^([A-Za-z_$][\w$]*)(?:\.([A-Za-z_$][\w$]*))?(\(.*\))?$/.exec(span!.trim());
      if (m === null) continue;
      const [, head, member, call] = m as unknown as [string, string, string | undefined, string];
      const api = call !== undefined || /^[A-Z][A-Za-z0-9]*[a-z]|^[A-Z][A-Z0-9_]{2,}$/.test(head);
      if (!api || notApi.has(head) || (member !== undefined && !/^[A-Z]/.test(head))) continue;
      checked.push(span!);
      const known =
        member !== undefined
          ? members.get(head)?.has(member) === true
          : exported.has(head) || [...members.values()].some((names) => names.has(head));
      if (!known) unknown.push(span!);
    }
    expect(checked.length).toBeGreaterThan(10);
    expect(unknown).toEqual([]);
  });

  it('the relative links of the embedding docs resolve', () => {
    for (const doc of ['docs/core-library.md', 'docs/architecture.md', 'README.md']) {
      const text = readFileSync(join(ROOT, doc), 'utf8');
      for (const m of text.matchAll(/\]\(([^)#\s]+)(?:#[^)]*)?\)/g)) {
        const target = m[1] as string;
        if (/^[a-z]+:/.test(target)) continue; // http(s), mailto
        expect(existsSync(resolve(ROOT, dirname(doc), target)), `${doc} -> ${target}`).toBe(true);
      }
    }
  });
});
