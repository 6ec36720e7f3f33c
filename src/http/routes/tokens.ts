/**
 * `/v2/auth/generate_token` (semantics §4a), API-key mode: a signed JWT (HS256, the key's
 * own secret, 48 h) naming the API key, the user and the resources (src/tokens/); the
 * resources become grants like /v2/auth/permissions/add. What it does is
 * src/usecases/generate-token.ts.
 */
import { z } from 'zod';
import { TOKEN_LIFETIME_SECONDS } from '../../../commands/token-lifetime.js';
import type { Services } from '../../composition/services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { email, id, items, text } from '../validation.js';
import { resourceSchema as resource } from './domain.js';
import { generateToken } from '../../usecases/generate-token.js';

export function tokenRoutes(_services: Services): AnyRoute[] {
  const generate = defineRoute({
    path: '/v2/auth/generate_token',
    tag: 'Tokens',
    doc: {
      summary: 'Sign a user token naming the user and the resources it grants',
      description: [
        `The token is a JWT (HS256) signed with the API key's own signing key (\`kid\` in its header), valid ${TOKEN_LIFETIME_SECONDS / 3600} hours.`,
        '',
        '- The resources become grants exactly as with `/v2/auth/permissions/add` (`accessRole` defaults to `editor`).',
        '- `userProperties.name` and `email` become the user\'s profile, as with `/v2/users/add` (users/get shows them).',
        '- All or nothing: a resource that does not exist answers `NOT_FOUND` (each missing one in `details.resources`), one that would pass the access-field limit `INVALID_ARGUMENT`; nothing is granted or signed then.',
        '- `FAILED_PRECONDITION` when the key\'s signing key cannot be decrypted: rotate it with `/v2/workspace/apikey/signingkey/rotate`.',
      ].join('\n'),
      example: {
        userId: 'user789',
        userProperties: { isAdmin: false, name: 'Bob Wilson', email: 'bob@example.com' },
        permissions: {
          resources: [
            { type: 'organization', id: 'org_123' },
            { type: 'folder', id: 'folder_001', organizationId: 'org_123', accessRole: 'editor' },
          ],
        },
      },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      userId: id(),
      userProperties: z.object({ name: text(256), email: email(), isAdmin: z.boolean().optional() }),
      permissions: z.object({ resources: items(resource) }).optional(),
    }),
    response: z.object({ token: z.string().describe('The signed JWT (claims: `sub` the user, `apiKey`, `user`, `resources`, `exp`).') }),
    errors: ['NOT_FOUND', 'FAILED_PRECONDITION'],
    handler: async (data, ctx) => ({
      message: 'Token generated successfully.',
      data: { token: await generateToken(ctx, { userId: data.userId, userProperties: data.userProperties, resources: data.permissions?.resources ?? [] }) },
    }),
  });
  return [generate];
}
