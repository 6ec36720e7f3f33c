/**
 * Documents (spec: documents/add|get|update|delete|move, documents/access/update,
 * documents/access/disablestate/update): the requests and answers. What each does is a use
 * case in src/usecases/documents.ts (orphaned documents, per-item outcomes).
 *
 * Messages are the hosted API's, character for character (semantics §0;
 * rest-apis/v2/documents/*). A refused item carries the hosted per-item `code`
 * ("already-exists", "not-found"), but inside a success: the hosted API answers a batch with
 * one failed item with 500 INTERNAL and the breakdown in `error.details`, which semantics §0
 * keeps out on purpose (docs/compatibility.md).
 */
import { z } from 'zod';
import type { Services } from '../../composition/services.js';
import {
  addDocuments,
  deleteDocuments,
  listDocuments,
  moveDocuments,
  setDocumentsAccess,
  setDocumentsDisabled,
  updateDocuments,
} from '../../usecases/documents.js';
import { defineRoute, type AnyRoute } from '../route.js';
import { id, ids, items, text } from '../validation.js';
import { NO_DATA } from '../schema.js';
import { accessEcho, accessType, bareOutcome, failureCode, idOutcome, outcomesById, PAGE_SIZE_DOC, pageSize, pageToken } from './domain.js';

const docSchema = z.object({
  documentId: id(),
  documentName: text(1024).optional(),
  accessType: accessType().optional(),
  disabled: z.boolean().optional(),
});

/** documents/add and update: `{ success, id, message, code? }` per document. */
const documentOutcomes = outcomesById(idOutcome.extend({ code: failureCode() }));

/** A documents/get row (queries/documents.ts `documentsPage`). */
const documentRow = z.object({
  id: z.string().describe('The documentId (the name the hosted page shows).'),
  documentName: z.string().describe('The document id when it was added without a name.'),
  disabled: z.boolean(),
  accessType: accessType().describe('The effective access type: its own, else its folder\'s, else the organization default.'),
  folderId: z.string().optional().describe('The folder it is in; absent at the organization root.'),
  documentId: z.string().describe('The documentId again (the name the hosted OpenAPI document requires).'),
});

const BATCH = 'Each document is its own item: one that fails does not stop the others, and carries the hosted `code` ' +
  '(`not-found`, `already-exists`...). `data` is keyed by documentId, each id once (its first occurrence). ' +
  'An organization that does not exist is NOT_FOUND.';

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
  handler: async (data, ctx) => ({ message: 'Document(s) added successfully.', data: await addDocuments(ctx, data) }),
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
    const page = await listDocuments(ctx, data);
    return { message: 'Document(s) retrieved successfully.', data: page.rows, pageToken: page.pageToken };
  },
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
  handler: async (data, ctx) => ({ message: 'Document(s) updated successfully.', data: await updateDocuments(ctx, data) }),
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
  handler: async (data, ctx) => ({ message: 'Document(s) deleted successfully.', data: await deleteDocuments(ctx, data) }),
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
    await moveDocuments(ctx, data);
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
  handler: async (data, ctx) => ({ message: 'Updated access for documents successfully.', data: await setDocumentsAccess(ctx, data) }),
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
  handler: async (data, ctx) => ({ message: 'Updated disable state for documents successfully.', data: await setDocumentsDisabled(ctx, data) }),
});

/** Every route takes the services; these need none beyond the request's context. */
export function documentRoutes(_services: Services): AnyRoute[] {
  return [add, get, update, remove, move, access, disable];
}
