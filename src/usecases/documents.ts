/**
 * Documents (spec: documents/add|get|update|delete|move, documents/access/update,
 * documents/access/disablestate/update), the use cases behind src/http/routes/documents.ts.
 * One stream per document, so batch items run in parallel (the embedded store commits one
 * event-loop turn's appends together).
 *
 * Folder existence is checked against the organization's tree (the write model). A
 * document whose folder was deleted is gone for every command too ("orphaned"): the
 * deletion cascade appends its DocumentDeleted, and until it has, these use cases treat it
 * as missing (and documents/add replaces it).
 *
 * A refused item carries the hosted per-item `code` ("already-exists", "not-found") beside
 * the hosted message (`documentFailure`); the answers' messages are the routes'.
 */
import { documentDecider, documentNotFound, documentStream, type DocumentCommand, type DocumentState } from '../../commands/document.js';
import { getFolder, normalizeParent, type AccessType, type Tree } from '../../commands/folder-tree.js';
import { organizationDecider, organizationStream } from '../../commands/organization.js';
import type { Unstamped } from '../runtime/decider.js';
import { documentsPage } from '../../queries/documents.js';
import { requireOrganization } from '../../queries/organizations.js';
import { DEFAULT_PAGE_SIZE } from '../../queries/paging.js';
import { ApiError, invalidArgument, notFound, type StatusCode } from '../shared/errors.js';
import { eachItem, item, itemCode, keyed, unique, type Failure, type Outcome } from './items.js';
import type { TenantContext, TenantReadContext } from './context.js';
import { organizationTree } from './organization-tree.js';

/** A document as documents/add and update take it. */
interface DocumentInput {
  documentId: string;
  documentName?: string | undefined;
  accessType?: AccessType | undefined;
  disabled?: boolean | undefined;
}

/** A refused document item: the refusal's message (the hosted strings) and the hosted `code`. */
const documentFailure: Failure = (e) => ({ message: e.message, code: itemCode(e.status) });

const orphaned = (state: DocumentState, tree: Tree) =>
  state.status === 'active' && state.folderId !== null && !getFolder(tree, state.folderId);

/** The document's state, with an orphan (its folder deleted) seen as missing after removing it. */
async function current(ctx: TenantContext, tree: Tree, organizationId: string, documentId: string): Promise<DocumentState> {
  const stream = documentStream(ctx.apiKey, organizationId, documentId);
  const { state } = await ctx.services.commands.load(documentDecider, stream);
  if (!orphaned(state, tree)) return state;
  await ctx.execute(documentDecider, stream, {
    type: 'DeleteDocument',
    data: { organizationId, documentId, reason: 'folderDeleted' },
  });
  return { status: 'none' };
}

/** Refuses unless the document is there (an orphan is removed first, and is not). */
async function requireDocument(ctx: TenantContext, tree: Tree, organizationId: string, documentId: string): Promise<void> {
  if ((await current(ctx, tree, organizationId, documentId)).status !== 'active') throw documentNotFound();
}

/** Runs `run`; a refusal with `status` comes back as the value, anything else is thrown on. */
async function refusal(status: StatusCode, run: () => Promise<unknown>): Promise<ApiError | undefined> {
  try {
    await run();
    return undefined;
  } catch (err) {
    if (err instanceof ApiError && err.status === status) return err;
    throw err;
  }
}

/**
 * The organization's tree once documents/add has created what it was asked to: the
 * organization (`createOrganization`), then a missing folder at the root (`createFolder`).
 */
async function placeFor(
  ctx: TenantReadContext,
  input: { organizationId: string; createOrganization?: boolean | undefined; createFolder?: boolean | undefined },
  folderId: string | null,
): Promise<Tree> {
  const { organizationId } = input;
  const orgStream = organizationStream(ctx.apiKey, organizationId);
  if (input.createOrganization) {
    await ctx.execute(organizationDecider, orgStream, { type: 'CreateOrganization', data: { organizationId, ifMissing: true } });
  }
  const tree = await organizationTree(ctx.services, ctx.apiKey, organizationId);
  if (folderId === null || getFolder(tree, folderId) || !input.createFolder) return tree;
  const r = await ctx.execute(organizationDecider, orgStream, {
    type: 'AddFolders',
    data: { organizationId, folders: [{ folderId }], maxDepth: ctx.services.config.folderMaxDepth },
  });
  return r.state.status === 'active' ? r.state.tree : tree;
}

/**
 * Adds one document. A new one costs no stream read: the add is tried first. When the id is
 * taken, the document there is looked at: an orphan (its folder deleted, the cascade not yet
 * through) is removed and the add made again; a live one is the refusal.
 * Example: d1 in folder f, f deleted, cascade pending: add d1 appends DocumentDeleted
 * (folderDeleted), then DocumentAdded.
 */
async function addDocument(ctx: TenantContext, tree: Tree, organizationId: string, folderId: string | null, d: DocumentInput): Promise<void> {
  const stream = documentStream(ctx.apiKey, organizationId, d.documentId);
  const command: Unstamped<DocumentCommand> = {
    type: 'AddDocument',
    data: { organizationId, documentId: d.documentId, documentName: d.documentName, folderId, accessType: d.accessType, disabled: d.disabled },
  };
  const taken = await refusal('ALREADY_EXISTS', () => ctx.execute(documentDecider, stream, command));
  if (!taken) return;
  if ((await current(ctx, tree, organizationId, d.documentId)).status === 'active') throw taken;
  await ctx.execute(documentDecider, stream, command);
}

/** documents/add: each document added at the organization root or in `folderId`. */
export async function addDocuments(
  ctx: TenantReadContext,
  input: { organizationId: string; createOrganization?: boolean | undefined; folderId?: string | undefined; createFolder?: boolean | undefined; documents: DocumentInput[] },
): Promise<Record<string, Outcome>> {
  const { organizationId } = input;
  const folderId = normalizeParent(input.folderId) ?? null;
  const tree = await placeFor(ctx, input, folderId);
  const folderMissing = folderId !== null && !getFolder(tree, folderId);
  return eachItem(input.documents, (d) => d.documentId, async (d) => {
    if (folderMissing) throw notFound('Folder does not exist');
    await addDocument(ctx, tree, organizationId, folderId, d);
  }, 'Added Successfully', documentFailure);
}

/** documents/get: a page of the organization's documents, or of `documentIds`, or of those in `folderId`. */
export async function listDocuments(
  ctx: TenantReadContext,
  input: { organizationId: string; documentIds?: string[] | undefined; folderId?: string | undefined; pageSize?: number | undefined; pageToken?: string | undefined },
) {
  await requireOrganization(ctx.services.read, ctx.apiKey, input.organizationId);
  const { organizationId, documentIds, folderId, pageToken } = input;
  const page = await documentsPage(ctx.services.read, ctx.apiKey, { organizationId, documentIds, folderId, pageToken, pageSize: input.pageSize ?? DEFAULT_PAGE_SIZE });
  // Both names of the id: the hosted page shows `id`, the hosted OpenAPI document's Document
  // requires `documentId` (docs/compatibility.md).
  return { rows: page.rows.map((r) => ({ ...r, documentId: r.id })), pageToken: page.pageToken };
}

/** documents/update: only the fields sent change; a missing document fails its item. */
export async function updateDocuments(ctx: TenantContext, input: { organizationId: string; documents: DocumentInput[] }): Promise<Record<string, Outcome>> {
  const { organizationId } = input;
  const tree = await organizationTree(ctx.services, ctx.apiKey, organizationId);
  return eachItem(input.documents, (d) => d.documentId, async (d) => {
    await requireDocument(ctx, tree, organizationId, d.documentId);
    await ctx.execute(documentDecider, documentStream(ctx.apiKey, organizationId, d.documentId), {
      type: 'UpdateDocument',
      data: { organizationId, documentId: d.documentId, documentName: d.documentName, accessType: d.accessType, disabled: d.disabled },
    });
  }, 'Updated Successfully', documentFailure);
}

/** documents/delete: a document that does not exist is a success saying so. */
export async function deleteDocuments(ctx: TenantContext, input: { organizationId: string; documentIds: string[] }): Promise<Record<string, Outcome>> {
  const { organizationId } = input;
  const tree = await organizationTree(ctx.services, ctx.apiKey, organizationId);
  const results = await Promise.all(unique(input.documentIds).map(async (documentId) => {
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
  return keyed(results);
}

/** documents/move: all or none; `folderId` "root" is the organization root. */
export async function moveDocuments(ctx: TenantContext, input: { organizationId: string; documentIds: string[]; folderId: string }): Promise<void> {
  const { organizationId } = input;
  const tree = await organizationTree(ctx.services, ctx.apiKey, organizationId);
  const folderId = normalizeParent(input.folderId) ?? null;
  if (folderId !== null && !getFolder(tree, folderId)) throw notFound(`Folder ${JSON.stringify(folderId)} does not exist.`);
  const documentIds = unique(input.documentIds);
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
}

/**
 * Runs `change` on each existing document of `documentIds`, each its own item; every item,
 * failed or not, echoes `shown` (what was set), a success with `message`.
 */
async function eachDocument(
  ctx: TenantContext,
  organizationId: string,
  documentIds: string[],
  change: (documentId: string) => Unstamped<DocumentCommand>,
  shown: Record<string, unknown>,
  message: string,
): Promise<Record<string, Outcome>> {
  const tree = await organizationTree(ctx.services, ctx.apiKey, organizationId);
  const results = await Promise.all(unique(documentIds).map(async (documentId) => [
    documentId,
    await item(
      async () => {
        await requireDocument(ctx, tree, organizationId, documentId);
        await ctx.execute(documentDecider, documentStream(ctx.apiKey, organizationId, documentId), change(documentId));
      },
      () => ({ success: true, ...shown, message }),
      shown,
      documentFailure,
    ),
  ] as const));
  return keyed(results);
}

/**
 * documents/access/update: `accessType` (default public) on each document, or with
 * `inheritFromParent` none of its own (it inherits its folder's).
 */
export function setDocumentsAccess(
  ctx: TenantContext,
  input: { organizationId: string; documentIds: string[]; accessType?: AccessType | undefined; inheritFromParent?: boolean | undefined },
): Promise<Record<string, Outcome>> {
  const { organizationId } = input;
  const value = input.inheritFromParent ? null : (input.accessType ?? 'public');
  const shown = value === null ? { accessType: null, inheritFromParent: true } : { accessType: value };
  return eachDocument(ctx, organizationId, input.documentIds, (documentId) => ({
    type: 'SetDocumentAccess',
    data: { organizationId, documentId, accessType: value },
  }), shown, 'Document access type updated.');
}

/** documents/access/disablestate/update: `disabled` (default false) on each document. */
export function setDocumentsDisabled(
  ctx: TenantContext,
  input: { organizationId: string; documentIds: string[]; disabled?: boolean | undefined },
): Promise<Record<string, Outcome>> {
  const { organizationId } = input;
  const disabled = input.disabled ?? false;
  return eachDocument(ctx, organizationId, input.documentIds, (documentId) => ({
    type: 'SetDocumentDisabled',
    data: { organizationId, documentId, disabled },
  }), { disabled }, 'Document disabled state updated.');
}
