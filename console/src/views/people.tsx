/**
 * Users and groups of an organization: the users holding a grant on it (users/get), what one
 * user can open (resources/get), its groups (usergroups/get) and a group's members (users/get
 * narrowed to the group). Adding a user (users/add at the organization), a group
 * (usergroups/add) and a member to a group (usergroups/users/add) too.
 */
import { useState } from 'preact/hooks';
import { failedItems, type CollabClient } from '../api.js';
import { useGroupName, useOrgName, useUserName } from '../names.js';
import { AddForm, Crumbs, Link, Show, useLoad } from '../ui.js';
import { AsOfPicker } from './history.js';

const ROLE_OPTIONS = [
  { value: 'viewer', label: 'viewer' },
  { value: 'editor', label: 'editor' },
];

type UserRow = { userId: string; name: string; email: string; accessRole: string };

function UserTable({ org, rows, label }: { org: string; rows: UserRow[]; label: string }) {
  if (rows.length === 0) return <p class="muted">No user.</p>;
  return (
    <div class="scroll">
      <table>
        <caption class="sr-only">{label}</caption>
        <thead>
          <tr>
            <th scope="col">User</th>
            <th scope="col">Name</th>
            <th scope="col">Email</th>
            <th scope="col">Role</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((u) => (
            <tr key={u.userId}>
              <td>
                <Link to={{ view: 'user', org, user: u.userId }}>{u.userId}</Link>
              </td>
              <td>{u.name}</td>
              <td>{u.email}</td>
              <td>{u.accessRole}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

const asRows = (data: unknown): UserRow[] => (Array.isArray(data) ? (data as UserRow[]) : []);

export function Users({ client, org }: { client: CollabClient; org: string }) {
  const users = useLoad(() => client.all('/v2/users/get', { organizationId: org }), [org]);
  const orgName = useOrgName(client, org);
  const addUser = (v: Record<string, string>) => ({
    organizationId: org,
    users: [{ userId: v.id ?? '', ...(v.name ? { name: v.name } : {}), ...(v.email ? { email: v.email } : {}), accessRole: v.role === 'editor' ? ('editor' as const) : ('viewer' as const) }],
  });
  return (
    <div>
      <Crumbs org={org} orgName={orgName} trail={[{ label: 'Users' }]} />
      <h1>Users of {orgName.data ?? org}</h1>
      <div class="split">
        <section aria-labelledby="users-title">
          <h2 id="users-title" class="sr-only">
            The users
          </h2>
          <p class="muted">The users holding a grant on the organization itself.</p>
          <Show loaded={users}>{(rows) => <UserTable org={org} rows={asRows(rows)} label={`Users of ${org}`} />}</Show>
        </section>
        <AddForm
          id="new-user"
          title="Add a user"
          hint="The user gets a grant on the organization with this role: it opens organizationPrivate documents; a restricted one needs a grant on it or on a folder above it (the user's or a group's)."
          fields={[
            { name: 'id', label: 'User id', required: true },
            { name: 'name', label: 'Name' },
            { name: 'email', label: 'Email', type: 'email' },
            { name: 'role', label: 'Role in the organization', options: ROLE_OPTIONS },
          ]}
          submit="Add user"
          // users/add updates a user that exists: here, an id the organization has is refused instead.
          confirm={{
            check: (v) => (asRows(users.data).some((u) => u.userId === v.id) ? `${v.id ?? ''} is a user of this organization already.` : undefined),
            question: (v) => `Add ${v.id ?? ''} to ${org} as ${v.role === 'editor' ? 'editor' : 'viewer'}?`,
            preview: (v) => client.call('/v2/users/add', addUser(v), { dryRun: true }),
          }}
          run={async (v) => failedItems((await client.call('/v2/users/add', addUser(v))).data).join('; ') || undefined}
          done={(v) => {
            users.reload();
            return `User ${v.id} added.`;
          }}
        />
      </div>
    </div>
  );
}

/** What a user can open, or with `asOf` what they could then (resources/get as of that instant). */
export function UserView({ client, org, user, asOf }: { client: CollabClient; org: string; user: string; asOf: string | undefined }) {
  const past = asOf !== undefined ? { asOf } : {};
  const docs = useLoad(() => client.all('/v2/auth/resources/get', { organizationId: org, userId: user, type: 'document', ...past }), [org, user, asOf]);
  const folders = useLoad(() => client.all('/v2/auth/resources/get', { organizationId: org, userId: user, type: 'folder', ...past }), [org, user, asOf]);
  const orgName = useOrgName(client, org);
  const userName = useUserName(client, org, user);
  return (
    <div>
      <Crumbs org={org} orgName={orgName} trail={[{ to: { view: 'users', org }, label: 'Users' }, { label: userName.data ?? user, loading: userName.loading }]} />
      <h1>{asOf !== undefined ? `What ${user} could open then` : `What ${user} can open`}</h1>
      <AsOfPicker key={asOf ?? ''} asOf={asOf} at={(a) => ({ view: 'user', org, user, ...(a !== undefined ? { asOf: a } : {}) })} />
      {(['document', 'folder'] as const).map((kind) => (
        <section key={kind} aria-labelledby={`res-${kind}`}>
          <h2 id={`res-${kind}`}>{kind === 'document' ? 'Documents' : 'Folders'}</h2>
          <Show loaded={kind === 'document' ? docs : folders}>
            {(rows) =>
              rows.length === 0 ? (
                <p class="muted">None.</p>
              ) : (
                <ul class="list">
                  {rows.map((r) => (
                    <li key={r.id}>
                      <Link to={kind === 'document' ? { view: 'document', org, doc: r.id, user, ...past } : { view: 'org', org, folder: r.id, user, ...past }}>{r.id}</Link> {r.accessRole}{' '}
                      <span class="badge">{r.accessType}</span>
                    </li>
                  ))}
                </ul>
              )
            }
          </Show>
        </section>
      ))}
    </div>
  );
}

const GROUPS_PAGE = 50;

/** An organization's groups (usergroups/get, paged), each opening its members. */
export function Groups({ client, org }: { client: CollabClient; org: string }) {
  const [tokens, setTokens] = useState<(string | undefined)[]>([undefined]);
  const token = tokens[tokens.length - 1];
  const page = useLoad(() => client.call('/v2/organizations/usergroups/get', { organizationId: org, pageSize: GROUPS_PAGE, ...(token ? { pageToken: token } : {}) }), [org, token]);
  const orgName = useOrgName(client, org);
  return (
    <div>
      <Crumbs org={org} orgName={orgName} trail={[{ label: 'Groups' }]} />
      <h1>Groups of {orgName.data ?? org}</h1>
      <div class="split">
        <section aria-labelledby="groups-title">
          <h2 id="groups-title" class="sr-only">
            The groups
          </h2>
          <Show loaded={page}>
            {(res) => (
              <>
                {res.data.length === 0 ? (
                  <p class="muted">No group.</p>
                ) : (
                  <div class="scroll">
                    <table>
                      <caption class="sr-only">{`Groups of ${org}`}</caption>
                      <thead>
                        <tr>
                          <th scope="col">Group</th>
                          <th scope="col">Name</th>
                          <th scope="col">Members</th>
                        </tr>
                      </thead>
                      <tbody>
                        {res.data.map((g) => (
                          <tr key={g.groupId} data-group={g.groupId}>
                            <td>
                              <Link to={{ view: 'group', org, group: g.groupId }}>{g.groupId}</Link>
                            </td>
                            <td>{g.groupName}</td>
                            <td>{g.memberCount}</td>
                          </tr>
                        ))}
                      </tbody>
                    </table>
                  </div>
                )}
                <nav class="row" aria-label="Group pages">
                  <button type="button" disabled={tokens.length === 1} onClick={() => setTokens(tokens.slice(0, -1))}>
                    Previous page
                  </button>
                  <button type="button" disabled={!res.pageToken} onClick={() => res.pageToken && setTokens([...tokens, res.pageToken])}>
                    Next page
                  </button>
                </nav>
              </>
            )}
          </Show>
        </section>
        <AddForm
          id="new-group"
          title="New group"
          hint="A group holds users of the organization; a grant to the group reaches each member."
          fields={[
            { name: 'id', label: 'Group id', required: true },
            { name: 'name', label: 'Group name' },
          ]}
          submit="Create group"
          run={async (v) => {
            const group = { groupId: v.id ?? '', ...(v.name ? { groupName: v.name } : {}) };
            return failedItems((await client.call('/v2/organizations/usergroups/add', { organizationId: org, organizationUserGroups: [group] })).data).join('; ') || undefined;
          }}
          done={(v) => {
            page.reload();
            return `Group ${v.name || v.id} created.`;
          }}
        />
      </div>
    </div>
  );
}

/** A group's members who hold a grant on the organization (users/get narrowed to the group). */
export function GroupView({ client, org, group }: { client: CollabClient; org: string; group: string }) {
  const members = useLoad(() => client.all('/v2/users/get', { organizationId: org, organizationUserGroupIds: [group] }), [org, group]);
  const orgName = useOrgName(client, org);
  const groupName = useGroupName(client, org, group);
  const member = (v: Record<string, string>) => ({ organizationId: org, organizationUserGroupId: group, userIds: [v.id ?? ''] });
  return (
    <div>
      <Crumbs org={org} orgName={orgName} trail={[{ to: { view: 'groups', org }, label: 'Groups' }, { label: groupName.data ?? group, loading: groupName.loading }]} />
      <h1>Group {group}</h1>
      <div class="split">
        <section aria-labelledby="members-title">
          <h2 id="members-title">Members with a grant on the organization</h2>
          <Show loaded={members}>{(rows) => <UserTable org={org} rows={asRows(rows)} label={`Members of ${group}`} />}</Show>
        </section>
        <AddForm
          id="new-member"
          title="Add a member"
          hint={
            <>
              Only users of the organization can join (add them on the <Link to={{ view: 'users', org }}>Users</Link> page first).
            </>
          }
          fields={[{ name: 'id', label: 'Member user id', required: true }]}
          submit="Add to group"
          confirm={{
            question: (v) => `Add ${v.id ?? ''} to group ${group}? The group's grants reach its members.`,
            preview: (v) => client.call('/v2/organizations/usergroups/users/add', member(v), { dryRun: true }),
          }}
          run={async (v) => failedItems((await client.call('/v2/organizations/usergroups/users/add', member(v))).data).join('; ') || undefined}
          done={(v) => {
            members.reload();
            return `${v.id} added to the group.`;
          }}
        />
      </div>
    </div>
  );
}
