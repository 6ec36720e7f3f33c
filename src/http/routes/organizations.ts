/**
 * Organizations (semantics §4a): add, get, update, delete, disabled state.
 * Each organization is its own stream, so batch items run in parallel.
 */
import { z } from 'zod';
import { organizationDecider, organizationNotFound } from '../../../commands/organization.js';
import { organizationsPage } from '../../../queries/organizations.js';
import { DEFAULT_PAGE_SIZE } from '../../../queries/paging.js';
import type { Services } from '../../services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id, ids, items, text } from '../validation.js';
import { eachItem, item, keyed, pageSize, pageToken, unique } from './domain.js';
import { organizationStream } from '../../../commands/organization.js';

const orgSchema = z.object({ organizationId: id(), organizationName: text(256).optional() });

export function organizationRoutes(services: Services): AnyRoute[] {
  const add = defineRoute({
    path: '/v2/organizations/add',
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizations: items(orgSchema) }),
    async handler(data, ctx) {
      const results = await eachItem(data.organizations, (o) => o.organizationId, (o) =>
        ctx.execute(organizationDecider, organizationStream(ctx.apiKey, o.organizationId), {
          type: 'CreateOrganization',
          data: { organizationId: o.organizationId, organizationName: o.organizationName },
          metadata: { now: ctx.now },
        }), 'Organization added.');
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
      }, 'Organization updated.');
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
        if (state.status !== 'active') {
          return [organizationId, { success: true, id: organizationId, message: 'Organization does not exist.' }] as const;
        }
        const outcome = await item(
          () => ctx.execute(organizationDecider, stream, {
            type: 'DeleteOrganization',
            data: { organizationId },
            metadata: { now: ctx.now },
          }),
          () => ({ success: true, id: organizationId, message: 'Organization deleted.' }),
          { id: organizationId },
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
      return {
        message: 'Organization(s) retrieved successfully.',
        data: page.rows,
        pageToken: page.pageToken,
        ...(page.pageToken ? { extra: { nextPageToken: page.pageToken } } : {}),
      };
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
          () => ({ success: true, disabled: data.disabled, message: 'Organization disabled state updated.' }),
          { disabled: data.disabled },
        ),
      ] as const));
      return { message: 'Updated disable state for organizations successfully.', data: keyed(results) };
    },
  });

  return [add, get, update, remove, disable];
}
