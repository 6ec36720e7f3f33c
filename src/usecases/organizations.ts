/**
 * Organizations (semantics §4a): add, rename, delete, disable, list. Each organization is
 * its own stream, so a batch's items run in parallel and one that fails leaves the others.
 * Per-item messages are the hosted API's, character for character (semantics §0), capitals
 * and missing final periods included; each item's `id` echoes the organizationId sent.
 */
import { organizationDecider, organizationNotFound, organizationStream } from '../../commands/organization.js';
import { organizationsPage } from '../../queries/organizations.js';
import { DEFAULT_PAGE_SIZE } from '../../queries/paging.js';
import type { TenantContext } from './context.js';
import { eachItem, item, keyed, unique, type Failure } from './items.js';

/** The hosted API's per-item string for a missing organization (no final period there). */
const ORGANIZATION_DOES_NOT_EXIST = 'Organization does not exist';
const missingOrganization: Failure = (e) => ({ message: e.status === 'NOT_FOUND' ? ORGANIZATION_DOES_NOT_EXIST : e.message });

type OrganizationInput = { organizationId: string; organizationName?: string | undefined };

/**
 * Adds organizations; one that exists takes the name sent (the hosted API's OpenAPI
 * description: "If an organization already exists, this will update its metadata").
 */
export function addOrganizations(ctx: TenantContext, organizations: readonly OrganizationInput[]) {
  return eachItem(organizations, (o) => o.organizationId, (o) =>
    ctx.execute(organizationDecider, organizationStream(ctx.apiKey, o.organizationId), {
      type: 'CreateOrganization',
      data: { organizationId: o.organizationId, organizationName: o.organizationName, updateExisting: true },
    }), 'Added Successfully');
}

/** Renames organizations; one sent without a name only has to exist. */
export function renameOrganizations(ctx: TenantContext, organizations: readonly OrganizationInput[]) {
  return eachItem(organizations, (o) => o.organizationId, async (o) => {
    const stream = organizationStream(ctx.apiKey, o.organizationId);
    if (o.organizationName === undefined) {
      const { state } = await ctx.services.commands.load(organizationDecider, stream);
      if (state.status !== 'active') throw organizationNotFound();
      return;
    }
    await ctx.execute(organizationDecider, stream, {
      type: 'RenameOrganization',
      data: { organizationId: o.organizationId, organizationName: o.organizationName },
    });
  }, 'Updated Successfully', missingOrganization);
}

/** Deletes organizations with everything in them; a missing one is a failed item (the hosted page's example). */
export async function deleteOrganizations(ctx: TenantContext, organizationIds: readonly string[]) {
  const results = await Promise.all(unique(organizationIds).map(async (organizationId) => {
    const stream = organizationStream(ctx.apiKey, organizationId);
    const { state } = await ctx.services.commands.load(organizationDecider, stream);
    if (state.status !== 'active') {
      return [organizationId, { success: false, id: organizationId, message: ORGANIZATION_DOES_NOT_EXIST }] as const;
    }
    const outcome = await item(
      () => ctx.execute(organizationDecider, stream, { type: 'DeleteOrganization', data: { organizationId } }),
      () => ({ success: true, id: organizationId, message: 'Deleted Successfully' }),
      { id: organizationId },
      missingOrganization,
    );
    return [organizationId, outcome] as const;
  }));
  return keyed(results);
}

/** Disables or enables organizations. */
export async function setOrganizationsDisabled(ctx: TenantContext, organizationIds: readonly string[], disabled: boolean) {
  const results = await Promise.all(unique(organizationIds).map(async (organizationId) => [
    organizationId,
    await item(
      () => ctx.execute(organizationDecider, organizationStream(ctx.apiKey, organizationId), {
        type: 'SetOrganizationDisabled',
        data: { organizationId, disabled },
      }),
      () => ({ success: true, id: organizationId, message: 'Updated disable state for organization Successfully' }),
      { id: organizationId },
      missingOrganization,
    ),
  ] as const));
  return keyed(results);
}

/** A page of the key's organizations, or of those named, in creation order. */
export function listOrganizations(ctx: TenantContext, query: { organizationIds?: string[] | undefined; pageSize?: number | undefined; pageToken?: string | undefined }) {
  return organizationsPage(ctx.services.read, ctx.apiKey, {
    organizationIds: query.organizationIds,
    pageSize: query.pageSize ?? DEFAULT_PAGE_SIZE,
    pageToken: query.pageToken,
  });
}
