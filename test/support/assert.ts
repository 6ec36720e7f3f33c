/** Assertions uvu does not ship. */
import * as assert from 'uvu/assert';

/** Awaits `p` and asserts it rejects; `match` tests the error message. Returns the error. */
export async function rejects(p: Promise<unknown>, match?: RegExp): Promise<unknown> {
  try {
    await p;
  } catch (err) {
    if (match) assert.match(String((err as Error)?.message ?? err), match);
    return err;
  }
  assert.unreachable(`expected a rejection${match ? ` matching ${match}` : ''}`);
}
