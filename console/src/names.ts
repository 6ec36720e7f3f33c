/**
 * The names breadcrumbs and headings show (issue 34): each read once per view, through the
 * same routes any client uses. Where a resource has no name (or the read is refused) the id
 * stands in: a crumb is never blank.
 */
import type { CollabClient } from './api.js';
import { named, useLoad, type Loaded } from './ui.js';

/** The organization's name (organizations/get by id). */
export const useOrgName = (client: CollabClient, org: string): Loaded<string> =>
  useLoad(() => client.call('/v2/organizations/get', { organizationIds: [org] }).then((r) => named(r.data[0]?.organizationName, org)), [org]);

/** Each folder's name, by id (folders/get of that folder alone: at most the depth limit of reads). */
export const useFolderNames = (client: CollabClient, org: string, ids: string[]): Loaded<Map<string, string>> =>
  useLoad(
    () =>
      Promise.all(
        ids.map((id) =>
          client.call('/v2/organizations/folders/get', { organizationId: org, folderId: id, maxDepth: 0 }).then(
            (r) => [id, named(r.data.find((f) => f.folderId === id)?.folderName, id)] as const,
            () => [id, id] as const,
          ),
        ),
      ).then((pairs) => new Map(pairs)),
    [org, ids.join('\n')],
  );

/** A document's name (documents/get by id). */
export const useDocumentName = (client: CollabClient, org: string, doc: string): Loaded<string> =>
  useLoad(() => client.call('/v2/organizations/documents/get', { organizationId: org, documentIds: [doc] }).then((r) => named(r.data[0]?.documentName, doc)), [org, doc]);

/** A user's name as the organization knows it (users/get narrowed to the id); the id when the organization has no such user. */
export const useUserName = (client: CollabClient, org: string, user: string): Loaded<string> =>
  useLoad(
    () =>
      client.call('/v2/users/get', { organizationId: org, userIds: [user] }).then((r) => {
        const row = Array.isArray(r.data) ? (r.data as { userId: string; name?: string }[]).find((u) => u.userId === user) : undefined;
        return named(row?.name, user);
      }),
    [org, user],
  );

/** A group's name (usergroups/get has no filter by id: its pages, walked until the group shows). */
export const useGroupName = (client: CollabClient, org: string, group: string): Loaded<string> =>
  useLoad(async () => {
    for await (const page of client.pages('/v2/organizations/usergroups/get', { organizationId: org, pageSize: 100 })) {
      const row = page.data.find((g) => g.groupId === group);
      if (row) return named(row.groupName, group);
    }
    return group;
  }, [org, group]);
