/**
 * `/v2/auth/generate_token` (semantics §4a), API-key mode: a signed JWT (HS256, the key's
 * own secret, 48 h) naming the API key, the user and the resources (src/tokens/).
 */
import { z } from 'zod';
import { issueUserToken } from '../../tokens/user-tokens.js';
import type { Services } from '../../services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { email, id, items, text } from '../validation.js';

const resource = z
  .object({
    type: z.enum(['organization', 'folder', 'document']),
    id: id(),
    organizationId: id().optional(),
    accessRole: z.enum(['editor', 'viewer']).optional(),
    /** Unix seconds (semantics §1). */
    expiresAt: z.number().int().positive().optional(),
  })
  .refine((r) => r.type === 'organization' || r.organizationId !== undefined, {
    message: 'organizationId is required for folder and document resources',
    path: ['organizationId'],
  });

export function tokenRoutes(_services: Services): AnyRoute[] {
  const generate = defineRoute({
    path: '/v2/auth/generate_token',
    auth: 'apiKey',
    schema: z.object({
      userId: id(),
      userProperties: z.object({ name: text(256), email: email(), isAdmin: z.boolean().optional() }),
      permissions: z.object({ resources: items(resource) }).optional(),
    }),
    async handler(data, ctx) {
      const resources = (data.permissions?.resources ?? []).map((r) => ({
        ...r,
        organizationId: r.type === 'organization' ? r.id : r.organizationId,
      }));
      const { token } = await issueUserToken(ctx, {
        userId: data.userId,
        user: { name: data.userProperties.name, email: data.userProperties.email, isAdmin: data.userProperties.isAdmin ?? false },
        resources,
      });
      return { message: 'Token generated successfully.', data: { token } };
    },
  });
  return [generate];
}
