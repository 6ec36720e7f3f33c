/**
 * semantics §1 Limits: JSON nesting depth at most 32 anywhere in a request body.
 *
 * Checked on the raw text before it is parsed, by one pass that counts open brackets outside
 * strings: no recursion and no allocation, so a body of a million `[` costs one loop, never a
 * stack. Why before parsing and not after: a value nested 1000 levels deep parses fine but
 * breaks whatever walks it later (zod, redaction, SQLite's JSON functions in a projection),
 * and some of those run after the event is stored.
 *
 * Depth counts containers: the body's own object is level 1, so `{"data":{"a":[1]}}` is 3
 * levels deep. A text that is not valid JSON is only scanned, never judged here: the parser
 * that runs next refuses it.
 */
export const MAX_JSON_DEPTH = 32;

const QUOTE = 0x22; // "
const BACKSLASH = 0x5c; // \
const OPEN_BRACKET = 0x5b; // [
const CLOSE_BRACKET = 0x5d; // ]
const OPEN_BRACE = 0x7b; // {
const CLOSE_BRACE = 0x7d; // }

/**
 * The deepest nesting of `text`, counting up to `max + 1` at most (it stops as soon as the
 * limit is passed). Brackets inside strings do not count: `{"a":"[[["}` is 1 level deep;
 * an escaped quote does not end a string: `{"a":"\"[["}` is 1 level deep too.
 */
export function jsonDepth(text: string, max = MAX_JSON_DEPTH): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === BACKSLASH) i++;
      else if (c === QUOTE) inString = false;
      continue;
    }
    if (c === QUOTE) inString = true;
    else if (c === OPEN_BRACKET || c === OPEN_BRACE) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > max) return deepest;
      }
    } else if (c === CLOSE_BRACKET || c === CLOSE_BRACE) {
      if (depth > 0) depth--;
    }
  }
  return deepest;
}
