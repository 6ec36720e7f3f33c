/** Assertions about user tokens shared by the token and secrets tests. */
import * as assert from 'uvu/assert';
import type { Harness } from './app.js';
import { TokenError } from '../../src/tokens/jwt.js';
import { verifyUserToken } from '../../src/usecases/user-tokens.js';

/** Asserts the service refuses `token` with a TokenError whose message matches `re`. */
export async function refused(h: Harness, token: string, re: RegExp): Promise<void> {
  try {
    await verifyUserToken(h.services, token);
  } catch (err) {
    assert.instance(err, TokenError);
    assert.match((err as Error).message, re);
    return;
  }
  assert.unreachable('token accepted');
}
