/**
 * Helpers shared by the domain routes (organizations, folders, documents, users, groups,
 * permissions): the answer schemas of per-item outcomes (the batches themselves are run by
 * src/usecases/batch.ts, re-exported here), paged answers, and the schema pieces they share,
 * request and answer alike: the grant resources and access context of permissions/add,
 * remove and generate_token, and a permission entry. Stream names live beside their
 * deciders (commands/); the use cases these routes call live in src/usecases/.
 */
import { z } from 'zod';
import { ACCESS_TYPES } from '../../../commands/folder-tree.js';
import { ACCESS_ROLES, MAX_ACCESS_FIELDS_PER_GRANT } from '../../../commands/grant.js';
import { id } from '../validation.js';
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from '../../../queries/paging.js';


export const accessType = () => z.enum(ACCESS_TYPES);
export const pageSize = () => z.number().int().min(1).max(MAX_PAGE_SIZE).optional();
export const pageToken = () => z.string().min(1).max(4096).optional();

/** The paging rule of a list, for its route's description. */
export const PAGE_SIZE_DOC = `\`pageSize\` 1 to ${MAX_PAGE_SIZE} (default ${DEFAULT_PAGE_SIZE})`;

// ---- answer schemas (the `response` of the domain routes) ----

export const accessRole = () => z.enum(ACCESS_ROLES);

const succeeded = () => z.boolean().describe('Whether this item went through. A failed item changes nothing and leaves the other items as they are.');
const itemMessage = () => z.string().describe("What happened to this item (the hosted API's strings).");

/** `{ [id]: outcome }`: a batch's answer, one entry per distinct id sent. */
export const outcomesById = <T extends z.ZodType>(outcome: T) => z.record(z.string(), outcome);

/** `{ success, id, message }`: one item of a batch, `id` echoing the id sent. */
export const idOutcome = z.object({
  success: succeeded(),
  id: z.string().describe('The id sent for this item.'),
  message: itemMessage(),
});

/** `{ success, message }`: an item whose outcome names no id beyond its key. */
export const bareOutcome = z.object({ success: succeeded(), message: itemMessage() });

/** The per-item `code` of a refused documents item (`itemCode` in src/usecases/batch.ts). */
export const failureCode = () =>
  z
    .string()
    .optional()
    .describe('On a failed item only: the refusal\'s status in lower case with dashes, as the hosted API shows it (`already-exists`, `not-found`).');

/** What an access update echoes per item: the type set, or inheritance from the parent. */
export const accessEcho = {
  accessType: accessType().nullable().describe('The access type set; null when the item now inherits it from its parent.'),
  inheritFromParent: z.literal(true).optional().describe('Present (true) when the item now inherits its access type from its parent.'),
};

/** A folder row of folders/get (queries/folders.ts `folderRow`), with its subfolders when asked. */
export const folderRowSchema: z.ZodType = z
  .object({
    folderId: z.string(),
    folderName: z.string(),
    organizationId: z.string(),
    parentFolderId: z.string().describe('The parent folder\'s id; `"root"` for a folder at the organization root.'),
    apiKey: z.string().describe('The API key the folder belongs to (the caller\'s own).'),
    createdAt: z.number().describe('Creation time, milliseconds since the epoch.'),
    lastUpdated: z.number().describe('Last change to the folder or its placement, milliseconds since the epoch.'),
    ancestors: z.array(z.string()).describe('The folders above it, from `"root"` down to its parent.'),
    accessType: accessType().describe('The effective access type: its own, else inherited from its parent (at the root, the organization default).'),
    inheritAccessFromParent: z.boolean().describe('True when the folder has no access type of its own.'),
    get subFolders() {
      return z
        .array(folderRowSchema)
        .optional()
        .describe('Its subfolders in creation order, on a folders/get with `folderId` for the folders above `maxDepth` (empty: none). Absent on the deepest level shown and on the all-folders list.');
    },
  })
  .meta({ id: 'FolderRow' });

/** A users/get row (queries/users.ts `userRow`): the profile and the grant that counts at the scope. */
export const userRowSchema = z.object({
  userId: z.string(),
  name: z.string().optional().describe('Absent when never given (a user known only from a grant: permissions/add).'),
  email: z.string().optional().describe('Absent when never given; an e-mail address when present.'),
  initial: z.string().optional().describe('Absent when there is no name and none was given.'),
  accessRole: accessRole(),
  expiresAt: z.number().optional().describe('Unix seconds; only on a temporary grant.'),
});

/**
 * A page of a list that clients of the hosted API read the next token of in
 * `result.nextPageToken` as well as `result.pageToken` (semantics §4a): both, or neither on
 * the last page.
 */
export function pageAnswer(message: string, page: { rows: unknown; pageToken?: string }) {
  return {
    message,
    data: page.rows,
    pageToken: page.pageToken,
    ...(page.pageToken ? { extra: { nextPageToken: page.pageToken } } : {}),
  };
}

// Per-item outcomes and how a batch collects them are the use cases' (src/usecases/items.ts);
// the routes describe them with the schemas below.
export type { Outcome } from '../../usecases/items.js';

// ---- grants (permissions/add|remove and generate_token take resources; permissions/get and access/explain answer entries) ----

/** semantics §1 Limits, access context (docs/limits.md). */
const MAX_ACCESS_FIELD_NAME = 128;
const MAX_ACCESS_VALUE = 256;

const accessValue = z.union([z.string().min(1).max(MAX_ACCESS_VALUE), z.number()]);
/**
 * `context.access`: `{ field: value | value[] }`, values strings or numbers. A field name
 * holds no colon (the reported form is `"field:value"`, and `"a:b:c"` must read one way:
 * field `a`, value `b:c`). At most 200 fields and 200 field:value pairs per resource, the
 * most one grant may hold.
 */
const accessSchema = z
  .record(z.string(), z.union([accessValue, z.array(accessValue).max(MAX_ACCESS_FIELDS_PER_GRANT)]))
  .superRefine((access, ctx) => {
    const names = Object.keys(access);
    if (names.length > MAX_ACCESS_FIELDS_PER_GRANT) {
      ctx.addIssue({ code: 'custom', message: `must have at most ${MAX_ACCESS_FIELDS_PER_GRANT} fields` });
      return;
    }
    let pairs = 0;
    for (const name of names) {
      if (name.length === 0 || name.length > MAX_ACCESS_FIELD_NAME) {
        ctx.addIssue({ code: 'custom', path: [name], message: `is not a valid field name: field names are 1 to ${MAX_ACCESS_FIELD_NAME} characters` });
      } else if (name.includes(':')) {
        ctx.addIssue({ code: 'custom', path: [name], message: 'is not a valid field name: field names may not contain ":"' });
      }
      const v = access[name]!;
      pairs += Array.isArray(v) ? v.length : 1;
    }
    if (pairs > MAX_ACCESS_FIELDS_PER_GRANT) {
      ctx.addIssue({ code: 'custom', message: `must have at most ${MAX_ACCESS_FIELDS_PER_GRANT} field:value pairs (it has ${pairs})` });
    }
  });

export const resourceSchema = z
  .object({
    type: z.enum(['organization', 'folder', 'document']),
    id: id(),
    organizationId: id().optional(),
    accessRole: z.enum(ACCESS_ROLES).optional(),
    expiresAt: z.number().int().positive().optional(),
    context: z.object({ access: accessSchema.optional() }).optional(),
  })
  .refine((r) => r.type === 'organization' || r.organizationId !== undefined, {
    message: 'organizationId is required for folder and document resources',
    path: ['organizationId'],
  });
export type ResourceInput = z.output<typeof resourceSchema>;

/**
 * A permissions/get entry in a success (queries/permissions.ts `Entry`): allowed or denied.
 * The third kind, `does_not_exist`, only appears in a NOT_FOUND's `details`.
 */
export const permissionEntry = z.union([
  z.object({
    accessRole: accessRole(),
    accessType: accessType().optional().describe('The resource\'s effective access type (absent on the organization entry).'),
    expiresAt: z.number().optional().describe('Unix seconds, when the grant that decides is temporary.'),
  }),
  z.object({
    error: z.string().describe('"User does not have access to document" (folder, organization), or "Document is disabled".'),
    errorCode: z.literal('permission_denied'),
    accessType: accessType().optional().describe('The resource\'s effective access type (absent on the organization entry).'),
  }),
]);

/**
 * `asOf` (issue 25): the question as it would have been answered at that instant. Checked in
 * the use case (src/usecases/access.ts parseAsOf), which names the field when it is refused.
 */
export const asOf = () =>
  z
    .union([
      z.string().max(64).describe('An ISO 8601 instant in UTC with milliseconds, as `"2026-11-25T15:04:05.123Z"`.'),
      z.number().describe('Unix milliseconds.'),
    ])
    .optional()
    .describe('Answer as of this past instant (ISO 8601 UTC with milliseconds, or Unix milliseconds): every event at or before it counts, ' +
      'a temporary grant while `asOf` is before its `expiresAt`, and what did not exist then answers as missing. After now, before the ' +
      'history retention horizon (now minus the server\'s `HISTORY_RETENTION_DAYS`, when set), or malformed: INVALID_ARGUMENT. Absent: now.');
