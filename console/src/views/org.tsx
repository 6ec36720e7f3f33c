/**
 * The organizations list, and one organization: its folder tree and its documents (paged,
 * searchable by id or name), with the chosen folder's access beside them. Both make things
 * too (issue 34: the console as a place to start): an organization (the empty state offers
 * the first one), a folder and a document, through organizations/add, folders/add and
 * documents/add as any client calls them.
 */
import { useState } from 'preact/hooks';
import { failedItems, type CollabClient } from '../api.js';
import { navigate, type Route } from '../route.js';
import { AddForm, Link, Show, useLoad, type Field } from '../ui.js';
import { ACCESS_OPTIONS, type AccessType } from '../access-types.js';
import { FolderAccess } from './resource.js';

const PAGE = 25;

export function Orgs({ client }: { client: CollabClient }) {
  const orgs = useLoad(() => client.all('/v2/organizations/get', {}), []);
  return (
    <div>
      <h1>Organizations</h1>
      <Show loaded={orgs}>
        {(rows) => (
          <div class="split">
            {rows.length === 0 ? (
              <p class="empty">This API key has no organization yet. Everything the service keeps (folders, documents, users, groups, access) lives in one: create the first to start.</p>
            ) : (
              <ul class="list">
                {rows.map((o) => (
                  <li key={o.organizationId}>
                    <Link to={{ view: 'org', org: o.organizationId }}>{o.organizationName}</Link> <code>{o.organizationId}</code>
                    {o.disabled ? <span class="badge">disabled</span> : null}
                  </li>
                ))}
              </ul>
            )}
            <AddForm
              id="new-org"
              title={rows.length === 0 ? 'Create the first organization' : 'New organization'}
              hint="The id is yours to choose, as your application names the organization; it cannot change later."
              fields={[
                { name: 'id', label: 'Organization id', required: true },
                { name: 'name', label: 'Name' },
              ]}
              submit="Create organization"
              // organizations/add renames an organization that exists: here, an id in use is refused instead.
              run={async (v) => {
                const id = v.id ?? '';
                if (rows.some((o) => o.organizationId === id)) return `Organization ${id} exists already: open it from the list.`;
                const res = await client.call('/v2/organizations/add', { organizations: [{ organizationId: id, ...(v.name ? { organizationName: v.name } : {}) }] });
                return failedItems(res.data).join('; ') || undefined;
              }}
              done={(v) => {
                navigate({ view: 'org', org: v.id ?? '' });
                return `Organization ${v.name || v.id} created.`;
              }}
            />
          </div>
        )}
      </Show>
    </div>
  );
}

const ACCESS_FIELD: Field = { name: 'accessType', label: 'Access type', options: [{ value: '', label: 'inherit from above' }, ...ACCESS_OPTIONS] };

interface FolderRow {
  folderId: string;
  folderName: string;
  parentFolderId: string;
}

/** The folder tree as nested lists of links: Tab walks it, the current folder is `aria-current`. */
function Tree({ org, folders, parent, current }: { org: string; folders: FolderRow[]; parent: string | null; current: string | undefined }) {
  const ids = new Set(folders.map((f) => f.folderId));
  const here = folders.filter((f) => (parent === null ? !ids.has(f.parentFolderId) : f.parentFolderId === parent));
  if (here.length === 0) return null;
  return (
    <ul class="tree">
      {here.map((f) => (
        <li key={f.folderId}>
          <Link to={{ view: 'org', org, folder: f.folderId }} class={f.folderId === current ? 'current' : undefined} current={f.folderId === current}>
            {f.folderName}
          </Link>
          <Tree org={org} folders={folders} parent={f.folderId} current={current} />
        </li>
      ))}
    </ul>
  );
}

function Documents({ client, org, folder, folderName }: { client: CollabClient; org: string; folder: string | undefined; folderName: string | undefined }) {
  const [tokens, setTokens] = useState<(string | undefined)[]>([undefined]);
  const [query, setQuery] = useState('');
  const token = tokens[tokens.length - 1];
  const page = useLoad(
    () => client.call('/v2/organizations/documents/get', { organizationId: org, pageSize: PAGE, ...(folder !== undefined ? { folderId: folder } : {}), ...(token ? { pageToken: token } : {}) }),
    [org, folder, token],
  );
  const q = query.trim();
  // An id typed in full finds its document wherever it is, not only on this page.
  const byId = useLoad(
    () => (q === '' ? Promise.resolve([]) : client.call('/v2/organizations/documents/get', { organizationId: org, documentIds: [q] }).then((r) => r.data)),
    [org, q],
  );
  return (
    <section aria-labelledby="docs-title">
      <h2 id="docs-title">Documents{folder !== undefined ? ' in this folder' : ''}</h2>
      <label for="doc-search">Search by id or name</label>
      <input id="doc-search" type="search" value={query} onInput={(e) => setQuery(e.currentTarget.value)} />
      <Show loaded={page}>
        {(res) => {
          const rows = [...(byId.data ?? []), ...res.data.filter((d) => q === '' || d.id.includes(q) || d.documentName.toLowerCase().includes(q.toLowerCase()))];
          const unique = rows.filter((d, i) => rows.findIndex((x) => x.id === d.id) === i);
          return (
            <>
              <ul class="list documents">
                {unique.map((d) => (
                  <li key={d.id}>
                    <Link to={{ view: 'document', org, doc: d.id }}>{d.documentName}</Link> <code>{d.id}</code> <span class="badge">{d.accessType}</span>
                    {d.disabled ? <span class="badge">disabled</span> : null}
                  </li>
                ))}
              </ul>
              {unique.length === 0 ? <p class="muted">No document{q ? ' matches' : ' here'}.</p> : null}
              <nav class="row" aria-label="Document pages">
                <button type="button" disabled={tokens.length === 1} onClick={() => setTokens(tokens.slice(0, -1))}>
                  Previous page
                </button>
                <button type="button" disabled={!res.pageToken} onClick={() => res.pageToken && setTokens([...tokens, res.pageToken])}>
                  Next page
                </button>
              </nav>
            </>
          );
        }}
      </Show>
      <AddForm
        id="new-doc"
        title="New document"
        hint={folder !== undefined ? `In folder ${folderName ?? folder}.` : 'At the top of the organization (open a folder to add one inside it).'}
        fields={[{ name: 'id', label: 'Document id', required: true }, { name: 'name', label: 'Document name' }, { ...ACCESS_FIELD, label: 'Document access type' }]}
        submit="Create document"
        run={async (v) => {
          const doc = { documentId: v.id ?? '', ...(v.name ? { documentName: v.name } : {}), ...(v.accessType ? { accessType: accessTypeOf(v.accessType) } : {}) };
          const res = await client.call('/v2/organizations/documents/add', { organizationId: org, ...(folder !== undefined ? { folderId: folder } : {}), documents: [doc] });
          return failedItems(res.data).join('; ') || undefined;
        }}
        done={(v) => {
          navigate({ view: 'document', org, doc: v.id ?? '' });
          return `Document ${v.name || v.id} created.`;
        }}
      />
    </section>
  );
}

const accessTypeOf = (t: string): AccessType => (t === 'public' || t === 'organizationPrivate' ? t : 'restricted');

export function Org({ client, org, folder, user, asOf }: { client: CollabClient; org: string; folder: string | undefined; user: string | undefined; asOf: string | undefined }) {
  const info = useLoad(() => client.call('/v2/organizations/get', { organizationIds: [org] }), [org]);
  const folders = useLoad(() => client.all('/v2/organizations/folders/get', { organizationId: org }), [org]);
  const name = info.data?.data[0]?.organizationName;
  const folderName = folder !== undefined ? folders.data?.find((f) => f.folderId === folder)?.folderName : undefined;
  const explainRoute = (u: string): Route => ({ view: 'org', org, ...(folder !== undefined ? { folder } : {}), user: u, ...(asOf !== undefined ? { asOf } : {}) });
  return (
    <div>
      <nav aria-label="Breadcrumb" class="crumbs">
        <Link to={{ view: 'orgs' }}>Organizations</Link> / <Link to={{ view: 'org', org }}>{name ?? org}</Link>
      </nav>
      <h1>{name ?? org}</h1>
      <nav class="row" aria-label="Organization">
        <Link to={{ view: 'users', org }}>Users</Link>
        <Link to={{ view: 'groups', org }}>Groups</Link>
      </nav>
      <div class="columns">
        <div>
          <nav aria-labelledby="folders-title">
            <h2 id="folders-title">Folders</h2>
            <Show loaded={folders}>{(rows) => (rows.length ? <Tree org={org} folders={rows} parent={null} current={folder} /> : <p class="muted">No folder yet.</p>)}</Show>
          </nav>
          <AddForm
            id="new-folder"
            title="New folder"
            hint={folder !== undefined ? `Inside ${folderName ?? folder}.` : 'At the top of the organization.'}
            fields={[{ name: 'id', label: 'Folder id', required: true }, { name: 'name', label: 'Folder name' }, { ...ACCESS_FIELD, label: 'Folder access type' }]}
            submit="Create folder"
            run={async (v) => {
              const f = { folderId: v.id ?? '', ...(v.name ? { folderName: v.name } : {}), ...(folder !== undefined ? { parentFolderId: folder } : {}), ...(v.accessType ? { accessType: accessTypeOf(v.accessType) } : {}) };
              const res = await client.call('/v2/organizations/folders/add', { organizationId: org, folders: [f] });
              return failedItems(res.data).join('; ') || undefined;
            }}
            done={(v) => {
              folders.reload();
              navigate({ view: 'org', org, folder: v.id ?? '' });
              return `Folder ${v.name || v.id} created.`;
            }}
          />
        </div>
        <div>
          {folder !== undefined && folders.data ? <FolderAccess client={client} org={org} folder={folder} folders={folders.data} user={user} explainRoute={explainRoute} asOf={asOf} /> : null}
          <Documents key={`${org}/${folder ?? ''}`} client={client} org={org} folder={folder} folderName={folderName} />
        </div>
      </div>
    </div>
  );
}
