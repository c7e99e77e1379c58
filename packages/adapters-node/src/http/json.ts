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
