/**
 * The core error table and the interface spec's WebSocket error table must list the same
 * (code, name) pairs, in both directions. The spec is read from ../shared beside the repository
 * when present; a committed copy of its table keeps the test meaningful without it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ERROR_TABLE, ErrorCode, errorInfo } from '../src/index.js';

const specPath = resolve(__dirname, '../../../../shared/spec/interface-spec.md');
const copyPath = resolve(__dirname, 'vectors/spec-error-table.md');

function parseTable(markdown: string): [number, string][] {
  const section = markdown.split('### WebSocket error codes')[1] ?? '';
  const rows: [number, string][] = [];
  for (const line of section.split('\n')) {
    const m = /^\|\s*(\d{4})\s*\|\s*([A-Z_]+)\s*\|/.exec(line);
    if (m) rows.push([Number(m[1]), m[2]!]);
    else if (rows.length > 0 && !line.startsWith('|')) break;
  }
  return rows;
}

describe('error table', () => {
  const sources = [copyPath, ...(existsSync(specPath) ? [specPath] : [])];
  it.each(sources)('matches the spec table in %s, both ways', (path) => {
    const spec = parseTable(readFileSync(path, 'utf8'));
    expect(spec.length).toBeGreaterThan(20);
    const core = ERROR_TABLE.map((e) => [e.code, e.name] as [number, string]);
    expect(core).toEqual(spec);
    for (const [code, name] of spec) {
      expect(ErrorCode[name as keyof typeof ErrorCode]).toBe(code);
      expect(errorInfo(code)?.name).toBe(name);
    }
  });

  it('keeps every code inside the spec ranges with an owner', () => {
    for (const e of ERROR_TABLE) {
      expect(['core', 'adapter']).toContain(e.owner);
      const inRange =
        (e.code >= 4000 && e.code <= 4019) ||
        (e.code >= 4020 && e.code <= 4049) ||
        (e.code >= 4100 && e.code <= 4199) ||
        (e.code >= 5000 && e.code <= 5099);
      expect(inRange).toBe(true);
    }
  });
});
