/**
 * Documents (spec: documents/add|get|update|delete|move, documents/access/update,
 * documents/access/disablestate/update). One stream per document, so batch items run in
 * parallel (the embedded store commits one event-loop turn's appends together).
 *
 * Folder existence is checked against the organization's tree (the write model). A
 * document whose folder was deleted is gone for every command too ("orphaned"): the
 * deletion cascade appends its DocumentDeleted, and until it has, the routes treat it as
 * missing (and documents/add replaces it).
 *
 * Messages are the hosted API's, character for character (semantics §0;
 * rest-apis/v2/documents/*). A refused item carries the hosted per-item `code`
 * ("already-exists", "not-found"), but inside a success: the hosted API answers a batch with
 * one failed item with 500 INTERNAL and the breakdown in `error.details`, which semantics §0
 * keeps out on purpose (docs/compatibility.md).
 */
import { z } from 'zod';
import { documentDecider, documentNotFound, documentStream, type DocumentState } from '../../../commands/document.js';
import { getFolder, normalizeParent, type Tree } from '../../../commands/folder-tree.js';
import { organizationTree } from '../../usecases/organization-tree.js';
import { organizationDecider, organizationStream } from '../../../commands/organization.js';
import { documentsPage, documentRowsJson } from '../../../queries/documents.js';
import { requireOrganization } from '../../../queries/organizations.js';
import { DEFAULT_PAGE_SIZE } from '../../../queries/paging.js';
import { ApiError, invalidArgument, notFound } from '../../shared/errors.js';
import type { Services } from '../../composition/services.js';
import { defineRoute, type AnyRoute } from '../route.js';
import type { RequestContext } from '../context.js';
import { id, ids, items, text } from '../validation.js';
import { NO_DATA } from '../schema.js';
import {
  accessEcho,
  accessType,
  bareOutcome,
  eachItem,
  failureCode,
  idOutcome,
  item,
  itemCode,
  keyed,
  outcomesById,
  PAGE_SIZE_DOC,
  pageSize,
  pageToken,
  unique,
  type Failure,
} from './domain.js';

const docSchema = z.object({
  documentId: id(),
  documentName: text(1024).optional(),
  accessType: accessType().optional(),
  disabled: z.boolean().optional(),
});

/** A refused document item: the refusal's message (the hosted strings) and the hosted `code`. */
const documentFailure: Failure = (e) => ({ message: e.message, code: itemCode(e.status) });

/** documents/add and update: `{ success, id, message, code? }` per document. */
const documentOutcomes = outcomesById(idOutcome.extend({ code: failureCode() }));

/** A documents/get row (queries/documents.ts `documentsPage`, written by `documentRowsJson`). */
const documentRow = z.object({
  id: z.string().describe('The documentId.'),
  documentName: z.string().describe('The document id when it was added without a name.'),
  disabled: z.boolean(),
  accessType: accessType().describe('The effective access type: its own, else its folder\'s, else the organization default.'),
  folderId: z.string().optional().describe('The folder it is in; absent at the organization root.'),
});

const BATCH = 'Each document is its own item: one that fails does not stop the others, and carries the hosted `code` ' +
  '(`not-found`, `already-exists`...). `data` is keyed by documentId, each id once (its first occurrence). ' +
  'An organization that does not exist is NOT_FOUND.';

const orphaned = (state: DocumentState, tree: Tree) =>
  state.status === 'active' && state.folderId !== null && !getFolder(tree, state.folderId);

/** The document's state, with an orphan (its folder deleted) seen as missing after removing it. */
async function current(ctx: RequestContext, tree: Tree, organizationId: string, documentId: string): Promise<DocumentState> {
  const stream = documentStream(ctx.apiKey, organizationId, documentId);
  const { state } = await ctx.services.commands.load(documentDecider, stream);
  if (!orphaned(state, tree)) return state;
  await ctx.execute(documentDecider, stream, {
    type: 'DeleteDocument',
    data: { organizationId, documentId, reason: 'folderDeleted' },
  });
  return { status: 'none' };
}

export function documentRoutes(services: Services): AnyRoute[] {
  const add = defineRoute({
    path: '/v2/organizations/documents/add',
    tag: 'Documents',
    doc: {
      summary: 'Add documents, at the organization root or in a folder',
      description: `${BATCH} With \`createOrganization: true\` a missing organization is created first, with \`createFolder: true\` ` +
        'a missing `folderId` (at the organization root). A folder that does not exist otherwise fails every item ("Folder does not exist"); ' +
        'a document id that exists fails its item ("Document already exists"). Without `accessType` a document inherits its folder\'s.',
      example: { organizationId: 'yourOrganizationId', folderId: 'yourFolderId', documents: [{ documentId: 'yourDocumentId', documentName: 'Your Document Name' }] },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      organizationId: id(),
      createOrganization: z.boolean().optional(),
      folderId: id().optional(),
      createFolder: z.boolean().optional(),
      documents: items(docSchema),
    }),
    response: documentOutcomes,
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      const { organizationId } = data;
      const orgStream = organizationStream(ctx.apiKey, organizationId);
      if (data.createOrganization) {
        await ctx.execute(organizationDecider, orgStream, { type: 'CreateOrganization', data: { organizationId, ifMissing: true } });
      }
      let tree = await organizationTree(services, ctx.apiKey, organizationId);
      const folderId = normalizeParent(data.folderId) ?? null;
      if (folderId !== null && !getFolder(tree, folderId) && data.createFolder) {
        const r = await ctx.execute(organizationDecider, orgStream, {
          type: 'AddFolders',
          data: { organizationId, folders: [{ folderId }], maxDepth: services.config.folderMaxDepth },
        });
        if (r.state.status === 'active') tree = r.state.tree;
      }
      const folderMissing = folderId !== null && !getFolder(tree, folderId);
      const results = await eachItem(data.documents, (d) => d.documentId, async (d) => {
        if (folderMissing) throw notFound('Folder does not exist');
        const stream = documentStream(ctx.apiKey, organizationId, d.documentId);
        const add = () =>
          ctx.execute(documentDecider, stream, {
            type: 'AddDocument',
            data: { organizationId, documentId: d.documentId, documentName: d.documentName, folderId, accessType: d.accessType, disabled: d.disabled },
          });
        // The document is looked at only when it exists already (a new one costs no stream
        // read): an orphan, whose folder was deleted, is removed and the add goes through.
        try {
          await add();
        } catch (err) {
          if (!(err instanceof ApiError && err.status === 'ALREADY_EXISTS')) throw err;
          if ((await current(ctx, tree, organizationId, d.documentId)).status === 'active') throw err;
          await add();
        }
      }, 'Added Successfully', documentFailure);
      return { message: 'Document(s) added successfully.', data: results };
    },
  });

  const get = defineRoute({
    path: '/v2/organizations/documents/get',
    tag: 'Documents',
    doc: {
      summary: 'List documents of an organization',
      description: 'Every document of the organization, or those of `documentIds` (at most 30; unknown ids are left out), or those ' +
        `directly in \`folderId\`, in creation order. Paged: ${PAGE_SIZE_DOC}; \`result.pageToken\` while more rows follow. ` +
        'A token is bound to the query that made it: with another query, or garbled, it is INVALID_ARGUMENT. ' +
        'An organization or folder that does not exist is NOT_FOUND.',
      example: { organizationId: 'yourOrganizationId', documentIds: ['yourDocumentId1', 'yourDocumentId2'] },
    },
    mutates: false,
    auth: 'apiKey',
    schema: z.object({
      organizationId: id(),
      documentIds: ids(30).optional(),
      folderId: id().optional(),
      pageSize: pageSize(),
      pageToken: pageToken(),
    }),
    response: z.array(documentRow),
    paged: 'pageToken',
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      await requireOrganization(services.read, ctx.apiKey, data.organizationId);
      const { organizationId, documentIds, folderId, pageToken } = data;
      const page = await documentsPage(services.read, ctx.apiKey, { organizationId, documentIds, folderId, pageToken, pageSize: data.pageSize ?? DEFAULT_PAGE_SIZE });
      return { message: 'Document(s) retrieved successfully.', data: page.rows, pageToken: page.pageToken };
    },
    dataJson: documentRowsJson,
  });

  const update = defineRoute({
    path: '/v2/organizations/documents/update',
    tag: 'Documents',
    doc: {
      summary: 'Update documents (name, access type, disabled)',
      description: `${BATCH} Only the fields sent change. A document that does not exist fails its item ("Document does not exist").`,
      example: { organizationId: 'yourOrganizationId', documents: [{ documentId: 'yourDocumentId', documentName: 'Your Document Name' }] },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizationId: id(), documents: items(docSchema) }),
    response: documentOutcomes,
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      const { organizationId } = data;
      const tree = await organizationTree(services, ctx.apiKey, organizationId);
      const results = await eachItem(data.documents, (d) => d.documentId, async (d) => {
        if ((await current(ctx, tree, organizationId, d.documentId)).status !== 'active') throw documentNotFound();
        await ctx.execute(documentDecider, documentStream(ctx.apiKey, organizationId, d.documentId), {
          type: 'UpdateDocument',
          data: { organizationId, documentId: d.documentId, documentName: d.documentName, accessType: d.accessType, disabled: d.disabled },
        });
      }, 'Updated Successfully', documentFailure);
      return { message: 'Document(s) updated successfully.', data: results };
    },
  });

  const remove = defineRoute({
    path: '/v2/organizations/documents/delete',
    tag: 'Documents',
    doc: {
      summary: 'Delete documents',
      description: 'Each document is its own item, keyed by documentId (each id once). A document that does not exist is not a failure: ' +
        'its item is `success: true` with "Document does not exist". The documents\' grants go with them. ' +
        'An organization that does not exist is NOT_FOUND.',
      example: { organizationId: 'yourOrganizationId', documentIds: ['yourDocumentId1', 'yourDocumentId2'] },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizationId: id(), documentIds: ids() }),
    response: outcomesById(idOutcome),
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      const { organizationId } = data;
      const tree = await organizationTree(services, ctx.apiKey, organizationId);
      const results = await Promise.all(unique(data.documentIds).map(async (documentId) => {
        const existed = (await current(ctx, tree, organizationId, documentId)).status === 'active';
        const r = await ctx.execute(documentDecider, documentStream(ctx.apiKey, organizationId, documentId), {
          type: 'DeleteDocument',
          data: { organizationId, documentId, reason: 'request' },
        });
        const deleted = existed && r.events.length > 0;
        // spec: a missing document is `success: true` with a does-not-exist message (the
        // hosted API's string, without its 500; semantics §0).
        return [documentId, { success: true, id: documentId, message: deleted ? 'Deleted Successfully' : 'Document does not exist' }] as const;
      }));
      return { message: 'Document(s) deleted successfully.', data: keyed(results) };
    },
  });

  const move = defineRoute({
    path: '/v2/organizations/documents/move',
    tag: 'Documents',
    doc: {
      summary: 'Move documents to a folder',
      description: 'At most 30 documents, all or none: a document that does not exist fails the whole call with INVALID_ARGUMENT naming it, ' +
        'before anything moves. `folderId` `"root"` moves them to the organization root; a folder that does not exist is NOT_FOUND, ' +
        'as is an organization that does not exist. Moved documents without an access type of their own take the new folder\'s. ' +
        'The answer has no `data`.',
      example: { organizationId: 'yourOrganizationId', documentIds: ['yourDocumentId1', 'yourDocumentId2'], folderId: 'targetFolderId' },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizationId: id(), documentIds: ids(30), folderId: id() }),
    response: NO_DATA,
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      const { organizationId } = data;
      const tree = await organizationTree(services, ctx.apiKey, organizationId);
      const folderId = normalizeParent(data.folderId) ?? null;
      if (folderId !== null && !getFolder(tree, folderId)) throw notFound(`Folder ${JSON.stringify(folderId)} does not exist.`);
      const documentIds = unique(data.documentIds);
      // semantics §4: a missing document fails the whole call, before anything moves.
      const states = await Promise.all(documentIds.map((d) => current(ctx, tree, organizationId, d)));
      const missing = documentIds.filter((_, i) => states[i]!.status !== 'active');
      if (missing.length > 0) {
        throw invalidArgument(`data.documentIds: document(s) ${missing.map((m) => JSON.stringify(m)).join(', ')} do not exist.`);
      }
      await Promise.all(documentIds.map((documentId) =>
        ctx.execute(documentDecider, documentStream(ctx.apiKey, organizationId, documentId), {
          type: 'MoveDocument',
          data: { organizationId, documentId, folderId },
        }),
      ));
      return { message: 'Documents moved successfully.' };
    },
  });

  const access = defineRoute({
    path: '/v2/organizations/documents/access/update',
    tag: 'Documents',
    doc: {
      summary: 'Set the access type of documents',
      description: 'Sets `accessType` (default `public`) on each document, or with `inheritFromParent: true` clears it so the document ' +
        `inherits its folder's (at the root, the organization default). ${BATCH} A document that does not exist fails its item. ` +
        'Each item echoes the access type set.',
      example: { organizationId: 'yourOrganizationId', documentIds: ['yourDocumentId1', 'yourDocumentId2'], accessType: 'organizationPrivate' },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({
      organizationId: id(),
      documentIds: ids(),
      accessType: accessType().optional(),
      inheritFromParent: z.boolean().optional(),
    }),
    response: outcomesById(bareOutcome.extend({ ...accessEcho, code: failureCode() })),
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      const { organizationId } = data;
      const tree = await organizationTree(services, ctx.apiKey, organizationId);
      const value = data.inheritFromParent ? null : (data.accessType ?? 'public');
      const shown = value === null ? { accessType: null, inheritFromParent: true } : { accessType: value };
      const results = await Promise.all(unique(data.documentIds).map(async (documentId) => [
        documentId,
        await item(
          async () => {
            if ((await current(ctx, tree, organizationId, documentId)).status !== 'active') throw documentNotFound();
            await ctx.execute(documentDecider, documentStream(ctx.apiKey, organizationId, documentId), {
              type: 'SetDocumentAccess',
              data: { organizationId, documentId, accessType: value },
            });
          },
          () => ({ success: true, ...shown, message: 'Document access type updated.' }),
          shown,
          documentFailure,
        ),
      ] as const));
      return { message: 'Updated access for documents successfully.', data: keyed(results) };
    },
  });

  const disable = defineRoute({
    path: '/v2/organizations/documents/access/disablestate/update',
    tag: 'Documents',
    doc: {
      summary: 'Disable or enable documents',
      description: `Sets \`disabled\` (default false) on each document: permissions/get denies a disabled document to everyone ("Document is disabled"). ${BATCH} ` +
        'A document that does not exist fails its item. Each item echoes the state set.',
      example: { organizationId: 'yourOrganizationId', documentIds: ['yourDocumentId'], disabled: true },
    },
    mutates: true,
    auth: 'apiKey',
    schema: z.object({ organizationId: id(), documentIds: ids(), disabled: z.boolean().optional() }),
    response: outcomesById(bareOutcome.extend({ disabled: z.boolean().describe('The disabled state set.'), code: failureCode() })),
    errors: ['NOT_FOUND'],
    async handler(data, ctx) {
      const { organizationId } = data;
      const disabled = data.disabled ?? false;
      const tree = await organizationTree(services, ctx.apiKey, organizationId);
      const results = await Promise.all(unique(data.documentIds).map(async (documentId) => [
        documentId,
        await item(
          async () => {
            if ((await current(ctx, tree, organizationId, documentId)).status !== 'active') throw documentNotFound();
            await ctx.execute(documentDecider, documentStream(ctx.apiKey, organizationId, documentId), {
              type: 'SetDocumentDisabled',
              data: { organizationId, documentId, disabled },
            });
          },
          () => ({ success: true, disabled, message: 'Document disabled state updated.' }),
          { disabled },
          documentFailure,
        ),
      ] as const));
      return { message: 'Updated disable state for documents successfully.', data: keyed(results) };
    },
  });

  return [add, get, update, remove, move, access, disable];
}
