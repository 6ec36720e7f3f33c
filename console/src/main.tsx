/**
 * The console's entry: the header, the route, the view. Signed out, every URL shows the sign-in
 * form and keeps its hash, so a shared link opens its view once signed in.
 */
import { render } from 'preact';
import { useState } from 'preact/hooks';
import { apiClient, currentApiKey, signOut } from './api.js';
import { useRoute, type Route } from './route.js';
import { Link } from './ui.js';
import { Audit } from './views/audit.js';
import { Ops } from './views/ops.js';
import { Org, Orgs } from './views/org.js';
import { Timeline } from './views/history.js';
import { GroupView, Groups, UserView, Users } from './views/people.js';
import { DocumentView } from './views/resource.js';
import { SignIn } from './views/signin.js';
import type { CollabClient } from './api.js';

function View({ client, route }: { client: CollabClient; route: Route }) {
  switch (route.view) {
    case 'signin':
    case 'orgs':
      return <Orgs client={client} />;
    case 'org':
      return <Org client={client} org={route.org} folder={route.folder} user={route.user} asOf={route.asOf} />;
    case 'document':
      return <DocumentView key={`${route.org}/${route.doc}`} client={client} org={route.org} doc={route.doc} user={route.user} asOf={route.asOf} />;
    case 'timeline':
      return <Timeline key={`${route.org}/${route.kind}/${route.id}`} client={client} org={route.org} kind={route.kind} id={route.id} />;
    case 'audit':
      return <Audit client={client} org={route.org} doc={route.doc} />;
    case 'users':
      return <Users client={client} org={route.org} />;
    case 'user':
      return <UserView client={client} org={route.org} user={route.user} asOf={route.asOf} />;
    case 'groups':
      return <Groups client={client} org={route.org} />;
    case 'group':
      return <GroupView key={route.group} client={client} org={route.org} group={route.group} />;
    case 'ops':
      return <Ops client={client} />;
  }
}

function App() {
  const route = useRoute();
  const [client, setClient] = useState(apiClient);
  return (
    <>
      <a href="#main" class="skip" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header>
        <strong>Collab console</strong>
        {client ? (
          <nav aria-label="Console">
            <Link to={{ view: 'orgs' }}>Organizations</Link>
            <Link to={{ view: 'ops' }}>Operations</Link>
            <span class="muted">
              API key <code>{currentApiKey()}</code>
            </span>
            <button
              type="button"
              onClick={() => {
                signOut();
                setClient(null);
              }}
            >
              Sign out
            </button>
          </nav>
        ) : null}
      </header>
      <main id="main" tabIndex={-1}>
        {client ? <View client={client} route={route} /> : <SignIn onSignedIn={() => setClient(apiClient())} />}
      </main>
    </>
  );
}

const root = document.getElementById('app');
if (!root) throw new Error('the page has no #app element');
render(<App />, root);
