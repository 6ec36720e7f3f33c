/**
 * `/v2/auth/generate_token` (semantics §4a): the resources become grants exactly as with
 * /v2/auth/permissions/add (src/usecases/grants.ts), then a user token naming the user and
 * those resources is signed (src/usecases/user-tokens.ts).
 */
import { userDecider, userStream } from '../../commands/user.js';
import { invalidArgument, notFound } from '../shared/errors.js';
import type { TenantContext } from './context.js';
import { accessFieldRefusals, addGrants, missingResources, type GrantResource } from './grants.js';
import { issueUserToken } from './user-tokens.js';
import { sealedProfile } from './personal.js';

interface GenerateTokenInput {
  userId: string;
  userProperties: { name: string; email: string; isAdmin?: boolean | undefined };
  resources: GrantResource[];
}

/**
 * All or nothing: a token must never name a resource it does not grant, so a missing one
 * fails the call before any grant is written or any token signed; nor may it name access
 * fields (context.access) the user would not hold, so a resource beyond an access-field
 * limit (semantics §1) refuses the call before anything is written.
 */
export async function generateToken(ctx: TenantContext & { readonly tenant?: { readonly workspaceId: string } }, input: GenerateTokenInput) {
  const requested = input.resources;
  const missing = await missingResources(ctx, requested);
  if (Object.keys(missing).length > 0) {
    throw notFound('One or more resources do not exist.', { resources: missing });
  }
  const refused = await accessFieldRefusals(ctx, input.userId, requested);
  if (Object.keys(refused).length > 0) {
    throw invalidArgument('One or more resources would hold more access fields than allowed.', { resources: refused });
  }
  // The user's name and e-mail are kept as users/add keeps them (users/get shows them), so
  // a user known through tokens alone is not a nameless row: the profile is what was sent.
  const { name, email } = input.userProperties;
  const profile = await sealedProfile(ctx, input.userId, { name, email });
  await ctx.execute(userDecider, userStream(ctx.apiKey, input.userId), { type: 'SaveUser', data: { userId: input.userId, ...profile } });
  if (requested.length > 0) await addGrants(ctx, input.userId, requested);
  const { token } = await issueUserToken(ctx, {
    userId: input.userId,
    user: { name: input.userProperties.name, email: input.userProperties.email, isAdmin: input.userProperties.isAdmin ?? false },
    resources: requested.map((r) => ({ ...r, organizationId: r.type === 'organization' ? r.id : r.organizationId })),
  });
  return token;
}
