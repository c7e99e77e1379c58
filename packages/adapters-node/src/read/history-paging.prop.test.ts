/**
 * `GET /account/trades` and `GET /historic/orders` read an account's rows in arrival order
 * without sorting them (`pageInOrder` in `history.ts`): every page, followed cursor by cursor, is
 * the page of the plain definition (filter, newest first by time then id, window, cursor,
 * limit), whether the rows arrived in order or not (properties).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type HistoryQuery, HistoryStore, page, pageInOrder, type TradeRecord } from './history.js';

const ACCOUNT = `0x${'1'.repeat(40)}`;
const T0 = 1_767_225_600_000;
const HOUR = 3_600_000;

function row(
  time: number,
  execId: number,
  instrument: string,
  orderId: string | null,
): TradeRecord {
  return {
    tradeId: String(execId),
    time,
    execId: String(execId),
    seq: execId,
    orderId,
    cloid: orderId === null ? null : `0x${orderId.padStart(32, '0')}`,
    market: 1,
    marginMode: 'Cross',
    source: orderId === null ? 'Liquidation' : 'Order',
    busted: false,
    bustTime: null,
    bustReason: null,
    instrument,
    side: 'Buy',
    lastPx: '65000',
    lastQty: '0.01',
    fee: '0.1',
  } as unknown as TradeRecord;
}

/** The definition: every wanted row, newest first, in the window, after the cursor, `limit`. */
function reference(rows: TradeRecord[], q: HistoryQuery, now: number, after?: TradeRecord) {
  const lookup = q.orderId !== undefined || q.cloid !== undefined;
  const end = q.endTime ?? now + 1;
  const start = q.startTime ?? (lookup ? 0 : end - 7 * 86_400_000);
  const older = (a: TradeRecord, b: TradeRecord) =>
    a.time !== b.time ? a.time < b.time : BigInt(a.execId) < BigInt(b.execId);
  return rows
    .filter(
      (t) =>
        (q.instrument === undefined || t.instrument === q.instrument) &&
        (q.orderId === undefined || t.orderId === q.orderId) &&
        (q.cloid === undefined || t.cloid === q.cloid),
    )
    .filter((t) => t.time >= start && t.time < end)
    .filter((t) => after === undefined || older(t, after))
    .sort((a, b) => (older(a, b) ? 1 : older(b, a) ? -1 : 0));
}

const rowsArb = fc
  .array(
    fc.record({
      // Hours, as the windows below: rows at a window's exact edges are common.
      gap: fc.oneof(
        fc.constant(0),
        fc.integer({ min: 1, max: 72 }).map((h) => h * HOUR),
      ),
      instrument: fc.constantFrom('BTC-PERP', 'ETH-PERP'),
      order: fc.option(fc.integer({ min: 1, max: 6 }), { nil: null }),
    }),
    { maxLength: 60 },
  )
  .map((specs) => {
    let time = T0;
    return specs.map((s, i) => {
      time += s.gap;
      return row(time, i + 1, s.instrument, s.order === null ? null : String(s.order));
    });
  });

const queryArb = fc.record(
  {
    instrument: fc.constantFrom('BTC-PERP', 'ETH-PERP'),
    orderId: fc.integer({ min: 1, max: 6 }).map(String),
    startTime: fc.integer({ min: -24, max: 40 * 24 }).map((h) => T0 + h * HOUR),
    endTime: fc.integer({ min: 0, max: 60 * 24 }).map((h) => T0 + h * HOUR),
    limit: fc.integer({ min: 1, max: 7 }),
  },
  { requiredKeys: [] },
);

/** Every page of `q`, following the cursors. */
function allPages(h: HistoryStore, q: HistoryQuery, now: number): TradeRecord[][] {
  const pages: TradeRecord[][] = [];
  let cursor: string | undefined;
  for (let i = 0; i < 100; i++) {
    const p = h.trades(ACCOUNT, cursor === undefined ? q : { ...q, cursor }, now);
    pages.push(p.rows);
    if (p.nextCursor === null) return pages;
    cursor = p.nextCursor;
  }
  throw new Error('paging never ended');
}

function check(rows: TradeRecord[], arrival: TradeRecord[], q: HistoryQuery, now: number): void {
  const h = new HistoryStore();
  for (const r of arrival) h.addSystemTrade(ACCOUNT, r);
  const pages = allPages(h, q, now);
  const limit = q.limit ?? 100;
  let after: TradeRecord | undefined;
  for (const p of pages) {
    expect(p).toEqual(reference(rows, q, now, after).slice(0, limit));
    after = p[p.length - 1];
  }
  // Nothing is left after the last page.
  if (after !== undefined) expect(reference(rows, q, now, after)).toEqual([]);
}

describe('the trades read, paged without sorting', () => {
  it('gives the pages of the definition for rows in arrival order', () => {
    fc.assert(
      fc.property(rowsArb, queryArb, fc.integer({ min: 0, max: 50 * 24 }), (rows, q, nowHours) => {
        // `now + 1` is the default end: a row at `now` is in, one an hour later is not.
        check(rows, rows, q, T0 + nowHours * HOUR);
      }),
      { numRuns: 1000 },
    );
  });

  it('and for rows that arrived out of order (the sorting path)', () => {
    fc.assert(
      fc.property(rowsArb, queryArb, fc.integer({ min: 0, max: 50 * 24 }), (rows, q, nowHours) => {
        check(rows, [...rows].reverse(), q, T0 + nowHours * HOUR);
      }),
      { numRuns: 300 },
    );
  });

  it('pages rows in key order exactly as sorting them would (orders and trades alike)', () => {
    // Keys as an order's: creation time (hours, so window edges meet) and a numeric id.
    const rowsOf = fc
      .array(fc.record({ gap: fc.integer({ min: 0, max: 48 }), tag: fc.constantFrom('a', 'b') }), {
        maxLength: 50,
      })
      .map((specs) => {
        let t = T0;
        return specs.map((x, i) => {
          t += x.gap * HOUR;
          return { t, id: String(10 * i + 7), tag: x.tag };
        });
      });
    fc.assert(
      fc.property(
        rowsOf,
        fc.constantFrom<'a' | 'b' | undefined>('a', 'b', undefined),
        queryArb,
        fc.integer({ min: 0, max: 50 * 24 }),
        (rows, tag, q, nowHours) => {
          const now = T0 + nowHours * HOUR;
          const query: HistoryQuery = {
            startTime: q.startTime,
            endTime: q.endTime,
            limit: q.limit,
          };
          const wanted = (r: { tag: string }) => tag === undefined || r.tag === tag;
          const key = (r: { t: number; id: string }) => ({ t: r.t, id: r.id });
          let cursor: string | undefined;
          for (let i = 0; i < 100; i++) {
            const qi = cursor === undefined ? query : { ...query, cursor };
            const fast = pageInOrder('orders', rows, key, wanted, qi, now);
            expect(fast).toEqual(page('orders', rows.filter(wanted), key, qi, now));
            if (fast.nextCursor === null) return;
            cursor = fast.nextCursor;
          }
          throw new Error('paging never ended');
        },
      ),
      { numRuns: 1000 },
    );
  });
});
