/**
 * The history of the read models access is resolved from (issue 25, projections/history.ts):
 * organizations (existence, disabled flag), folders (the tree: parents, ancestors, access
 * types), documents (existence, folder, access type, disabled flag), user grants (role,
 * expiresAt, access fields), user group memberships and group grants. Each but documents is a
 * twin, a projection with its own checkpoint, so `projections rebuild` rebuilds them like the
 * others and a new deployment fills them from the start of the log. Documents keep theirs in
 * the documents projection itself, the open version in the live row (projections/
 * documents.ts, withOpenVersions in projections/history.ts).
 */
import type { Projection } from '../src/runtime/projection.js';
import { historyOf } from './history.js';
import { ORGANIZATIONS, organizationsProjection } from './organizations.js';
import { FOLDERS, foldersProjection } from './folders.js';
import { DOCUMENTS } from './documents.js';
import { GRANTS, grantsProjection } from './grants.js';
import { GROUP_MEMBERS, groupsProjection } from './groups.js';
import { GROUP_GRANTS, groupGrantsProjection } from './group-grants.js';

/** The live collections that have a history: what an asOf read may ask for (queries/as-of.ts). */
export const HISTORIZED: readonly string[] = [ORGANIZATIONS, FOLDERS, DOCUMENTS, GRANTS, GROUP_MEMBERS, GROUP_GRANTS];

/**
 * The historized collections whose open versions are their live rows (withOpenVersions,
 * projections/documents.ts): their h_ holds closed versions only, so a read at an instant
 * merges the two.
 */
export const OPEN_IN_LIVE: ReadonlySet<string> = new Set([DOCUMENTS]);

export const historyProjections: Projection[] = [
  historyOf(organizationsProjection, [ORGANIZATIONS]),
  historyOf(foldersProjection, [FOLDERS]),
  historyOf(grantsProjection, [GRANTS]),
  historyOf(groupsProjection, [GROUP_MEMBERS]),
  historyOf(groupGrantsProjection, [GROUP_GRANTS]),
];
