/**
 * A user's personal fields on their way into the log and back (docs/privacy.md): sealed with
 * the user's data key before a command carries them (src/secrets/personal.ts), opened when
 * an answer shows them. A field whose key was destroyed (users/data/delete) opens to nothing.
 */
import { initialOf } from '../../commands/user.js';
import type { TenantReadContext } from './context.js';

interface ProfileFields {
  name?: string | undefined;
  email?: string | undefined;
  initial?: string | undefined;
}

/** Creates, in one synced write, the data keys of the users of a batch that carry personal fields and lack one. */
export async function preparePersonalKeys(ctx: Pick<TenantReadContext, 'services' | 'apiKey'>, users: readonly ({ userId: string } & ProfileFields)[]) {
  const personal = users.filter((u) => u.name || u.email || u.initial).map((u) => u.userId);
  if (personal.length > 0) await ctx.services.secrets.personal.prepare(ctx.apiKey, personal);
}

/**
 * The fields given, sealed for `userId`, with the initial derived from the name when the
 * caller gave a name and no initial (commands/user.ts `derivedInitial`).
 */
export async function sealedProfile(ctx: Pick<TenantReadContext, 'services' | 'apiKey'>, userId: string, p: ProfileFields) {
  // Nothing personal (a user added by id alone): no key is made for them.
  if (!p.name && !p.email && !p.initial) return { name: p.name, email: p.email, initial: p.initial };
  const seal = await ctx.services.secrets.personal.sealer(ctx.apiKey, userId);
  const derived = p.name !== undefined && p.initial === undefined ? initialOf(p.name) : undefined;
  const sealed = (v: string | undefined) => (v === undefined || v === '' ? v : seal(v));
  return {
    name: sealed(p.name),
    email: sealed(p.email),
    initial: sealed(p.initial),
    ...(derived !== undefined ? { derivedInitial: sealed(derived) } : {}),
  };
}

type Ctx = Pick<TenantReadContext, 'services' | 'apiKey'>;

/** Optional personal fields (presence's name and e-mail) sealed for `userId`; absent and empty ones stay as they are. */
export async function sealPersonal(ctx: Ctx, userId: string, fields: { name?: string | undefined; email?: string | undefined }) {
  if (!fields.name && !fields.email) return {};
  const seal = await ctx.services.secrets.personal.sealer(ctx.apiKey, userId);
  return {
    ...(fields.name ? { name: seal(fields.name) } : {}),
    ...(fields.email ? { email: seal(fields.email) } : {}),
  };
}

/** `sealPersonal`'s fields opened; one whose key was destroyed is left out. */
export async function openPersonal(ctx: Ctx, userId: string, fields: { name?: string | undefined; email?: string | undefined }) {
  const o = await ctx.services.secrets.personal.open(ctx.apiKey, userId, fields);
  return {
    name: typeof o.name === 'string' ? o.name : undefined,
    email: typeof o.email === 'string' ? o.email : undefined,
  };
}

/** Rows with their stored personal fields opened; a field that no longer opens becomes `""` (as never given). */
export async function openProfiles<R extends { userId: string; name: string; email: string; initial: string }>(
  ctx: Pick<TenantReadContext, 'services' | 'apiKey'>,
  rows: readonly R[],
): Promise<R[]> {
  const { personal } = ctx.services.secrets;
  return Promise.all(rows.map(async (r) => {
    const o = await personal.open(ctx.apiKey, r.userId, { name: r.name, email: r.email, initial: r.initial });
    const text = (v: unknown) => (typeof v === 'string' ? v : '');
    return { ...r, name: text(o.name), email: text(o.email), initial: text(o.initial) };
  }));
}
