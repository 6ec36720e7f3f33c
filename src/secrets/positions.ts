/**
 * Position tokens (issue 36): a log position sealed for one caller's scope, opaque to it. One
 * format serves three purposes, so any of them can be given where another is taken:
 * - a write's consistency token (`x-consistency-token` on its answer: the position its
 *   events reached), which a read sends back to be answered only once the read models have
 *   applied at least that position (src/http/consistency.ts);
 * - each change's `token` in `/v2/changes/get`, and its `nextToken`;
 * - `since` of `/v2/changes/get`: changes strictly after the position.
 *
 * Sealed like page tokens (queries/paging.ts: AES-256-GCM with a synthetic IV, base64url), with
 * a key derived from the master key for this purpose alone, held by this deployment's secret
 * store (not a process-wide list as page tokens are): a token made by another deployment (any
 * other master key) never opens here, even in a test process that holds both. The associated
 * data is the scope (`apikey:<key>` for an API key and its user tokens, `workspace:<id>` for a
 * workspace's own calls), so another tenant's token, or one with any byte changed, does not
 * open either. What a token reveals: nothing (not the position, which would show a tenant the
 * platform's write volume).
 */
import { createHash } from 'node:crypto';
import type { LogPosition } from '../ports/event-store.js';
import { invalidArgument } from '../shared/errors.js';
import { openToken, sealToken, tokenBytes, tokenKeyOf, type TokenKey } from '../../queries/paging.js';

/** The scope of an API key's tokens, whether its own headers or one of its user tokens made the call. */
export const apiKeyScope = (apiKey: string) => `apikey:${apiKey}`;

/** The scope of a workspace's own calls (workspace credentials). */
export const workspaceScope = (workspaceId: string) => `workspace:${workspaceId}`;

/** The HKDF purpose of the key; a new format takes a new one. */
const PURPOSE = 'consistency-token/v1';

const associatedData = (scope: string) =>
  Buffer.concat([Buffer.from('collab/consistency-token/v1\0'), createHash('sha256').update(scope).digest()]);

/** What derives a key for one purpose from the master key (SecretStore). */
interface KeyDeriver {
  deriveKey(purpose: string, bytes: number): Buffer;
}

export class PositionTokens {
  private readonly key: TokenKey;
  /** Associated data by scope: a changes page seals up to 1000 tokens for one scope. */
  private lastScope = '';
  private lastAad = associatedData('');

  constructor(secrets: KeyDeriver) {
    this.key = tokenKeyOf(secrets.deriveKey(PURPOSE, 64));
  }

  private aad(scope: string): Buffer {
    if (scope !== this.lastScope) {
      this.lastAad = associatedData(scope);
      this.lastScope = scope;
    }
    return this.lastAad;
  }

  /** The token of `position` for `scope`. */
  seal(scope: string, position: LogPosition): string {
    return sealToken(this.key, this.aad(scope), Buffer.from(position, 'utf8'));
  }

  /**
   * The position `token` holds, when it was sealed for `scope` by this deployment and is
   * unchanged; otherwise INVALID_ARGUMENT naming `field` (a header or a body field).
   */
  open(scope: string, token: string, field: string): LogPosition {
    const raw = token.length <= 1024 ? tokenBytes(token) : null;
    const plaintext = raw ? openToken(this.key, raw, this.aad(scope)) : null;
    if (plaintext === null) {
      throw invalidArgument(
        `${field} is not a consistency or change token of this caller: it was made for another API key or workspace, by another deployment, or changed.`,
      );
    }
    return plaintext.toString('utf8');
  }
}
