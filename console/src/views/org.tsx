/**
 * The organizations list, and one organization: its folder tree and its documents (paged,
 * searchable by id or name), with the chosen folder's access beside them.
 */
import { useState } from 'preact/hooks';
import type { CollabClient } from '../api.js';
import type { Route } from '../route.js';
import { Link, Show, useLoad } from '../ui.js';
import { FolderAccess } from './resource.js';

const PAGE = 25;

export function Orgs({ client }: { client: CollabClient }) {
  const orgs = useLoad(() => client.all('/v2/organizations/get', {}), []);
  return (
    <div>
      <h1>Organizations</h1>
      <Show loaded={orgs}>
        {(rows) =>
          rows.length === 0 ? (
            <p class="muted">This API key has no organization yet.</p>
          ) : (
            <ul class="list">
              {rows.map((o) => (
                <li key={o.organizationId}>
                  <Link to={{ view: 'org', org: o.organizationId }}>{o.organizationName}</Link> <code>{o.organizationId}</code>
                  {o.disabled ? <span class="badge">disabled</span> : null}
                </li>
              ))}
            </ul>
          )
        }
      </Show>
    </div>
  );
}

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

function Documents({ client, org, folder }: { client: CollabClient; org: string; folder: string | undefined }) {
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
    </section>
  );
}

export function Org({ client, org, folder, user, asOf }: { client: CollabClient; org: string; folder: string | undefined; user: string | undefined; asOf: string | undefined }) {
  const info = useLoad(() => client.call('/v2/organizations/get', { organizationIds: [org] }), [org]);
  const folders = useLoad(() => client.all('/v2/organizations/folders/get', { organizationId: org }), [org]);
  const name = info.data?.data[0]?.organizationName;
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
        <nav aria-labelledby="folders-title">
          <h2 id="folders-title">Folders</h2>
          <Show loaded={folders}>{(rows) => (rows.length ? <Tree org={org} folders={rows} parent={null} current={folder} /> : <p class="muted">No folder.</p>)}</Show>
        </nav>
        <div>
          {folder !== undefined && folders.data ? <FolderAccess client={client} org={org} folder={folder} folders={folders.data} user={user} explainRoute={explainRoute} asOf={asOf} /> : null}
          <Documents key={`${org}/${folder ?? ''}`} client={client} org={org} folder={folder} />
        </div>
      </div>
    </div>
  );
}
