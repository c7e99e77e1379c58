/**
 * Safe JSON for every transport (reliability-anchors 2.7 and 3): prototype-poisoning keys are
 * refused (secure-json-parse, the parser Fastify uses), nesting deeper than the limit is refused
 * without recursion, and a parse failure is a value, never an exception the caller forgets.
 *
 * @module
 */
import sjson from 'secure-json-parse';

/** Result of {@link parseJson}. */
export type JsonResult = { ok: true; value: unknown } | { ok: false; error: string };

/** Depth of nested arrays/objects in a JSON text, counted without recursion. */
export function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > max) max = depth;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
}

/** Parses untrusted JSON text. */
export function parseJson(text: string, maxDepth: number): JsonResult {
  if (jsonDepth(text) > maxDepth)
    return { ok: false, error: `JSON nested deeper than ${maxDepth}` };
  try {
    return {
      ok: true,
      value: sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }),
    };
  } catch (e) {
    return {
      ok: false,
      error: e instanceof Error ? `malformed JSON: ${e.message}` : 'malformed JSON',
    };
  }
}

/** Whether a value is a plain JSON object. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * A client-sent value for an error message: a string as it is, anything else as its JSON, at
 * most 64 characters. Never throws: `String()` of a parsed object with its own non-function
 * `toString` key (`{"toString":1}`) does.
 */
export function showValue(value: unknown): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? 'undefined');
  return text.length > 64 ? `${text.slice(0, 61)}...` : text;
}

/** A client message's `id` on both sockets: 1-64 characters of `[A-Za-z0-9_-]`. */
export const MESSAGE_ID_RE = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * The `id` to echo in the error for a socket message refused before its fields are read (no
 * string `type`): protocol.md section 1 wants exactly one reply per request, echoing its id, and
 * a client that matches replies by id would otherwise wait for ever. Only a well-formed id of a
 * top-level object counts.
 */
export function refusedMessageId(message: unknown): string | undefined {
  if (!isRecord(message)) return undefined;
  const id = message.id;
  return typeof id === 'string' && MESSAGE_ID_RE.test(id) ? id : undefined;
}

/**
 * {@link refusedMessageId} of a text {@link parseJson} refused (nesting too deep): it is parsed
 * here only to find the id. Socket frames are size-capped, and V8's JSON parser does not recurse.
 * Malformed text has no id to echo.
 */
export function refusedTextId(text: string): string | undefined {
  try {
    return refusedMessageId(
      sjson.parse(text, undefined, { protoAction: 'error', constructorAction: 'error' }),
    );
  } catch {
    return undefined;
  }
}
