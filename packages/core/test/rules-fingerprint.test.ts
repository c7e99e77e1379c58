/**
 * The engine rules fingerprint: what fixed command logs reduce to (state hash and a hash of every
 * event), pinned per {@link ENGINE_RULES_VERSION}. A venue refuses to replay journal records
 * written under other rules (docs/durability.md, "Upgrades"), which only works if the version
 * changes whenever the results do: this test fails on any change of results and says what to do.
 *
 * The logs: the seeded crash simulation (makers, leveraged cross and isolated takers, a crash,
 * liquidations through the book, auctions, claims, ADL, funding) and a seeded tour of every other
 * command and order kind (triggers, FOK, post-only, reduce-only, managed SL/TP, replaces, cloids,
 * expiries, transfers, withdrawals, leverage, busts, referrals, a working-order cap), refusals
 * included. Both use in-house PRNGs, so no library upgrade moves them.
 *
 * A third log, seeded cases at the margin rules' edges, exists because random flow never reached
 * the maker re-check of a flip (this week's rule change there moved neither of the other two). A
 * fourth, `followers` (from version 6), covers the orders that follow a position or an entry
 * order: managed children armed, busted, placed late and fired, and a reduce-only stop that rests;
 * from version 7 it ends with busts of fills that a liquidation followed.
 *
 * It is a coarse guard, not a proof: by mutation it catches a changed fee rounding, liquidation
 * step and the old maker-flip rule, but a narrow enough rule can pass unseen. Whoever changes a
 * rule bumps the version whether or not this test notices.
 */
import { keccak_256 } from '@noble/hashes/sha3.js';
import { bytesToHex, utf8ToBytes } from '@noble/hashes/utils.js';
import { describe, expect, it } from 'vitest';
import {
  type Command,
  canonicalText,
  ENGINE_RULES_VERSION,
  type EngineEvent,
  ORDER_TYPES,
  type OrderType,
  stateHash,
  TIME_IN_FORCES,
  type TimeInForce,
} from '../src/index.js';
import {
  BTC_SETTINGS,
  cloid,
  ETH_SETTINGS,
  type OrderSpec,
  prng,
  px,
  runSimulation,
  TestVenue,
  usd,
  wallet,
  wholeLotSettings,
} from '../src/testing/index.js';

/**
 * Per rules version, what the logs give. When this test fails:
 * - if the change alters what some command does (a fill, a refusal, a rounding, an order of
 *   work), bump ENGINE_RULES_VERSION in src/engine/rules.ts and add the new line here;
 * - if it only changes the state's layout or the events' form (same results), replace the line
 *   of the current version (and bump SNAPSHOT_VERSION if a snapshot's meaning changed).
 */
const FINGERPRINTS: Record<
  number,
  { simulation: Hashes; tour: Hashes; edges: Hashes; followers?: Hashes }
> = {
  1: {
    simulation: {
      state: '0x84bbe27f40a3ac0d9df609c2f6922ca996f75e268d7cc73c8e4c7a862594edd8',
      events: '0x160db77b12567abc9f7b6faf473b6ca49d38e4e67c643fb8d750e163b296ed22',
    },
    tour: {
      state: '0x0bd5d3f5013629e2aa407240cf9ce0a67003092269673f52b521cc1ef261c3de',
      events: '0x852e8421510db14d28783207225a329907ec84d16c84e197817186d349b55d81',
    },
    edges: {
      state: '0x34ce2ec240862a429a1d10dcf6d7fd8182770052a8a9e7a72c4ca5e7f9ff8d2f',
      events: '0x62a6e81f835cb3b7d87a5b615c2f79b12bf796b5ddbfb643e505cc96f6df696f',
    },
  },
  // 2: the entry price re-weighted by the open size after a reduce; a trigger order re-checked
  // against the open-interest cap when it fires; an amend refused for the order's state and a
  // claim of an ended auction consume their nonce; claim reservations bound maker fills and
  // leverage cuts (none of the three logs reaches that one); a lengthened funding interval pays
  // from the last settlement (nor that one); a withdrawal pushes the summary at acceptance;
  // entry children, paused-market triggers and cloid take-back (entry-children.test.ts; the
  // three logs reach none of them); liquidation edges (liquidation-edges.test.ts; these move
  // the crash simulation).
  2: {
    simulation: {
      state: '0x7dd348e88b6030c65ddb8f016a157a6a5dcc553fd2dc5dd7f025d407a471c959',
      events: '0xfe2c9a4fd950a22cb55fd6e0be7ea5d74c3d97d5b49b7dad4749b9ef267147ff',
    },
    tour: {
      state: '0x9c3ce9923d459e2457a2c8e6192bcec731521cf7810b1feef604b7eb2353ee9d',
      events: '0x78206e4b04487c956542327feaa1715ddb37bec1bb1d3e89eb475e483f01a73c',
    },
    edges: {
      state: '0xb5e7d8b6c755b9505afa444177cfb5ee5b6a0458dd2c3b171f88d8b13681118e',
      events: '0x0ca891f1bfb187f0cdee80f6b467d04e03e7f47f35d8ec25e5c3b68147436391',
    },
  },
  // 3: leverage caps (the margin tier with the side's other resting orders filled, re-checked
  // when a trigger fires and when a maker fill opens, raising leverage with orders resting,
  // auction claims, an amend that opens no more left uncapped, lowering never capped by a tier) and no maker rebate on a liquidation's fills
  // (leverage-caps.test.ts; the three logs use no tiers and no rebates); a lot size change
  // refused while a position is off the new grid; a filled managed child cancels only the
  // siblings of its own entry order, now recorded by id (`entryOrderId`, which every order view
  // carries, so all three hashes moved).
  3: {
    simulation: {
      state: '0x85eb377c96dea8e86ec987cbde9ac23f288f9e105222d0a1c8ca21aa8e65dc89',
      events: '0x65b3d1e1902edd76610aad67e3439d8ef81ed00c54a70ca4430b8c3125ecf507',
    },
    tour: {
      state: '0xa23ef6a2271dbf2cd394a4d5451b8d8145bcd034cc53688923909283932c1e74',
      events: '0x6b2a8d24c7bec6af775c3925d03692248152f45b4e01e6a57ef20a0c24d9c9c8',
    },
    edges: {
      state: '0xb5e7d8b6c755b9505afa444177cfb5ee5b6a0458dd2c3b171f88d8b13681118e',
      events: '0x4904248b6aa5e5675ef717d51cc6be0ab0d401770b040f65b81368807b9002bf',
    },
  },
  // 4: a per-account cap on working orders (`maxWorkingOrdersPerAccount`, default 1,000, set by
  // the new `setVenueSettings`): a placement that could rest beyond it is refused with 4000
  // (working-order-cap.test.ts). The venue settings carry the cap, so every state hash moved;
  // the simulation and the edges never reach 1,000 orders on one account (their events did not
  // move), so the tour now sets a cap of 3 at its start and reaches it (the tour of versions 1-3
  // had no such command). The cap is the last check of a placement: an order another rule
  // refuses gets that rule's refusal (version 4 was re-pinned for this before it was released).
  4: {
    simulation: {
      state: '0x69806535391f12770053d01b1048aa5f94e38984b7a98d8fe6b113a2d669a338',
      events: '0x65b3d1e1902edd76610aad67e3439d8ef81ed00c54a70ca4430b8c3125ecf507',
    },
    tour: {
      state: '0x75d51de676b98eed8b125c974783b1fb8bf57f5e5d4419924f7d4600acd1be25',
      events: '0x488b3468fc09fb1780870cf62dc98ee02cabb6a24733cb4cffddbcc4b9b61654',
    },
    edges: {
      state: '0x7ec44de2a533d1f2dceb851d1408fef08aa1405c7694441e5c2008e68d70c7de',
      events: '0x4904248b6aa5e5675ef717d51cc6be0ab0d401770b040f65b81368807b9002bf',
    },
  },
  // 5: execution reports of managed and reduce-only orders (a triggered stop that partly fills
  // and rests re-clamps its scope once, so no order is amended twice for one fill; a managed
  // child that its entry's last fill ends is sized by that fill first) and a bust of an entry's
  // fill re-sizing its armed children by the fills left (order-follow-edges.test.ts,
  // entry-children.test.ts, execution-reports.prop.test.ts). The three logs reach none of them:
  // the hashes are version 4's.
  5: {
    simulation: {
      state: '0x69806535391f12770053d01b1048aa5f94e38984b7a98d8fe6b113a2d669a338',
      events: '0x65b3d1e1902edd76610aad67e3439d8ef81ed00c54a70ca4430b8c3125ecf507',
    },
    tour: {
      state: '0x75d51de676b98eed8b125c974783b1fb8bf57f5e5d4419924f7d4600acd1be25',
      events: '0x488b3468fc09fb1780870cf62dc98ee02cabb6a24733cb4cffddbcc4b9b61654',
    },
    edges: {
      state: '0x7ec44de2a533d1f2dceb851d1408fef08aa1405c7694441e5c2008e68d70c7de',
      events: '0x4904248b6aa5e5675ef717d51cc6be0ab0d401770b040f65b81368807b9002bf',
    },
  },
  // 6: a managed child placed after its entry's first fill is sized by those fills and armed at
  // once (entry-children.test.ts). A fourth log, `followers`, joins here: the three others reach
  // none of rules 5's and 6's changes, and it moves under each of the four (checked by reverting
  // each fix). The three others' hashes are version 5's.
  6: {
    simulation: {
      state: '0x69806535391f12770053d01b1048aa5f94e38984b7a98d8fe6b113a2d669a338',
      events: '0x65b3d1e1902edd76610aad67e3439d8ef81ed00c54a70ca4430b8c3125ecf507',
    },
    tour: {
      state: '0x75d51de676b98eed8b125c974783b1fb8bf57f5e5d4419924f7d4600acd1be25',
      events: '0x488b3468fc09fb1780870cf62dc98ee02cabb6a24733cb4cffddbcc4b9b61654',
    },
    edges: {
      state: '0x7ec44de2a533d1f2dceb851d1408fef08aa1405c7694441e5c2008e68d70c7de',
      events: '0x4904248b6aa5e5675ef717d51cc6be0ab0d401770b040f65b81368807b9002bf',
    },
    followers: {
      state: '0x2ec6731fc9af916b63cd293477ca17d58933c1af2bc26393bc2b716e4d3b81bb',
      events: '0x0444f8f6924b6580f20f6f57aa206a5b3e32b06444d23a55cafa809ea9c82742',
    },
  },
  // 7: the engine reports its re-sizing of a waiting managed TP/SL (`OrderReplaced` with reason
  // `PositionChanged`, `ParentFilled` or `ParentBust`, and the order's updatedTime), and a bust
  // re-sizes an entry's children after its `TradeBust` report (reduce-only.test.ts,
  // entry-children.test.ts, execution-reports.prop.test.ts). The tour and followers move. A bust
  // is refused when a later forced fill would then open or flip a position (risk.golden.test.ts,
  // "trade bust"): `followers` gains a tail of four liquidated accounts' busts for it (version
  // 6's followers hashes are of the log without that tail). `cancelAll` counts the children its
  // entries' cancels ended (entry-children.test.ts); the tail ends with one such cancelAll.
  7: {
    simulation: {
      state: '0x69806535391f12770053d01b1048aa5f94e38984b7a98d8fe6b113a2d669a338',
      events: '0x65b3d1e1902edd76610aad67e3439d8ef81ed00c54a70ca4430b8c3125ecf507',
    },
    tour: {
      state: '0xc6d6103e051f324e433b5ae16132af7e572175dd656bcdc3a44807039cb296a7',
      events: '0x367f34059acfacd0699c4f1b91c4dc821e7c1c27549ad6e46154399f29fa635d',
    },
    edges: {
      state: '0x7ec44de2a533d1f2dceb851d1408fef08aa1405c7694441e5c2008e68d70c7de',
      events: '0x4904248b6aa5e5675ef717d51cc6be0ab0d401770b040f65b81368807b9002bf',
    },
    followers: {
      state: '0x2d77a3404c245db89e4ea496aa827a1c70787bb00a8667252b5dc73e89ec6dbf',
      events: '0x7e94c38a4dd4bbc78b47de23afc07e192a9d6c218489f2257565dbf28c1a28e4',
    },
  },
  // 8: a reduce-only IOC or FOK limit order joins no sweep (reduce-only.test.ts, "orders that
  // never rest"); a maker's match-time re-check leaves its other resting orders' holds out
  // (margin.test.ts, "a maker's re-check"); a leverage setting above a lowered maximum counts
  // at the maximum (margin.test.ts, leverage-caps.test.ts); ADL closes the liquidated account's
  // own other scope at the mark (liquidation-edges.test.ts). None moved the four logs as they
  // were: `edges` gains a tail of cases for each (version 7's edges hashes are of the log
  // without it), and reverting any of the four moves its hashes.
  8: {
    simulation: {
      state: '0x69806535391f12770053d01b1048aa5f94e38984b7a98d8fe6b113a2d669a338',
      events: '0x65b3d1e1902edd76610aad67e3439d8ef81ed00c54a70ca4430b8c3125ecf507',
    },
    tour: {
      state: '0xc6d6103e051f324e433b5ae16132af7e572175dd656bcdc3a44807039cb296a7',
      events: '0x367f34059acfacd0699c4f1b91c4dc821e7c1c27549ad6e46154399f29fa635d',
    },
    edges: {
      state: '0x87061642856e80fb0bc5f0bf65b506dc0391a75ae18c34701e5e22bc06a6d465',
      events: '0x7f1314a06ab25a790113713cdf084b74398fe154c070e07a09d44d5cd03d7221',
    },
    followers: {
      state: '0x2d77a3404c245db89e4ea496aa827a1c70787bb00a8667252b5dc73e89ec6dbf',
      events: '0x7e94c38a4dd4bbc78b47de23afc07e192a9d6c218489f2257565dbf28c1a28e4',
    },
  },
  // 9: a bust of a book print names the newest print still standing as the market's last trade
  // (a mark input), or none (risk.golden.test.ts, "trade bust"); the tour's busts moved it. Also
  // in 9, unseen by the four logs: a replace releases a cloid it supersedes after the cloid's
  // 24 h (order-lifecycle-edges.test.ts), and a market-style stop's remainder is cancelled
  // `NoLiquidity`, not `IOC` (book.test.ts, order-follow-edges.test.ts). And from the money-path
  // audit: nothing leaves a scope while its liquidation auction runs (the tour's state moved),
  // an auction's start and end push the account summary (every log's events moved), and a
  // withdrawal or transfer keeps initial margin at the tier-capped leverage
  // (auction-money-out.test.ts, tier-withdrawal.test.ts). Within 9 the simulation's events hash
  // took in the setup's events too (the listings, accounts and deposits; same results).
  9: {
    simulation: {
      state: '0x69806535391f12770053d01b1048aa5f94e38984b7a98d8fe6b113a2d669a338',
      events: '0xfe6240c69a30cc0af728ce9d89c35945a81c600641b2ad229482bba5d3a04176',
    },
    tour: {
      state: '0x6eb3a1848a8ee63106e85f1659bb002db322ba4db3b16fb90b5ac0555509689d',
      events: '0xee63badbad6a8bdc5fa1bb9637544d5143360e511e65fb92b2c6634d258a8c40',
    },
    edges: {
      state: '0x87061642856e80fb0bc5f0bf65b506dc0391a75ae18c34701e5e22bc06a6d465',
      events: '0xc0ae625ef46ed29ea291e8166f7fee7311d9c4f112c349ece1be0cc849f35f4f',
    },
    followers: {
      state: '0x2d77a3404c245db89e4ea496aa827a1c70787bb00a8667252b5dc73e89ec6dbf',
      events: '0x7e94c38a4dd4bbc78b47de23afc07e192a9d6c218489f2257565dbf28c1a28e4',
    },
  },
  // 10: a withdrawal or transfer from a wallet with no account is refused 4040 and opens none
  // (protocol.md 4; access.test.ts): `edges` gains a tail of the two (version 9's edges hashes
  // are of the log without it), and reverting the rule moves its state hash. A price level is
  // repacked once its holes outnumber its live orders (memory-bounds.test.ts; every order's slot
  // moves: `edges` gains a tail that reaches it, and reverting it moves the state hash). An order request's
  // answer names the command's last report and the order as the command's follow-ups left it,
  // after those reports, and a replace's 4041 names the orderId it targeted
  // (order-answers.test.ts; the tour's events moved). An `authenticate` of an account that is not
  // a lowercase address is bad input, 4000, changing nothing (it was 4015 with its nonce spent;
  // account-address.test.ts). The simulation's events hash covers its set-up commands too (a
  // change of form: version 9's line was re-pinned with it). From the margin audit: a relist
  // that moves maintenance margin, and a new last trade of a market without a mark (its
  // valuation price), check the market's holders for liquidation in that command
  // (liquidation-edges.test.ts): `edges` gains a tail reaching each; reverting either moves it.
  // From the bust audit: a bust that leaves a working entry no fill disarms its managed children,
  // and a bust of an ended entry's fill re-sizes them by the fills left (entry-children.test.ts;
  // a tail of both, each moving the state hash when reverted). A settled claim's report keeps
  // the claim's quantity (risk.golden.test.ts; the logs settle no partial claim).
  // A cancel or replace naming an unlisted market is 4000 and changes nothing, as an order's is
  // (book.test.ts; the tail's last command: reverting it moves the state hash).
  // A forced liquidation of a healthy scope auctions at the mark and deleverages what is left at
  // the mark, not at the bankruptcy price (engine-rules 7.5; forced-liquidation.test.ts; the
  // tour's forced liquidations moved its state and events).
  10: {
    simulation: {
      state: '0x69806535391f12770053d01b1048aa5f94e38984b7a98d8fe6b113a2d669a338',
      events: '0xfe6240c69a30cc0af728ce9d89c35945a81c600641b2ad229482bba5d3a04176',
    },
    tour: {
      state: '0x239234496c37e4e9783134e43e2cecabd9f6b1d0129a85b58ca20a7fcde7ab5c',
      events: '0x379eb245da722e3dbc5efc556b8e0f0e78d307206602278bd61a28cc7429f8fa',
    },
    edges: {
      state: '0x76944bb27336c01b1ccbc1391119344c4bef3b3f510f02a7982231d54491be5e',
      events: '0x82d2adf585c1efa18dc302d10d98dd9247f150bd296cde73be99cfceb7b2b547',
    },
    followers: {
      state: '0x2d77a3404c245db89e4ea496aa827a1c70787bb00a8667252b5dc73e89ec6dbf',
      events: '0x7e94c38a4dd4bbc78b47de23afc07e192a9d6c218489f2257565dbf28c1a28e4',
    },
  },
};

interface Hashes {
  readonly state: string;
  readonly events: string;
}

function eventsHash(history: readonly (readonly EngineEvent[])[]): string {
  const h = keccak_256.create();
  for (const events of history) h.update(utf8ToBytes(canonicalText(events)));
  return `0x${bytesToHex(h.digest())}`;
}

/** A seeded tour of the commands and order kinds the crash simulation does not reach. */
function tour(seed: number, steps: number): TestVenue {
  const r = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  v.list(ETH_SETTINGS);
  const symbols = ['BTC-PERP', 'ETH-PERP'] as const;
  const mid: Record<string, number> = { 'BTC-PERP': 65_000, 'ETH-PERP': 3_200 };
  const tick: Record<string, number> = { 'BTC-PERP': 0.5, 'ETH-PERP': 0.01 };
  const wallets = [1, 2, 3, 4, 5, 6].map(wallet);
  // Thin and thick accounts: margin checks, maker re-checks and liquidations must bind.
  wallets.forEach((w, i) => {
    v.open(w);
    v.fund(w, ['1500', '4000', '50000'][i % 3] as string);
  });
  v.fund(wallets[0] as string, '5000', 'BTC-PERP');
  v.oracle({ 'BTC-PERP': '65000', 'ETH-PERP': '3200' });
  v.run({ type: 'insuranceTransfer', direction: 'ToInsuranceFund', amount: 0n });
  // Low enough that the busiest wallets reach it (they hold up to 5 working orders without it).
  v.run({ type: 'setVenueSettings', maxWorkingOrdersPerAccount: 3 });
  const priceNear = (symbol: string, spread: number): string => {
    const ticks = Math.round((mid[symbol] as number) / (tick[symbol] as number));
    const off = Math.floor((r() * 2 - 1) * spread * ticks);
    return ((ticks + off) * (tick[symbol] as number)).toFixed(2);
  };
  const ownOrders = (w: string, market: number): number[] => {
    const ids: number[] = [];
    v.state.orders.forEach((o, id) => {
      if (o.account === w && o.market === market) ids.push(id);
    });
    return ids;
  };
  const qty = (): string => pick(['0.001', '0.01', '0.05', '0.2', '1', '3']);
  let cloids = 0;
  for (let i = 0; i < steps; i++) {
    const w = pick(wallets);
    const symbol = pick(symbols);
    const market = v.spec(symbol).id;
    const x = r();
    if (x < 0.45) {
      const type: OrderType = pick(['Limit', 'Limit', 'Limit', ...ORDER_TYPES]);
      const tif: TimeInForce = pick(['GTC', 'GTC', ...TIME_IN_FORCES]);
      const side = r() < 0.5 ? 'Buy' : 'Sell';
      const order: OrderSpec = {
        side,
        qty: qty(),
        price: priceNear(symbol, 0.01),
        type,
        tif,
        reduceOnly: r() < 0.15,
        postOnly: r() < 0.1,
        isolated: r() < 0.2,
        managed: type !== 'Limit' && type !== 'StopLimit' && r() < 0.5,
        cloid: r() < 0.5 ? cloid(++cloids) : null,
        parentCloid: r() < 0.1 && cloids > 0 ? cloid(cloids) : null,
      };
      if (type !== 'Limit') order.trigger = priceNear(symbol, 0.02);
      if (tif === 'GTD') order.expiry = Math.floor(v.time / 1000) + pick([1, 60, 3_600]);
      v.place(w, symbol, order);
    } else if (x < 0.6) {
      // Mostly the wallet's own orders in this market; now and then anyone's.
      const ids = r() < 0.9 ? ownOrders(w, market) : [...v.state.orders.keys()];
      if (ids.length > 0) v.cancel(w, symbol, { orderId: pick(ids) });
    } else if (x < 0.68) {
      const ids = ownOrders(w, market);
      const id = ids.length > 0 ? pick(ids) : 1;
      v.run({
        type: 'replaceOrder',
        account: w,
        market,
        orderId: BigInt(id),
        origCloid: null,
        price: px(priceNear(symbol, 0.01)),
        triggerPrice: 0n,
        quantity: usd(qty()) / 10n ** 2n,
        cloid: null,
      });
    } else if (x < 0.76) {
      const move = 1 + (r() * 2 - 1) * 0.03;
      mid[symbol] = Math.max(100, Math.round((mid[symbol] as number) * move));
      v.oracle({ [symbol]: String(mid[symbol]) });
    } else if (x < 0.8) {
      v.advance(pick([1_000, 60_000, 3_600_000]));
    } else if (x < 0.84) {
      v.run({ type: 'cancelAll', account: w, market });
    } else if (x < 0.87) {
      v.run({
        type: 'withdraw',
        account: w,
        amount: usd(pick(['10', '1000', '60000'])),
        target: r() < 0.7 ? { mode: 'Cross', market: 0 } : { mode: 'Isolated', market },
      });
    } else if (x < 0.9) {
      v.run({
        type: 'transferMargin',
        account: w,
        amount: usd(pick(['5', '500', '20000'])),
        market,
        direction: r() < 0.6 ? 'crossToIsolated' : 'isolatedToCross',
      });
    } else if (x < 0.93) {
      v.run({
        type: 'updateLeverage',
        account: w,
        market,
        mode: r() < 0.7 ? 'Cross' : 'Isolated',
        leverage: pick([1, 3, 10, 25, 40, 50]) * 100,
      });
    } else if (x < 0.95) {
      const trades = [...v.state.trades.keys()];
      if (trades.length > 0) v.run({ type: 'bustTrade', tradeId: pick(trades), reason: 'tour' });
    } else if (x < 0.97) {
      v.run({ type: 'settleFunding' });
    } else if (x < 0.985) {
      v.run({ type: 'createReferralCode', kind: 'system', maxUses: pick([1, 5]), code: `T${i}` });
    } else {
      v.run({ type: 'liquidate', account: w, mode: 'Cross', market: 0, force: r() < 0.3 });
    }
  }
  return v;
}

/**
 * Seeded cases at the margin rules' edges, which random order flow almost never reaches: a thin
 * account with a position rests an order that flips it (to the same size, or larger), the mark
 * moves against the side the flip opens, and a taker fills the order (engine-rules 5: the part
 * that opens needs initial margin at the maker re-check).
 */
function edges(seed: number, cases: number): TestVenue {
  const r = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  const BTC = 'BTC-PERP';
  const [taker, maker] = [wallet(900), wallet(901)];
  for (const w of [taker, maker]) {
    v.open(w);
    v.fund(w, '10000000');
  }
  for (let n = 0; n < cases; n++) {
    const P = pick([40_000, 50_000, 60_000]);
    v.oracle({ [BTC]: String(P) });
    const a = wallet(1000 + n);
    v.open(a);
    v.fund(a, String(pick([700, 900, 1_100, 1_300, 1_600, 2_000, 2_500])));
    const long = r() < 0.5;
    const [open, close] = long ? (['Buy', 'Sell'] as const) : (['Sell', 'Buy'] as const);
    const qty = pick(['0.05', '0.1', '0.2']);
    const flip = pick(['1.5', '2', '2', '3']);
    const flipQty = (Number(qty) * Number(flip)).toFixed(3);
    const price = String(P);
    v.place(maker, BTC, { side: close, qty, price });
    v.place(a, BTC, { side: open, qty, price });
    v.place(a, BTC, { side: close, qty: flipQty, price });
    v.place(maker, BTC, { side: close, qty: flipQty, price });
    const fall = pick([0.06, 0.1, 0.14, 0.2, 0.26, 0.34, 0.5]);
    v.oracle({ [BTC]: String(Math.round(long ? P * (1 + fall) : P * (1 - fall))) });
    v.place(taker, BTC, { side: open, qty: flipQty, price, tif: 'IOC' });
    for (const w of [a, maker, taker]) v.run({ type: 'cancelAll', account: w, market: 1 });
  }
  // From version 8: a reduce-only IOC close beside a full-size take-profit, and a maker whose
  // fill is re-checked while another of its bids rests, after a fall of the mark.
  for (let n = 0; n < cases / 4; n++) {
    const P = pick([40_000, 50_000, 60_000]);
    v.oracle({ [BTC]: String(P) });
    const b = wallet(3000 + n);
    v.open(b);
    v.fund(b, '10000');
    const qty = pick(['0.05', '0.1']);
    v.place(maker, BTC, { side: 'Sell', qty, price: String(P) });
    v.place(b, BTC, { side: 'Buy', qty, price: String(P) });
    v.place(b, BTC, { side: 'Sell', qty, price: String((P * 11) / 10), reduceOnly: true });
    v.place(maker, BTC, { side: 'Buy', qty, price: String((P * 99) / 100) });
    v.place(b, BTC, {
      side: 'Sell',
      qty,
      price: String((P * 99) / 100),
      reduceOnly: true,
      tif: 'IOC',
    });
    const c = wallet(4000 + n);
    v.open(c);
    v.fund(c, String(pick([800, 1_000, 1_200, 1_500])));
    v.place(c, BTC, { side: 'Buy', qty: '0.1', price: String(P) });
    v.place(c, BTC, { side: 'Buy', qty: '0.05', price: String((P * 9) / 10) });
    v.place(maker, BTC, { side: 'Buy', qty: '0.1', price: String(P) });
    v.oracle({ [BTC]: String((P * pick([6, 7, 8])) / 10) });
    v.place(taker, BTC, { side: 'Sell', qty: '0.1', price: String(P), tif: 'IOC' });
    for (const w of [b, c, maker, taker]) v.run({ type: 'cancelAll', account: w, market: 1 });
  }
  // Also from version 8: leverage set at 40x, then the maximum lowered to 20x under a position.
  const d = wallet(5000);
  v.open(d);
  v.fund(d, '3000');
  v.run({ type: 'updateLeverage', account: d, market: 1, mode: 'Cross', leverage: 4000 });
  v.place(maker, BTC, { side: 'Sell', qty: '1', price: '50000' });
  v.place(d, BTC, { side: 'Buy', qty: '1', price: '50000' });
  v.list({ ...BTC_SETTINGS, maxLeverage: 20 });
  v.place(d, BTC, { side: 'Buy', qty: '0.01', price: '49000' });
  v.run({ type: 'updateLeverage', account: d, market: 1, mode: 'Cross', leverage: 1900 });
  // And: an isolated long whose only counterparty is the same account's cross short, crashed.
  v.list({ ...wholeLotSettings('OWN-PERP', 9), defaultLeverage: 10, maxLeverage: 40 });
  const [g, x] = [wallet(5001), wallet(5002)];
  for (const w of [g, x]) v.open(w);
  v.fund(g, '5000');
  v.fund(g, '1000', 'OWN-PERP');
  v.fund(x, '100000');
  v.oracle({ 'OWN-PERP': '100' });
  v.place(x, 'OWN-PERP', { side: 'Sell', qty: '100', price: '100' });
  v.place(g, 'OWN-PERP', { side: 'Buy', qty: '100', price: '100', isolated: true });
  v.place(x, 'OWN-PERP', { side: 'Buy', qty: '100', price: '100' });
  v.place(g, 'OWN-PERP', { side: 'Sell', qty: '100', price: '100' });
  v.place(maker, 'OWN-PERP', { side: 'Buy', qty: '1', price: '89' });
  v.place(maker, 'OWN-PERP', { side: 'Sell', qty: '1', price: '89.5' });
  // An empty insurance fund, so the deficit reaches ADL (the fund would close it at the mark).
  const fund = v.state.insuranceFund;
  if (fund > 0n) v.run({ type: 'insuranceTransfer', direction: 'ToFeePool', amount: fund });
  v.oracle({ 'OWN-PERP': '89' });
  // From version 10: a withdrawal and a transfer from a wallet with no account (4040, no account
  // opened; before, each opened one and was Rejected 4100).
  const none = wallet(5003);
  v.run({ type: 'withdraw', account: none, amount: 1n, target: { mode: 'Cross', market: 0 } });
  v.run({
    type: 'transferMargin',
    account: none,
    amount: 1n,
    market: 1,
    direction: 'crossToIsolated',
  });
  // Also from version 10: a price level repacked once its holes outnumber its live orders (one
  // long-lived ask with 300 asks placed and cancelled behind it; every slot moved).
  v.oracle({ [BTC]: '50000' });
  v.place(maker, BTC, { side: 'Sell', qty: '0.01', price: '90000' });
  for (let n = 0; n < 300; n++) {
    v.place(maker, BTC, { side: 'Sell', qty: '0.01', price: '90000', cloid: cloid(7000 + n) });
    v.cancel(maker, BTC, { cloid: cloid(7000 + n) });
  }
  v.place(maker, BTC, { side: 'Sell', qty: '0.01', price: '90000' });
  // And: a market without an index, where a print between two other accounts takes a holder's
  // equity below maintenance, then a relist of it at a lower maximum leverage that takes another
  // holder below (each checked for liquidation in that command since version 10).
  v.list({ ...wholeLotSettings('NIX-PERP', 10), defaultLeverage: 10, maxLeverage: 20 });
  const [h, j, k, m1, m2] = [5004, 5005, 5006, 5007, 5008].map(wallet) as string[] as [
    string,
    string,
    string,
    string,
    string,
  ];
  for (const w of [h, j, k, m1, m2]) v.open(w);
  v.fund(h, '1500');
  v.fund(j, '400');
  for (const w of [k, m1, m2]) v.fund(w, '100000');
  v.place(k, 'NIX-PERP', { side: 'Sell', qty: '110', price: '100' });
  v.place(h, 'NIX-PERP', { side: 'Buy', qty: '100', price: '100' });
  v.place(j, 'NIX-PERP', { side: 'Buy', qty: '10', price: '100' });
  v.place(m1, 'NIX-PERP', { side: 'Sell', qty: '1', price: '85' });
  v.place(m2, 'NIX-PERP', { side: 'Buy', qty: '1', price: '85' });
  v.list({ ...wholeLotSettings('NIX-PERP', 10), defaultLeverage: 1, maxLeverage: 1 });
  // And: busts of an entry's fills under its managed stop, the entry still working (the stop is
  // disarmed) and ended (the stop re-sized), then a mark through both stops.
  v.oracle({ [BTC]: '50000' });
  const [e1, e2, s1] = [5009, 5010, 5011].map(wallet) as [string, string, string];
  for (const w of [e1, e2, s1]) v.open(w);
  for (const w of [e1, e2, s1]) v.fund(w, '100000');
  const tradeOf = (events: readonly EngineEvent[]): number => {
    const t = events.find((e) => e.type === 'trade');
    if (t?.type !== 'trade') throw new Error('no trade');
    return t.tradeId;
  };
  // Each entry at its own price, so the other's orders never meet it.
  for (const [w, n, at] of [
    [e1, 7101, '50000'],
    [e2, 7102, '51000'],
  ] as const) {
    v.place(s1, BTC, { side: 'Sell', qty: '1', price: at });
    v.place(w, BTC, { side: 'Buy', qty: '1', price: at });
    v.place(w, BTC, { side: 'Buy', qty: '1', price: at, cloid: cloid(n) });
    v.place(w, BTC, {
      side: 'Sell',
      qty: '1',
      trigger: '45000',
      type: 'StopLoss',
      managed: true,
      parentCloid: cloid(n),
    });
    const first = tradeOf(v.place(s1, BTC, { side: 'Sell', qty: '0.4', price: at }));
    if (w === e2) v.place(s1, BTC, { side: 'Sell', qty: '0.6', price: at });
    v.run({ type: 'bustTrade', tradeId: first, reason: 'edges' });
  }
  v.oracle({ [BTC]: '44000' });
  // And: a cancel naming an unlisted market is bad input (4000, nothing changes; it was a 4041
  // that counted as a command).
  v.run({ type: 'cancelOrder', account: e1, market: 77, orderId: 1n, cloid: null });
  return v;
}

/**
 * Seeded cases for the orders that follow a position or an entry order, where the rule changes
 * of versions 5 and 6 moved none of the other logs. Each case is one of: an entry order that
 * closes a position while its managed stop waits; an entry's managed stop armed by two fills,
 * one of them busted, then fired; a managed child placed after its entry's first fill, then
 * fired; a reduce-only stop that fires, partly fills and rests beside a reduce-only limit.
 */
function followers(seed: number, cases: number): TestVenue {
  const r = prng(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r() * xs.length)] as T;
  const v = new TestVenue();
  v.list(BTC_SETTINGS);
  const BTC = 'BTC-PERP';
  const [maker, taker] = [wallet(950), wallet(951)];
  for (const w of [maker, taker]) {
    v.open(w);
    v.fund(w, '10000000');
  }
  for (let n = 0; n < cases; n++) {
    const P = pick([60_000, 65_000, 70_000]);
    v.oracle({ [BTC]: String(P) });
    const at = (pct: number) => String(Math.round((P * (1000 + pct)) / 1000));
    const a = wallet(2000 + n);
    v.open(a);
    v.fund(a, '100000');
    const long = r() < 0.5;
    const [open, close] = long ? (['Buy', 'Sell'] as const) : (['Sell', 'Buy'] as const);
    const s = long ? 1 : -1; // the side's sign: prices at s * pct move in the position's favour
    const entry = cloid(5000 + n);
    const stopChild = () =>
      v.place(a, BTC, {
        side: close,
        qty: '1',
        type: 'StopLoss',
        trigger: at(-s * pick([20, 40])),
        managed: true,
        parentCloid: entry,
      });
    const fire = () => v.oracle({ [BTC]: at(-s * 60) });
    const kind = pick(['closing entry', 'bust', 'child after fill', 'stop rests'] as const);
    if (kind === 'closing entry') {
      // a holds the other side; its entry order closes it while a managed stop waits.
      v.place(maker, BTC, { side: open, qty: '1', price: at(0) });
      v.place(a, BTC, { side: close, qty: '1', price: at(0) });
      v.place(a, BTC, { side: open, qty: '1', price: at(0), cloid: entry });
      stopChild();
      v.place(maker, BTC, { side: close, qty: pick(['0.4', '0.6']), price: at(0) });
      v.place(taker, BTC, { side: close, qty: '1', price: at(0), tif: 'IOC' });
    } else if (kind === 'bust' || kind === 'child after fill') {
      v.place(a, BTC, { side: open, qty: '1', price: at(0), cloid: entry });
      if (kind === 'bust') stopChild();
      const first = v.place(maker, BTC, { side: close, qty: pick(['0.3', '0.5']), price: at(0) });
      if (kind === 'child after fill') stopChild();
      v.place(taker, BTC, { side: close, qty: '0.2', price: at(0) });
      const trade = first.find((e) => e.type === 'trade');
      if (kind === 'bust' && trade?.type === 'trade')
        v.run({ type: 'bustTrade', tradeId: trade.tradeId, reason: 'followers' });
      v.place(maker, BTC, { side: open, qty: '2', price: at(-s * 80) });
      fire();
    } else {
      v.place(maker, BTC, { side: close, qty: '0.5', price: at(0) });
      v.place(a, BTC, { side: open, qty: '0.5', price: at(0) });
      v.place(a, BTC, { side: close, qty: '0.45', price: at(s * 30), reduceOnly: true });
      v.place(a, BTC, {
        side: close,
        qty: '0.3',
        type: 'StopLimit',
        trigger: at(-s * 10),
        price: at(-s * 10),
        reduceOnly: true,
      });
      v.place(taker, BTC, { side: open, qty: pick(['0.1', '0.2']), price: at(-s * 10) });
      v.oracle({ [BTC]: at(-s * 15) });
    }
    for (const w of [a, maker, taker]) v.run({ type: 'cancelAll', account: w, market: 1 });
    // a's position is closed, so the next case starts from an empty book.
    const size = v.state.accounts.get(a)?.positions.find((p) => p.market === 1)?.size ?? 0n;
    if (size !== 0n) {
      const side = size > 0n ? 'Sell' : 'Buy';
      v.place(maker, BTC, { side: size > 0n ? 'Buy' : 'Sell', qty: '10', price: at(0) });
      v.place(a, BTC, { side, qty: '10', price: at(0), reduceOnly: true, tif: 'IOC' });
      v.run({ type: 'cancelAll', account: maker, market: 1 });
    }
  }
  // From version 7: busts of a fill a liquidation followed. The liquidation sells the whole
  // position (the bust is refused: that fill would flip it) or a part of it (the bust goes
  // through: that fill still reduces).
  for (let n = 0; n < 4; n++) {
    v.oracle({ [BTC]: '65000' });
    const b = wallet(3000 + n);
    v.open(b);
    v.fund(b, '2000');
    v.place(maker, BTC, { side: 'Sell', qty: '0.1', price: '65000' });
    const first = v.place(b, BTC, { side: 'Buy', qty: '0.1', price: '65000' });
    v.place(maker, BTC, { side: 'Sell', qty: '0.1', price: '65000' });
    v.place(b, BTC, { side: 'Buy', qty: '0.1', price: '65000' });
    // The book and the oracle put the mark at 55,600: b's cross scope is below maintenance.
    v.place(maker, BTC, { side: 'Buy', qty: n % 2 === 0 ? '0.2' : '0.05', price: '55500' });
    v.place(maker, BTC, { side: 'Sell', qty: '0.001', price: '55600' });
    v.oracle({ [BTC]: '55600' });
    const trade = first.find((e) => e.type === 'trade');
    if (trade?.type === 'trade')
      v.run({ type: 'bustTrade', tradeId: trade.tradeId, reason: 'forced' });
    for (const w of [b, maker]) v.run({ type: 'cancelAll', account: w, market: 1 });
  }
  // From version 7: a cancelAll that ends an entry with its children counts them all.
  const c = wallet(3100);
  v.open(c);
  v.fund(c, '100000');
  v.place(c, BTC, { side: 'Buy', qty: '0.5', price: '50000', cloid: cloid(6000) });
  for (const trigger of ['40000', '41000'])
    v.place(c, BTC, {
      side: 'Sell',
      qty: '0.5',
      type: 'StopLoss',
      trigger,
      managed: true,
      parentCloid: cloid(6000),
    });
  v.run({ type: 'cancelAll', account: c, market: 0 });
  return v;
}

function tourHashes(): Hashes & { commands: readonly Command[]; venue: TestVenue } {
  const v = tour(11, 1_500);
  return { state: stateHash(v.state), events: eventsHash(v.history), commands: v.log, venue: v };
}

describe('engine rules fingerprint', () => {
  it('the tour reaches the rules it is meant to', () => {
    const { venue } = tourHashes();
    const seen = new Map<string, number>();
    const see = (k: string) => seen.set(k, (seen.get(k) ?? 0) + 1);
    venue.history.forEach((events, i) => {
      const type = venue.log[i]?.type;
      for (const e of events) {
        if (e.type === 'outcome') see(e.ok ? `${type} ok` : `${type} ${e.code}`);
        else if (e.type === 'executionReport') {
          see(e.kind);
          if (e.kind === 'OrderRejected') see(`OrderRejected ${e.order.reason}`);
          if (e.kind === 'OrderReplaced') see(`OrderReplaced ${e.order.reason}`);
        } else see(e.type);
      }
    });
    // A fingerprint is only as good as what it exercises: each of these must happen.
    const expected = [
      'OrderTriggered',
      'OrderExpired',
      'OrderReplaced',
      'OrderPartiallyFilled',
      'TradeBust',
      'Liquidation',
      'ADL',
      'auction',
      'Funding',
      'TransferMargin',
      'UpdateLeverage',
      'placeOrder 4000',
      'placeOrder 4100',
      'placeOrder 4101',
      'withdraw ok',
      'withdraw 4100',
      'cancelAll ok',
      'createReferralCode ok',
      'setVenueSettings ok',
      'OrderRejected TooManyOrders',
      'OrderReplaced PositionChanged',
    ];
    expect(expected.filter((k) => !seen.has(k))).toEqual([]);

    // The edge cases: some flips are refused at the maker re-check, some fill.
    const e = edges(5, 80);
    let refused = 0;
    let filled = 0;
    for (const events of e.history)
      for (const x of events)
        if (
          x.type === 'executionReport' &&
          x.account !== wallet(900) &&
          x.account !== wallet(901)
        ) {
          if (x.kind === 'OrderCancelled' && x.order.reason === 'InsufficientMargin') refused++;
          if (
            (x.kind === 'OrderFilled' || x.kind === 'OrderPartiallyFilled') &&
            x.order.side !== undefined
          )
            filled++;
        }
    expect(refused).toBeGreaterThan(0);
    expect(filled).toBeGreaterThan(0);

    // The followers: children fire and are ended with their position, fills are busted, and
    // reduce-only orders are cut.
    const followed = new Set<string>();
    for (const events of followers(3, 60).history)
      for (const x of events)
        if (x.type === 'executionReport' && 'order' in x && x.order.managed)
          followed.add(`managed ${x.kind} ${x.order.reason ?? ''}`.trim());
        else if (x.type === 'executionReport' && x.kind === 'OrderReplaced')
          followed.add(`OrderReplaced ${x.order.reason ?? ''}`.trim());
        else if (x.type === 'executionReport' && x.kind === 'TradeBust') followed.add('TradeBust');
        else if (x.type === 'executionReport' && x.kind === 'Liquidation')
          followed.add('Liquidation');
        else if (x.type === 'outcome' && !x.ok && x.message.includes('cannot be busted: without'))
          followed.add('bust refused for a forced fill');
        else if (x.type === 'outcome' && x.ok && x.kind === 'cancelAll' && x.cancelled === 3)
          followed.add('cancelAll of an entry and its children');
    expect(
      [
        'managed OrderTriggered',
        'managed OrderCancelled PositionClosed',
        'OrderReplaced ReduceOnly',
        'managed OrderReplaced ParentFilled',
        'managed OrderReplaced ParentBust',
        'TradeBust',
        'Liquidation',
        'bust refused for a forced fill',
        'cancelAll of an entry and its children',
      ].filter((k) => !followed.has(k)),
    ).toEqual([]);
  });

  it(`matches the fingerprint of rules version ${ENGINE_RULES_VERSION}`, () => {
    const sim = runSimulation({
      seed: 7,
      takers: 24,
      minutes: 6,
      crashStart: 2,
      crashMinutes: 3,
      crashPercent: 30,
    });
    const t = tourHashes();
    const e = edges(5, 80);
    const f = followers(3, 60);
    const got = {
      simulation: { state: sim.stateHash, events: sim.eventsHash },
      tour: { state: t.state, events: t.events },
      edges: { state: stateHash(e.state), events: eventsHash(e.history) },
      followers: { state: stateHash(f.state), events: eventsHash(f.history) },
    };
    expect(
      got,
      `the engine's results changed under rules version ${ENGINE_RULES_VERSION}: see the comment on FINGERPRINTS`,
    ).toEqual(FINGERPRINTS[ENGINE_RULES_VERSION]);
  });
});
