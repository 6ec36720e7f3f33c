/** Organization reads: existence for read endpoints, and organizations/get pages. */
import { notFound } from '../src/shared/errors.js';
import type { ReadView } from '../src/ports/read-store.js';
import { ORGANIZATIONS, organizationKey, type OrganizationDoc } from '../projections/organizations.js';
import { decodePageToken, encodePageToken } from './paging.js';

async function getOrganization(read: ReadView, apiKey: string, organizationId: string): Promise<OrganizationDoc | null> {
  return read.get<OrganizationDoc>(ORGANIZATIONS, organizationKey(apiKey, organizationId));
}

/** semantics §4: a read on an organization that does not exist is NOT_FOUND. */
export async function requireOrganization(read: ReadView, apiKey: string, organizationId: string): Promise<OrganizationDoc> {
  const org = await getOrganization(read, apiKey, organizationId);
  if (!org) throw notFound('Organization does not exist.');
  return org;
}

/**
 * The hosted API's row (`id`, `organizationName`, `disabled`, "other metadata fields may be
 * included"), with semantics §4a's `organizationId` and the creation time (ms).
 */
const row = (o: OrganizationDoc) => ({
  id: o.organizationId,
  organizationId: o.organizationId,
  organizationName: o.organizationName,
  disabled: o.disabled,
  createdAt: o.createdAt,
});

export async function organizationsPage(
  read: ReadView,
  apiKey: string,
  q: { organizationIds?: string[]; pageSize: number; pageToken?: string },
) {
  const query = { apiKey, what: 'organizations', organizationIds: q.organizationIds ?? null };
  const after = decodePageToken(q.pageToken, query);
  let docs: OrganizationDoc[];
  if (q.organizationIds) {
    const all = await read.getMany<OrganizationDoc>(ORGANIZATIONS, [...new Set(q.organizationIds)].map((id) => organizationKey(apiKey, id)));
    all.sort((a, b) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0));
    docs = all.filter((o) => !after || o.seq > String(after.value)).slice(0, q.pageSize + 1);
  } else {
    docs = await read.find<OrganizationDoc>(ORGANIZATIONS, { apiKey }, { sort: 'seq', after, limit: q.pageSize + 1 });
  }
  const page = docs.slice(0, q.pageSize);
  const last = page[page.length - 1];
  const more = docs.length > q.pageSize && last;
  return { rows: page.map(row), pageToken: more ? encodePageToken(query, { value: last.seq, id: last._id }) : undefined };
}
