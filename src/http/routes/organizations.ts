/**
 * Organizations (semantics §4a): add, get, update, delete, disabled state.
 * Each organization is its own stream, so batch items run in parallel.
 *
 * Messages are the hosted API's, character for character (semantics §0; its pages under
 * rest-apis/v2/organizations/), capitals and missing final periods included. Each item's
 * `id` echoes the organizationId sent (semantics §1): the hosted API shows an internal hash
 * there, which no client can make use of (docs/compatibility.md). What each route does is
 * src/usecases/organizations.ts.
 */
import { z } from 'zod';
import { addOrganizations, deleteOrganizations, listOrganizations, renameOrganizations, setOrganizationsDisabled } from '../../usecases/organizations.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id, ids, items, text } from '../validation.js';
import { idOutcome, PAGE_SIZE_DOC, outcomesById, pageAnswer, pageSize, pageToken } from './domain.js';

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
  handler: async (data, ctx) => ({ message: 'Organization(s) added successfully.', data: await addOrganizations(ctx, data.organizations) }),
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
  handler: async (data, ctx) => ({ message: 'Organization(s) updated successfully.', data: await renameOrganizations(ctx, data.organizations) }),
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
  handler: async (data, ctx) => ({ message: 'Organization(s) deleted successfully.', data: await deleteOrganizations(ctx, data.organizationIds) }),
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
  handler: async (data, ctx) => pageAnswer('Organization(s) retrieved successfully.', await listOrganizations(ctx, data)),
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
  handler: async (data, ctx) => ({
    message: 'Updated disable state for Organization(s) successfully.',
    data: await setOrganizationsDisabled(ctx, data.organizationIds, data.disabled),
  }),
});

export function organizationRoutes(): AnyRoute[] {
  return [add, get, update, remove, disable];
}
