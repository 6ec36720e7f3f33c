/**
 * Rotating and deleting workspace credentials (issue 12; docs/security.md): the use cases
 * behind /v2/workspace/workspaceauthtoken/rotate and /v2/workspace/apikey/delete
 * (src/http/routes/key-lifecycle.ts) and the CLI commands of the same names (src/cli.ts).
 */
import { workspaceDecider, workspaceStream } from '../../commands/workspace.js';
import type { UseCaseContext } from './context.js';
import { newToken } from './workspace.js';

export async function rotateWorkspaceAuthToken(ctx: UseCaseContext, workspaceId: string) {
  const token = newToken();
  await ctx.execute(workspaceDecider, workspaceStream(workspaceId), {
    type: 'RotateWorkspaceAuthToken',
    data: { authTokenHash: token.tokenHash },
  });
  return { workspaceId, authToken: token.secret };
}

/**
 * Deletes the key (an event, for the record and the read models), then destroys its data
 * key. In that order: a key of another workspace is refused before anything is destroyed,
 * and a crash in between leaves a deleted key whose deletion, asked again, appends nothing
 * and destroys the data key then.
 */
export async function deleteApiKey(ctx: UseCaseContext, workspaceId: string, apiKey: string) {
  await ctx.execute(workspaceDecider, workspaceStream(workspaceId), {
    type: 'DeleteApiKey',
    data: { apiKey },
  });
  await ctx.services.secrets.shred(apiKey);
  return { apiKey, deleted: true };
}
