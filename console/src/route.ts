/**
 * Hash routing: every view has its own URL (`#/orgs/o1/documents/d1`), so it can be reloaded
 * and shared. A URL names ids only, never a credential. Each segment is percent-encoded, so an
 * id with `/` or `#` in it stays one segment.
 */
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { view: 'signin' }
  | { view: 'orgs' }
  | { view: 'org'; org: string; folder?: string; user?: string }
  | { view: 'document'; org: string; doc: string; user?: string }
  | { view: 'audit'; org: string; doc: string }
  | { view: 'users'; org: string }
  | { view: 'user'; org: string; user: string }
  | { view: 'group'; org: string; group?: string }
  | { view: 'ops' };

const seg = (s: string) => encodeURIComponent(s);

export function href(r: Route): string {
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
    case 'users':
      return `#/orgs/${seg(r.org)}/users`;
    case 'user':
      return `#/orgs/${seg(r.org)}/users/${seg(r.user)}`;
    case 'group':
      return `#/orgs/${seg(r.org)}/groups${r.group !== undefined ? `/${seg(r.group)}` : ''}`;
    case 'ops':
      return '#/ops';
  }
}

/** The route of a hash; anything unknown is the organizations list. */
export function parse(hash: string): Route {
  let parts: string[];
  try {
    parts = hash.replace(/^#\/?/, '').split('/').filter((p) => p !== '').map(decodeURIComponent);
  } catch {
    return { view: 'orgs' };
  }
  const [first, org, kind, id, sub, user] = parts;
  if (first === 'signin') return { view: 'signin' };
  if (first === 'ops') return { view: 'ops' };
  if (first !== 'orgs' || org === undefined) return { view: 'orgs' };
  if (kind === undefined) return { view: 'org', org };
  if (kind === 'folders' && id !== undefined) return sub === 'explain' && user !== undefined ? { view: 'org', org, folder: id, user } : { view: 'org', org, folder: id };
  if (kind === 'users') return id === undefined ? { view: 'users', org } : { view: 'user', org, user: id };
  if (kind === 'groups') return id === undefined ? { view: 'group', org } : { view: 'group', org, group: id };
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
