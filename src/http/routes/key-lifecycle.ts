/**
 * Workspace mode: rotating and deleting credentials (issue 12; not in the hosted API docs,
 * named after the `/v2/workspace/...` routes beside them; docs/security.md). Each is also a
 * CLI command (src/cli.ts) through the same functions (src/usecases/key-lifecycle.ts).
 *
 * - `/v2/workspace/workspaceauthtoken/rotate` `{}`: a new workspace auth token, returned
 *   once; the old one stops at once.
 * - `/v2/workspace/apikey/signingkey/rotate` `{ apiKey, revokePrevious? }`: a new signing key
 *   for the key's user tokens (`kid` in their header). Tokens signed before stay valid until
 *   they expire, or stop at once with `revokePrevious: true`.
 * - `/v2/workspace/apikey/delete` `{ apiKey }`: the key, its auth tokens and its user tokens
 *   stop at once; its documents leave the read models (key, service configs, agents); its
 *   events stay in the log for audit, and its data key is destroyed, so the secrets sealed in
 *   them cannot be read by anyone again (crypto-shredding). Repeating it is harmless.
 */
import { z } from 'zod';
import { rotateSigningKey } from '../../usecases/user-tokens.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id } from '../validation.js';
import { shownOnce } from '../schema.js';
import { deleteApiKey, rotateWorkspaceAuthToken } from '../../usecases/key-lifecycle.js';

export function keyLifecycleRoutes(): AnyRoute[] {
  const rotateWorkspaceToken = defineRoute({
    path: '/v2/workspace/workspaceauthtoken/rotate',
    tag: 'Workspace',
    doc: {
      summary: 'Replace the workspace auth token',
      description: 'The old workspace auth token stops working at once; the new one is a secret shown only in this answer. API keys and their auth tokens are not affected.',
      example: {},
    },
    mutates: true,
    auth: 'workspace',
    schema: z.object({}),
    response: z.object({
      workspaceId: z.string(),
      authToken: shownOnce('The new workspace auth token (`x-service-workspace-auth-token`)'),
    }),
    handler: async (_data, ctx) => ({
      message: 'Workspace auth token rotated successfully.',
      data: await rotateWorkspaceAuthToken(ctx, ctx.workspaceId!),
    }),
  });

  const rotateSigning = defineRoute({
    path: '/v2/workspace/apikey/signingkey/rotate',
    tag: 'API keys',
    doc: {
      summary: 'Rotate the key that signs an API key\'s user tokens',
      description: [
        'User tokens (`/v2/auth/generate_token`) are signed from now on with a new signing key, named by `kid` in their header.',
        '',
        '- By default, tokens signed before stay valid until they expire.',
        '- With `revokePrevious: true`, every token signed before stops at once.',
        '',
        'The signing keys themselves never leave the service.',
      ].join('\n'),
      example: { apiKey: 'velt_api_key_1', revokePrevious: true },
    },
    mutates: true,
    auth: 'workspace',
    schema: z.object({ apiKey: id(), revokePrevious: z.boolean().optional() }),
    response: z.object({
      apiKey: z.string(),
      kid: z.string().describe('The new signing key\'s id, in the header of the tokens it signs.'),
      revokedKids: z.array(z.string()).describe('Signing keys dropped by this rotation: all previous ones with `revokePrevious`, else those whose tokens have all expired.'),
      previousKeysValidUntilExpiry: z.boolean().describe('Whether tokens signed before stay valid until they expire (`false` with `revokePrevious`).'),
    }),
    errors: ['NOT_FOUND'],
    handler: async (data, ctx) => ({
      message: 'Token signing key rotated successfully.',
      data: await rotateSigningKey(ctx, ctx.workspaceId!, data.apiKey, data.revokePrevious ?? false),
    }),
  });

  const remove = defineRoute({
    path: '/v2/workspace/apikey/delete',
    tag: 'API keys',
    doc: {
      summary: 'Delete an API key and everything that authenticates with it',
      description: [
        'The key, its auth tokens and its user tokens stop working at once. Its configuration and agents leave the read models; its events stay in the log for audit.',
        'The secrets stored for it (service configurations, agent credentials, token signing keys) are destroyed with its encryption key and cannot be read again.',
        '',
        'Deleting a key already deleted answers success again. A key this workspace never had is `NOT_FOUND`.',
      ].join('\n'),
      example: { apiKey: 'velt_api_key_1' },
    },
    mutates: true,
    auth: 'workspace',
    schema: z.object({ apiKey: id() }),
    response: z.object({ apiKey: z.string(), deleted: z.literal(true) }),
    errors: ['NOT_FOUND'],
    handler: async (data, ctx) => ({
      message: 'API key deleted successfully.',
      data: await deleteApiKey(ctx, ctx.workspaceId!, data.apiKey),
    }),
  });

  return [rotateWorkspaceToken, rotateSigning, remove];
}
