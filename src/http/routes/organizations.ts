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
import { organizationDecider, organizationNotFound } from '../../../commands/organization.js';
import { organizationsPage } from '../../../queries/organizations.js';
import { DEFAULT_PAGE_SIZE } from '../../../queries/paging.js';
import type { Services } from '../../services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id, ids, items, text } from '../validation.js';
import { eachItem, item, keyed, pageAnswer, pageSize, pageToken, unique, type Failure } from './domain.js';
import { organizationStream } from '../../../commands/organization.js';

/** The hosted API's per-item string for a missing organization (no final period there). */
const ORGANIZATION_DOES_NOT_EXIST = 'Organization does not exist';
const missingOrganization: Failure = (e) => ({ message: e.status === 'NOT_FOUND' ? ORGANIZATION_DOES_NOT_EXIST : e.message });

const orgSchema = z.object({ organizationId: id(), organizationName: text(256).optional() });

export function organizationRoutes(services: Services): AnyRoute[] {
  const add = defineRoute({
    path: '/v2/organizations/add',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizations: items(orgSchema) }),
    async handler(data, ctx) {
      // An existing organization takes the name sent (the hosted API's OpenAPI description:
      // "If an organization already exists, this will update its metadata").
      const results = await eachItem(data.organizations, (o) => o.organizationId, (o) =>
        ctx.execute(organizationDecider, organizationStream(ctx.apiKey, o.organizationId), {
          type: 'CreateOrganization',
          data: { organizationId: o.organizationId, organizationName: o.organizationName, updateExisting: true },
          metadata: { now: ctx.now },
        }), 'Added Successfully');
      return { message: 'Organization(s) added successfully.', data: results };
    },
  });

  const update = defineRoute({
    path: '/v2/organizations/update',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizations: items(orgSchema) }),
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
          metadata: { now: ctx.now },
        });
      }, 'Updated Successfully', missingOrganization);
      return { message: 'Organization(s) updated successfully.', data: results };
    },
  });

  const remove = defineRoute({
    path: '/v2/organizations/delete',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizationIds: ids() }),
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
            metadata: { now: ctx.now },
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
    mutates: false,
    auth: 'apiKey',
    schema: z.object({ organizationIds: ids(30).optional(), pageSize: pageSize(), pageToken: pageToken() }),
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
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizationIds: ids(), disabled: z.boolean() }),
    async handler(data, ctx) {
      const results = await Promise.all(unique(data.organizationIds).map(async (organizationId) => [
        organizationId,
        await item(
          () => ctx.execute(organizationDecider, organizationStream(ctx.apiKey, organizationId), {
            type: 'SetOrganizationDisabled',
            data: { organizationId, disabled: data.disabled },
            metadata: { now: ctx.now },
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
