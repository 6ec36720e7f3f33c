/**
 * Workspace mode: rotating and deleting credentials (issue 12; not in the hosted API docs,
 * named after the `/v2/workspace/...` routes beside them; docs/security.md). Each is also a
 * CLI command (src/cli.ts) through the same functions.
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
import { workspaceDecider } from '../../../commands/workspace.js';
import { rotateSigningKey } from '../../tokens/user-tokens.js';
import { defineRoute, type AnyRoute } from '../route.js';
import type { RequestContext } from '../context.js';
import { id } from '../validation.js';
import { newToken } from './workspace.js';
import { workspaceStream } from '../../../commands/workspace.js';

export async function rotateWorkspaceAuthToken(ctx: RequestContext, workspaceId: string) {
  const token = newToken();
  await ctx.execute(workspaceDecider, workspaceStream(workspaceId), {
    type: 'RotateWorkspaceAuthToken',
    data: { authTokenHash: token.tokenHash },
    metadata: { now: ctx.now },
  });
  return { workspaceId, authToken: token.secret };
}

/**
 * Deletes the key (an event, for the record and the read models), then destroys its data
 * key. In that order: a key of another workspace is refused before anything is destroyed,
 * and a crash in between leaves a deleted key whose deletion, asked again, appends nothing
 * and destroys the data key then.
 */
export async function deleteApiKey(ctx: RequestContext, workspaceId: string, apiKey: string) {
  await ctx.execute(workspaceDecider, workspaceStream(workspaceId), {
    type: 'DeleteApiKey',
    data: { apiKey },
    metadata: { now: ctx.now },
  });
  await ctx.services.secrets.shred(apiKey);
  return { apiKey, deleted: true };
}

export function keyLifecycleRoutes(): AnyRoute[] {
  const rotateWorkspaceToken = defineRoute({
    path: '/v2/workspace/workspaceauthtoken/rotate',
    mutates: true,
    auth: 'workspace',
    schema: z.object({}),
    handler: async (_data, ctx) => ({
      message: 'Workspace auth token rotated successfully.',
      data: await rotateWorkspaceAuthToken(ctx, ctx.workspaceId!),
    }),
  });

  const rotateSigning = defineRoute({
    path: '/v2/workspace/apikey/signingkey/rotate',
    mutates: true,
    auth: 'workspace',
    schema: z.object({ apiKey: id(), revokePrevious: z.boolean().optional() }),
    handler: async (data, ctx) => ({
      message: 'Token signing key rotated successfully.',
      data: await rotateSigningKey(ctx, ctx.workspaceId!, data.apiKey, data.revokePrevious ?? false),
    }),
  });

  const remove = defineRoute({
    path: '/v2/workspace/apikey/delete',
    mutates: true,
    auth: 'workspace',
    schema: z.object({ apiKey: id() }),
    handler: async (data, ctx) => ({
      message: 'API key deleted successfully.',
      data: await deleteApiKey(ctx, ctx.workspaceId!, data.apiKey),
    }),
  });

  return [rotateWorkspaceToken, rotateSigning, remove];
}
