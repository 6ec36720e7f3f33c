/**
 * Hash routing: every view has its own URL (`#/orgs/o1/documents/d1`), so it can be reloaded
 * and shared. A URL names ids only, never a credential. Each segment is percent-encoded, so an
 * id with `/` or `#` in it stays one segment. A view answered as of a past instant carries it
 * as a query after the path (`#/orgs/o1/documents/d1?asOf=2026-11-25T15:04:05.123Z`), so the
 * past view reloads and shares as the present one does.
 */
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { view: 'signin' }
  | { view: 'orgs' }
  | { view: 'org'; org: string; folder?: string; user?: string; asOf?: string }
  | { view: 'document'; org: string; doc: string; user?: string; asOf?: string }
  | { view: 'timeline'; org: string; kind: 'document' | 'folder'; id: string }
  | { view: 'audit'; org: string; doc: string }
  | { view: 'users'; org: string }
  | { view: 'user'; org: string; user: string; asOf?: string }
  | { view: 'groups'; org: string }
  | { view: 'group'; org: string; group: string }
  | { view: 'ops' };

const seg = (s: string) => encodeURIComponent(s);

/** The instant a view is answered as of, when it has one: the query after the path. */
const asOfOf = (r: Route): string | undefined => ('asOf' in r ? r.asOf : undefined);

export function href(r: Route): string {
  const asOf = asOfOf(r);
  return asOf !== undefined ? `${path(r)}?asOf=${seg(asOf)}` : path(r);
}

function path(r: Route): string {
  switch (r.view) {
    case 'signin':
      return '#/signin';
    case 'orgs':
      return '#/orgs';
    case 'org':
      return `#/orgs/${seg(r.org)}${r.folder !== undefined ? `/folders/${seg(r.folder)}${r.user !== undefined ? `/explain/${seg(r.user)}` : ''}` : ''}`;
    case 'document':
      return `#/orgs/${seg(r.org)}/documents/${seg(r.doc)}${r.user !== undefined ? `/explain/${seg(r.user)}` : ''}`;
    case 'audit':
      return `#/orgs/${seg(r.org)}/documents/${seg(r.doc)}/audit`;
    case 'timeline':
      return `#/orgs/${seg(r.org)}/${r.kind}s/${seg(r.id)}/timeline`;
    case 'users':
      return `#/orgs/${seg(r.org)}/users`;
    case 'user':
      return `#/orgs/${seg(r.org)}/users/${seg(r.user)}`;
    case 'groups':
      return `#/orgs/${seg(r.org)}/groups`;
    case 'group':
      return `#/orgs/${seg(r.org)}/groups/${seg(r.group)}`;
    case 'ops':
      return '#/ops';
  }
}

/** The route of a hash; anything unknown is the organizations list. */
function parse(hash: string): Route {
  const [pathPart = '', query = ''] = hash.replace(/^#\/?/, '').split('?', 2);
  let parts: string[];
  try {
    parts = pathPart.split('/').filter((p) => p !== '').map(decodeURIComponent);
  } catch {
    return { view: 'orgs' };
  }
  // The service judges the instant (a malformed one is its INVALID_ARGUMENT, shown as such).
  const asOf = new URLSearchParams(query).get('asOf') ?? '';
  const r = parsePath(parts);
  return asOf !== '' && (r.view === 'org' || r.view === 'document' || r.view === 'user') ? { ...r, asOf } : r;
}

function parsePath(parts: string[]): Route {
  const [first, org, kind, id, sub, user] = parts;
  if (first === 'signin') return { view: 'signin' };
  if (first === 'ops') return { view: 'ops' };
  if (first !== 'orgs' || org === undefined) return { view: 'orgs' };
  if (kind === undefined) return { view: 'org', org };
  if ((kind === 'folders' || kind === 'documents') && id !== undefined && sub === 'timeline') return { view: 'timeline', org, kind: kind === 'folders' ? 'folder' : 'document', id };
  if (kind === 'folders' && id !== undefined) return sub === 'explain' && user !== undefined ? { view: 'org', org, folder: id, user } : { view: 'org', org, folder: id };
  if (kind === 'users') return id === undefined ? { view: 'users', org } : { view: 'user', org, user: id };
  if (kind === 'groups') return id === undefined ? { view: 'groups', org } : { view: 'group', org, group: id };
  if (kind === 'documents' && id !== undefined) {
    if (sub === 'audit') return { view: 'audit', org, doc: id };
    if (sub === 'explain' && user !== undefined) return { view: 'document', org, doc: id, user };
    return { view: 'document', org, doc: id };
  }
  return { view: 'org', org };
}

export function navigate(r: Route): void {
  window.location.hash = href(r);
}

/** The current route, following the hash. */
export function useRoute(): Route {
  const [route, setRoute] = useState(() => parse(window.location.hash));
  useEffect(() => {
    const on = () => setRoute(parse(window.location.hash));
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return route;
}
