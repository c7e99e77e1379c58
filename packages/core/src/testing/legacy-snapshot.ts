/**
 * Snapshot text as builds before snapshot version 9 wrote it, for tests of the conversions.
 *
 * @module
 */
import { encodeSnapshot, SNAPSHOT_VERSION } from '../engine/snapshot.js';
import type { EngineState } from '../engine/types.js';

/**
 * The snapshot text of `state` labelled as `version` (at most 8) and in that version's form:
 * every record a JSON object, the trade log an IntMap of trade records. Leave out of `state` the
 * fields that version did not have.
 */
export function legacySnapshotText(version: number, state: EngineState): string {
  if (version >= 9) throw new RangeError(`version ${version} writes records as shapes`);
  const current = JSON.parse(encodeSnapshot(state)) as { v: number; state: unknown };
  if (current.v !== SNAPSHOT_VERSION) throw new Error(`expected version ${SNAPSHOT_VERSION}`);
  return JSON.stringify({ v: version, state: recordObjects(current.state, []) });
}

/** Snapshot JSON with each `"S"`/`"R"` record as a JSON object and `"L"` as an `"i"` map. */
function recordObjects(value: unknown, shapes: string[][]): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (!Array.isArray(value)) throw new Error('a version-9 snapshot holds no JSON objects');
  const tag: unknown = value[0];
  if (tag === 'L') {
    const [, fields, kinds, ...rows] = value as [string, string[], string, ...unknown[]];
    const entries: unknown[] = ['i'];
    const strings: string[] = [];
    for (let i = 0; i < rows.length; i += 2) {
      const trade: Record<string, unknown> = {};
      fields.forEach((k, f) => {
        const cell = (rows[i + 1] as unknown[])[f];
        if (kinds[f] === 'n') trade[k] = ['n', cell];
        else if (kinds[f] !== 's') trade[k] = recordObjects(cell, shapes);
        else if (typeof cell === 'string') {
          strings.push(cell);
          trade[k] = cell;
        } else trade[k] = strings[cell as number];
      });
      entries.push(rows[i], trade);
    }
    return entries;
  }
  if (tag !== 'S' && tag !== 'R') return value.map((v) => recordObjects(v, shapes));
  const keys = tag === 'S' ? (value[1] as string[]) : (shapes[value[1] as number] as string[]);
  if (tag === 'S') shapes.push(keys);
  const record: Record<string, unknown> = {};
  keys.forEach((k, i) => {
    record[k] = recordObjects(value[i + 2], shapes);
  });
  return record;
}
