/** The three access types, and who each lets in (docs/permissions.md, semantics.md §3.4). */

export type AccessType = 'organizationPrivate' | 'restricted' | 'public';

/**
 * Who each access type lets in, in the words of semantics.md §3.4 and docs/permissions.md:
 * public lets anyone in (not only the organization's users), with or without a grant.
 */
const ACCESS_MEANING: Record<AccessType, string> = {
  public: 'anyone can open it, with or without a grant (as editor without one)',
  organizationPrivate: 'users with a grant on it, on a folder above it or on the organization can open it',
  restricted: 'only users with a grant on it or on a folder above it can open it: a grant on the organization alone does not let anyone in',
};
/** The access types as options: short, so a select stays narrow on a phone. */
export const ACCESS_OPTIONS = [
  { value: 'public', label: 'public: anyone' },
  { value: 'organizationPrivate', label: 'organizationPrivate: organization users' },
  { value: 'restricted', label: 'restricted: granted users only' },
];
export const meaningOf = (t: string): string | undefined => (t === 'public' || t === 'organizationPrivate' || t === 'restricted' ? ACCESS_MEANING[t] : undefined);
