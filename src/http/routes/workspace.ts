/**
 * Workspace mode: create a workspace, create API keys, list and reset a key's auth tokens
 * (semantics §2). Secrets are generated here, returned once, and handed to the aggregate
 * only as hashes.
 */
import { z } from 'zod';
import { workspaceDecider, workspaceStream, type ApiKeySettings, type NewApiKey } from '../../../commands/workspace.js';
import { apiKeyOfWorkspace, tokenMetadata } from '../../../queries/credentials.js';
import { notFound } from '../../errors.js';
import { hashSecret, newId, newSecret } from '../../ids.js';
import type { Services } from '../../services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import type { RequestContext } from '../context.js';
import { email, id, text, webhookUrl } from '../validation.js';
import { egressPolicyOf } from '../../webhooks/egress.js';
import { sealServiceConfig } from '../../secrets/configs.js';


/** A fresh auth token: the secret (returned once) and what is stored (its hash). */
export const newToken = () => {
  const secret = newSecret();
  return { secret, tokenId: newId(), tokenHash: hashSecret(secret) };
};

const defaultSettings = (): ApiKeySettings => ({
  allowedDomains: [],
  useEmailService: false,
  useWebhookService: false,
  useNotificationService: false,
  setDefaultNotificationTriggers: false,
  setDefaultEmailTriggers: false,
  requireAutoOrgUser: false,
  enablePrivateComments: false,
});

const configString = () => z.string().max(2048).optional();

/** Creates a workspace with one testing key; shared by the route and the CLI. */
export async function createWorkspace(
  ctx: RequestContext,
  input: { ownerEmail: string; name?: string; workspaceName?: string },
) {
  const workspaceId = newId();
  const wsToken = newToken();
  const keyToken = newToken();
  const ownerName = input.name ?? input.ownerEmail.split('@')[0]!;
  const firstKey: NewApiKey = {
    apiKey: newId(),
    apiKeyName: 'Default testing key',
    type: 'testing',
    ownerEmail: input.ownerEmail,
    persistenceDBRegion: null,
    realtimeDBRegion: null,
    settings: defaultSettings(),
    token: { tokenId: keyToken.tokenId, tokenHash: keyToken.tokenHash },
  };
  const name = input.workspaceName ?? `${ownerName}'s workspace`;
  await ctx.execute(workspaceDecider, workspaceStream(workspaceId), {
    type: 'CreateWorkspace',
    data: { workspaceId, name, ownerEmail: input.ownerEmail, ownerName, authTokenHash: wsToken.tokenHash, firstKey },
    metadata: { now: ctx.now },
  });
  return {
    id: workspaceId,
    name,
    owner: { email: input.ownerEmail, name: ownerName },
    authToken: wsToken.secret,
    apiKeyList: {
      [firstKey.apiKey]: { id: firstKey.apiKey, apiKeyName: firstKey.apiKeyName, type: 'testing', authToken: keyToken.secret },
    },
  };
}

export function workspaceRoutes(services: Services): AnyRoute[] {
  const regions = services.config.regions;
  const region = () => z.enum(regions as [string, ...string[]]).optional();
  const egress = egressPolicyOf(services.config);
  const httpUrl = () => webhookUrl(egress).optional();

  const createWorkspaceRoute = defineRoute({
    path: '/v2/workspace/create',
    mutates: true,
    auth: 'admin',
    schema: z.object({
      ownerEmail: email(),
      name: text(256).optional(),
      workspaceName: text(256).optional(),
    }),
    handler: (data, ctx) => createWorkspace(ctx, data).then((created) => ({
      message: 'Workspace created successfully.',
      data: created,
    })),
  });

  const createApiKey = defineRoute({
    path: '/v2/workspace/apikey/create',
    mutates: true,
    auth: 'workspace',
    schema: z.object({
      ownerEmail: email(),
      type: z.enum(['testing', 'production']),
      persistenceDBRegion: region(),
      realtimeDBRegion: region(),
      createAuthToken: z.boolean().optional(),
      apiKeyName: text(256).optional(),
      allowedDomains: z.array(z.string().min(1).max(253)).max(1000).optional(),
      addLocalHostToAllowedDomains: z.boolean().optional(),
      useEmailService: z.boolean().optional(),
      useWebhookService: z.boolean().optional(),
      useNotificationService: z.boolean().optional(),
      setDefaultNotificationTriggers: z.boolean().optional(),
      setDefaultEmailTriggers: z.boolean().optional(),
      requireAutoOrgUser: z.boolean().optional(),
      enablePrivateComments: z.boolean().optional(),
      emailServiceConfig: z
        .object({
          type: configString(),
          apiKey: configString(),
          fromEmail: z.string().max(320).pipe(z.email()).optional(),
          fromCompany: configString(),
          commentTemplateId: configString(),
          tagTemplateId: configString(),
        })
        .optional(),
      webhookServiceConfig: z
        .object({ authToken: configString(), rawNotificationUrl: httpUrl(), processedNotificationUrl: httpUrl() })
        .optional(),
    }),
    async handler(data, ctx) {
      const workspaceId = ctx.workspaceId!;
      const token = data.createAuthToken ? newToken() : undefined;
      const allowedDomains = [...new Set([...(data.allowedDomains ?? []), ...(data.addLocalHostToAllowedDomains ? ['localhost'] : [])])];
      const settings: ApiKeySettings = {
        ...defaultSettings(),
        allowedDomains,
        useEmailService: data.useEmailService ?? false,
        useWebhookService: data.useWebhookService ?? false,
        useNotificationService: data.useNotificationService ?? false,
        setDefaultNotificationTriggers: data.setDefaultNotificationTriggers ?? false,
        setDefaultEmailTriggers: data.setDefaultEmailTriggers ?? false,
        requireAutoOrgUser: data.requireAutoOrgUser ?? false,
        enablePrivateComments: data.enablePrivateComments ?? false,
      };
      const production = data.type === 'production';
      const apiKey = newId();
      const command = {
        type: 'CreateApiKey' as const,
        data: {
          apiKey,
          apiKeyName: data.apiKeyName ?? `${data.type} key`,
          type: data.type,
          ownerEmail: data.ownerEmail,
          // persistenceDBRegion applies to production keys only; the default is the first
          // (North America) region of the configured list.
          persistenceDBRegion: production ? (data.persistenceDBRegion ?? regions[0]!) : null,
          realtimeDBRegion: data.realtimeDBRegion ?? null,
          settings,
          ...(token ? { token: { tokenId: token.tokenId, tokenHash: token.tokenHash } } : {}),
        },
        metadata: { now: ctx.now },
      };
      const stream = workspaceStream(workspaceId);
      if (data.emailServiceConfig || data.webhookServiceConfig) {
        // The service configs' secrets are sealed with the new key's own data key
        // (src/secrets/), which sealing creates: a refusal (a production key over the limit,
        // say) is found first, on the current state, so it leaves no data key behind.
        workspaceDecider.decide(command, (await services.commands.load(workspaceDecider, stream)).state);
        if (data.emailServiceConfig) settings.emailServiceConfig = await sealServiceConfig(services.secrets, apiKey, dropUndefined(data.emailServiceConfig));
        if (data.webhookServiceConfig) settings.webhookServiceConfig = await sealServiceConfig(services.secrets, apiKey, dropUndefined(data.webhookServiceConfig));
      }
      await ctx.execute(workspaceDecider, stream, command);
      return {
        message: 'API key created successfully.',
        data: { apiKey, ...(token ? { authToken: token.secret } : {}) },
      };
    },
  });

  const getAuthTokens = defineRoute({
    path: '/v2/workspace/authtokens/get',
    mutates: false,
    auth: 'workspace',
    schema: z.object({ apiKey: id() }),
    async handler(data, ctx) {
      const key = await apiKeyOfWorkspace(services.read, ctx.workspaceId!, data.apiKey);
      if (!key) throw notFound('API key not found in this workspace.');
      return {
        message: 'Auth tokens retrieved successfully.',
        data: { apiKey: key._id, authTokens: tokenMetadata(key.tokens) },
      };
    },
  });

  const resetAuthToken = defineRoute({
    path: '/v2/workspace/authtoken/reset',
    mutates: true,
    auth: 'workspace',
    schema: z.object({ apiKey: id(), tokenId: id().optional() }),
    async handler(data, ctx) {
      const token = newToken();
      await ctx.execute(workspaceDecider, workspaceStream(ctx.workspaceId!), {
        type: 'ResetAuthToken',
        data: { apiKey: data.apiKey, revokeTokenId: data.tokenId, tokenId: token.tokenId, tokenHash: token.tokenHash },
        metadata: { now: ctx.now },
      });
      return {
        message: 'Auth token reset successfully.',
        data: { apiKey: data.apiKey, tokenId: token.tokenId, authToken: token.secret },
      };
    },
  });

  return [createWorkspaceRoute, createApiKey, getAuthTokens, resetAuthToken];
}

function dropUndefined(o: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Record<string, string>;
}
