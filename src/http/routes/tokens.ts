/**
 * `/v2/auth/generate_token` (semantics §4a), API-key mode: a signed JWT (HS256, the key's
 * own secret, 48 h) naming the API key, the user and the resources (src/tokens/); the
 * resources become grants like /v2/auth/permissions/add.
 */
import { z } from 'zod';
import { issueUserToken } from '../../tokens/user-tokens.js';
import type { Services } from '../../services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { email, id, items, text } from '../validation.js';
import { invalidArgument, notFound } from '../../errors.js';
import { accessFieldRefusals, addGrants, missingResources, resourceSchema as resource } from './permissions.js';

export function tokenRoutes(_services: Services): AnyRoute[] {
  const generate = defineRoute({
    path: '/v2/auth/generate_token',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      userId: id(),
      userProperties: z.object({ name: text(256), email: email(), isAdmin: z.boolean().optional() }),
      permissions: z.object({ resources: items(resource) }).optional(),
    }),
    async handler(data, ctx) {
      // The resources become grants exactly as with /v2/auth/permissions/add. All or
      // nothing: a token must never name a resource it does not grant, so a missing one
      // fails the call before any grant is written or any token signed.
      const requested = data.permissions?.resources ?? [];
      const missing = await missingResources(ctx, requested);
      if (Object.keys(missing).length > 0) {
        throw notFound('One or more resources do not exist.', { resources: missing });
      }
      // Nor may it name access fields (context.access) the user would not hold: a resource
      // beyond an access-field limit (semantics §1) refuses the call before anything is written.
      const refused = await accessFieldRefusals(ctx, data.userId, requested);
      if (Object.keys(refused).length > 0) {
        throw invalidArgument('One or more resources would hold more access fields than allowed.', { resources: refused });
      }
      if (requested.length > 0) await addGrants(ctx, data.userId, requested);
      const resources = requested.map((r) => ({
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
