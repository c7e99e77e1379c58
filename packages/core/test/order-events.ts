/**
 * Readers of a command's events shared by the order tests (the outcome and the reports
 * themselves come from `TestVenue.outcome` and `TestVenue.reports`).
 */
import type { EngineEvent, ExecutionReport, OrderReport, Outcome } from '../src/index.js';
import { BTC_SETTINGS, replacer, TestVenue, wallet } from '../src/testing/index.js';

/**
 * The order tests' venue: BTC-PERP listed, purity checked after every command, wallets 0xa, 0xb
 * and 0xc open and funded 1,000,000 USD (margin never limits these cases), the oracle at 65,000.
 */
export function btcOrderVenue(): TestVenue {
  const v = new TestVenue({ checkPurity: true });
  v.list(BTC_SETTINGS);
  for (const w of [wallet(0xa), wallet(0xb), wallet(0xc)]) {
    v.open(w);
    v.fund(w, '1000000');
  }
  v.oracle({ 'BTC-PERP': '65000' });
  return v;
}

/** The id of the order an accepted placement created; throws on any other outcome. */
export function orderIdOf(events: readonly EngineEvent[]): number {
  const o = events.find((e): e is Outcome => e.type === 'outcome');
  if (o?.ok && 'order' in o) return o.order.orderId;
  throw new Error(`no order in outcome ${JSON.stringify(o, replacer)}`);
}

/** `kind:reason#orderId` of each order report of `account`. */
export function kinds(events: readonly EngineEvent[], account: string): string[] {
  return events
    .filter((e): e is ExecutionReport => e.type === 'executionReport' && e.account === account)
    .map((r) => {
      const o = (r as OrderReport).order;
      return `${r.kind}${o.reason ? `:${o.reason}` : ''}#${o.orderId}`;
    });
}
