/**
 * What the dry-run suites compare a dry run's `accessChanges` with: access measured through
 * permissions/get before and after the real write, keyed `JSON.stringify([resourceType,
 * resourceId, userId])` with the role answered (undefined: denied).
 */

/** The resource types in the order a dry run lists its changes. */
export const ORDER = ['organization', 'folder', 'document'];

/** The role in one permissions/get entry, or undefined when it denies. */
export const roleOf = (e: any): string | undefined => (e && 'accessRole' in e ? e.accessRole : undefined);

const cmp = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** The changes between two measurements of one organization, in the order a dry run lists them. */
export function accessDifferences(organizationId: string, before: Map<string, string | undefined>, after: Map<string, string | undefined>) {
  const out: any[] = [];
  for (const [k, was] of before) {
    const is = after.get(k);
    if (was === is) continue;
    const [resourceType, resourceId, userId] = JSON.parse(k) as string[];
    out.push({ resourceType, resourceId, organizationId, userId, change: was === undefined ? 'gain' : is === undefined ? 'lose' : 'role', ...(was ? { before: was } : {}), ...(is ? { after: is } : {}) });
  }
  return out.sort((a, b) => ORDER.indexOf(a.resourceType) - ORDER.indexOf(b.resourceType) || cmp(a.resourceId, b.resourceId) || cmp(a.userId, b.userId));
}
