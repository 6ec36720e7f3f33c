/**
 * Organizations (semantics §4a): add, get, update, delete, disabled state.
 * Each organization is its own stream, so batch items run in parallel.
 *
 * Messages are the hosted API's, character for character (semantics §0; its pages under
 * rest-apis/v2/organizations/), capitals and missing final periods included. Each item's
 * `id` echoes the organizationId sent (semantics §1): the hosted API shows an internal hash
 * there, which no client can make use of (docs/compatibility.md).
 */
import { z } from 'zod';
import { organizationDecider, organizationNotFound, organizationStream } from '../../../commands/organization.js';
import { organizationsPage } from '../../../queries/organizations.js';
import { DEFAULT_PAGE_SIZE } from '../../../queries/paging.js';
import type { Services } from '../../composition/services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id, ids, items, text } from '../validation.js';
import { eachItem, idOutcome, PAGE_SIZE_DOC, item, keyed, outcomesById, pageAnswer, pageSize, pageToken, unique, type Failure } from './domain.js';

/** The hosted API's per-item string for a missing organization (no final period there). */
const ORGANIZATION_DOES_NOT_EXIST = 'Organization does not exist';
const missingOrganization: Failure = (e) => ({ message: e.status === 'NOT_FOUND' ? ORGANIZATION_DOES_NOT_EXIST : e.message });

const orgSchema = z.object({ organizationId: id(), organizationName: text(256).optional() });

/** Every organizations batch answers `{ [organizationId]: { success, id, message } }`. */
const orgOutcomes = outcomesById(idOutcome);

/** An organizations/get row (queries/organizations.ts). */
const organizationRow = z.object({
  id: z.string().describe('The organization id (the hosted API\'s name for it).'),
  organizationId: z.string(),
  organizationName: z.string().describe('The organization id when it was created without a name.'),
  disabled: z.boolean().describe('A disabled organization denies every document in it.'),
  createdAt: z.number().describe('Creation time, milliseconds since the epoch.'),
});

const BATCH = 'Each organization is its own item: one that fails does not stop the others. ' +
  '`data` is keyed by organizationId, each id once (a repeated id is one item, its first occurrence).';

export function organizationRoutes(services: Services): AnyRoute[] {
  const add = defineRoute({
    path: '/v2/organizations/add',
    tag: 'Organizations',
    doc: {
      summary: 'Add organizations (an existing one takes the name sent)',
      description: `${BATCH} An organization that exists already is not an error: its name becomes the one sent (when sent). ` +
        'Without `organizationName` a new organization is named after its id.',
      example: { organizations: [{ organizationId: 'yourOrganizationId', organizationName: 'Your Organization Name' }] },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizations: items(orgSchema) }),
    response: orgOutcomes,
    async handler(data, ctx) {
      // An existing organization takes the name sent (the hosted API's OpenAPI description:
      // "If an organization already exists, this will update its metadata").
      const results = await eachItem(data.organizations, (o) => o.organizationId, (o) =>
        ctx.execute(organizationDecider, organizationStream(ctx.apiKey, o.organizationId), {
          type: 'CreateOrganization',
          data: { organizationId: o.organizationId, organizationName: o.organizationName, updateExisting: true },
        }), 'Added Successfully');
      return { message: 'Organization(s) added successfully.', data: results };
    },
  });

  const update = defineRoute({
    path: '/v2/organizations/update',
    tag: 'Organizations',
    doc: {
      summary: 'Rename organizations',
      description: `${BATCH} An organization that does not exist fails its item ("Organization does not exist").`,
      example: { organizations: [{ organizationId: 'yourOrganizationId', organizationName: 'Your Updated Organization Name' }] },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizations: items(orgSchema) }),
    response: orgOutcomes,
    async handler(data, ctx) {
      const results = await eachItem(data.organizations, (o) => o.organizationId, async (o) => {
        const stream = organizationStream(ctx.apiKey, o.organizationId);
        if (o.organizationName === undefined) {
          const { state } = await services.commands.load(organizationDecider, stream);
          if (state.status !== 'active') throw organizationNotFound();
          return;
        }
        await ctx.execute(organizationDecider, stream, {
          type: 'RenameOrganization',
          data: { organizationId: o.organizationId, organizationName: o.organizationName },
        });
      }, 'Updated Successfully', missingOrganization);
      return { message: 'Organization(s) updated successfully.', data: results };
    },
  });

  const remove = defineRoute({
    path: '/v2/organizations/delete',
    tag: 'Organizations',
    doc: {
      summary: 'Delete organizations and everything in them',
      description: `${BATCH} Deleting an organization removes its folders, documents, user groups and grants. ` +
        'An organization that does not exist fails its item ("Organization does not exist").',
      example: { organizationIds: ['yourOrganizationId1', 'yourOrganizationId2'] },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizationIds: ids() }),
    response: orgOutcomes,
    async handler(data, ctx) {
      const results = await Promise.all(unique(data.organizationIds).map(async (organizationId) => {
        const stream = organizationStream(ctx.apiKey, organizationId);
        const { state } = await services.commands.load(organizationDecider, stream);
        // The hosted page's example: a missing organization is a failed item.
        if (state.status !== 'active') {
          return [organizationId, { success: false, id: organizationId, message: ORGANIZATION_DOES_NOT_EXIST }] as const;
        }
        const outcome = await item(
          () => ctx.execute(organizationDecider, stream, {
            type: 'DeleteOrganization',
            data: { organizationId },
          }),
          () => ({ success: true, id: organizationId, message: 'Deleted Successfully' }),
          { id: organizationId },
          missingOrganization,
        );
        return [organizationId, outcome] as const;
      }));
      return { message: 'Organization(s) deleted successfully.', data: keyed(results) };
    },
  });

  const get = defineRoute({
    path: '/v2/organizations/get',
    tag: 'Organizations',
    doc: {
      summary: 'List organizations',
      description: 'Every organization of the API key, or those of `organizationIds` (at most 30; unknown ids are left out), in creation order. ' +
        `Paged: ${PAGE_SIZE_DOC}; while more rows follow, the answer carries the next token as \`result.pageToken\` ` +
        'and `result.nextPageToken`. A token is bound to the query that made it: with another query it is INVALID_ARGUMENT.',
      example: { organizationIds: ['yourOrganizationId'], pageSize: 1000 },
    },
    mutates: false,
    auth: 'apiKey',
    schema: z.object({ organizationIds: ids(30).optional(), pageSize: pageSize(), pageToken: pageToken() }),
    response: z.array(organizationRow),
    paged: 'both',
    async handler(data, ctx) {
      const page = await organizationsPage(services.read, ctx.apiKey, {
        organizationIds: data.organizationIds,
        pageSize: data.pageSize ?? DEFAULT_PAGE_SIZE,
        pageToken: data.pageToken,
      });
      return pageAnswer('Organization(s) retrieved successfully.', page);
    },
  });

  const disable = defineRoute({
    path: '/v2/organizations/access/disablestate/update',
    tag: 'Organizations',
    doc: {
      summary: 'Disable or enable organizations',
      description: `${BATCH} A disabled organization denies every document in it (permissions/get answers "Document is disabled"). ` +
        'An organization that does not exist fails its item ("Organization does not exist").',
      example: { organizationIds: ['yourOrganizationId1', 'yourOrganizationId2'], disabled: true },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizationIds: ids(), disabled: z.boolean() }),
    response: orgOutcomes,
    async handler(data, ctx) {
      const results = await Promise.all(unique(data.organizationIds).map(async (organizationId) => [
        organizationId,
        await item(
          () => ctx.execute(organizationDecider, organizationStream(ctx.apiKey, organizationId), {
            type: 'SetOrganizationDisabled',
            data: { organizationId, disabled: data.disabled },
          }),
          () => ({ success: true, id: organizationId, message: 'Updated disable state for organization Successfully' }),
          { id: organizationId },
          missingOrganization,
        ),
      ] as const));
      return { message: 'Updated disable state for Organization(s) successfully.', data: keyed(results) };
    },
  });

  return [add, get, update, remove, disable];
}
