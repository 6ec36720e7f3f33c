/**
 * Workspace mode's use cases (semantics §2): creating a workspace with its first key, and the
 * fresh auth tokens every credential route hands out. Shared by the routes
 * (src/http/routes/workspace.ts, key-lifecycle.ts) and the CLI (src/cli.ts).
 */
import { workspaceDecider, workspaceStream, type ApiKeySettings, type NewApiKey } from '../../commands/workspace.js';
import { hashSecret, newId, newSecret } from '../shared/ids.js';
import type { UseCaseContext } from './context.js';

/** A fresh auth token: the secret (returned once) and what is stored (its hash). */
export const newToken = () => {
  const secret = newSecret();
  return { secret, tokenId: newId(), tokenHash: hashSecret(secret) };
};

export const defaultSettings = (): ApiKeySettings => ({
  allowedDomains: [],
  useEmailService: false,
  useWebhookService: false,
  useNotificationService: false,
  setDefaultNotificationTriggers: false,
  setDefaultEmailTriggers: false,
  requireAutoOrgUser: false,
  enablePrivateComments: false,
});

/**
 * The first key's default name, as the hosted API makes it: the part of `ownerEmail` before
 * the `@`, capitalized, then " Test API Key". Example: `owner@example.com` -> "Owner Test API Key".
 */
export const defaultKeyName = (ownerEmail: string) => {
  const local = ownerEmail.slice(0, ownerEmail.lastIndexOf('@'));
  return `${local.charAt(0).toUpperCase()}${local.slice(1)} Test API Key`;
};

/**
 * Creates a workspace with one testing key; shared by the route and the CLI. Defaults as
 * the hosted API documents them: the owner's name is `ownerEmail`, the workspace's name is
 * "<name> workspace" (so "<ownerEmail> workspace" when neither is given).
 */
export async function createWorkspace(
  ctx: UseCaseContext,
  input: { ownerEmail: string; name?: string; workspaceName?: string; avatar?: string },
) {
  const workspaceId = newId();
  const ownerId = newId();
  const wsToken = newToken();
  const keyToken = newToken();
  const ownerName = input.name ?? input.ownerEmail;
  const firstKey: NewApiKey = {
    apiKey: newId(),
    apiKeyName: defaultKeyName(input.ownerEmail),
    type: 'testing',
    ownerEmail: input.ownerEmail,
    persistenceDBRegion: null,
    realtimeDBRegion: null,
    settings: defaultSettings(),
    token: { tokenId: keyToken.tokenId, tokenHash: keyToken.tokenHash },
  };
  const name = input.workspaceName ?? `${ownerName} workspace`;
  await ctx.execute(workspaceDecider, workspaceStream(workspaceId), {
    type: 'CreateWorkspace',
    data: {
      workspaceId,
      name,
      ownerEmail: input.ownerEmail,
      ownerName,
      ownerId,
      ...(input.avatar !== undefined ? { ownerAvatar: input.avatar } : {}),
      authTokenHash: wsToken.tokenHash,
      firstKey,
    },
  });
  return {
    id: workspaceId,
    name,
    owner: { email: input.ownerEmail, id: ownerId, name: ownerName, ...(input.avatar !== undefined ? { avatar: input.avatar } : {}) },
    authToken: wsToken.secret,
    apiKeyList: {
      // `authToken`: the hosted API leaves it out and has clients read it from
      // authtokens/get; here secrets are shown once, so this is where the client gets it.
      [firstKey.apiKey]: { apiKeyName: firstKey.apiKeyName, id: firstKey.apiKey, type: 'testing', authToken: keyToken.secret },
    },
  };
}
