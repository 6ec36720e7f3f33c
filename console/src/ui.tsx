/**
 * Pieces every view uses: loading a call's answer, showing a refusal, confirming a change.
 * Everything a tenant chose (names, ids) is passed to JSX as text: Preact sets it as a text
 * node, never as HTML. Nothing in the console sets innerHTML.
 */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { failedItems, messageOf, type AccessChange, type AccessChanges, type Change, type CollabClient } from './api.js';
import { href, type Route } from './route.js';

export interface Loaded<T> {
  data: T | undefined;
  error: string | undefined;
  loading: boolean;
  reload: () => void;
}

/** Runs `load` when `deps` change (and on `reload`); a stale answer never overwrites a newer one. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: string; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (err: unknown) => live && setState({ error: messageOf(err), loading: false }),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { data: state.data, error: state.error, loading: state.loading, reload };
}

/** How long a burst of changes is gathered into one reload. */
const LIVE_GATHER_MS = 200;

/**
 * Keeps a view current: follows the change stream from now (`GET /v2/changes/stream`, the
 * typed client's `streamChanges`) while the view is shown, and calls `reload` once a change
 * `concerns` picks arrives (a burst gathered into one reload). The stream closes when the view
 * goes or `deps` change; a refused stream (the key's streams all taken) leaves the view as
 * loaded, as before.
 */
export function useLive(client: CollabClient, concerns: (change: Change) => boolean, reload: () => void, deps: unknown[]): void {
  useEffect(() => {
    const controller = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    void (async () => {
      try {
        for await (const change of client.streamChanges({ since: 'now', signal: controller.signal })) {
          if (!concerns(change) || timer !== undefined) continue;
          timer = setTimeout(() => {
            timer = undefined;
            reload();
          }, LIVE_GATHER_MS);
        }
      } catch {
        // Refused or cut for good: no live updates, the view stays as loaded.
      }
    })();
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  }, deps);
}

export function Failure({ message }: { message: string | undefined }) {
  if (!message) return null;
  return (
    <p class="failure" role="alert">
      {message}
    </p>
  );
}

/** The answer of `loaded`, or its loading line, or its refusal. */
export function Show<T>({ loaded, children }: { loaded: Loaded<T>; children: (data: T) => ComponentChildren }) {
  if (loaded.error) return <Failure message={loaded.error} />;
  if (loaded.data === undefined) return <p class="muted" aria-busy="true">Loading…</p>;
  return <>{children(loaded.data)}</>;
}

export function Link({ to, children, class: cls, current }: { to: Route; children: ComponentChildren; class?: string; current?: boolean }) {
  return (
    <a href={href(to)} class={cls} aria-current={current ? 'page' : undefined}>
      {children}
    </a>
  );
}

export interface ConfirmProps {
  /** The button's text. */
  label: string;
  /** The button's accessible name when the text alone is ambiguous ("Retry" in a table of them). */
  name?: string;
  /** What the dialog asks, in plain words ("Revoke alice's access to Plan?"). */
  question: string;
  /** The change; throws (a CollabApiError) when refused, or returns a refusal message. */
  run: () => Promise<string | void>;
  /**
   * The same call as a dry run (`x-dry-run: true`, the typed client's `{ dryRun: true }`): asked
   * when the dialog opens, so it says who would gain or lose access before anything changes.
   */
  preview?: () => Promise<{ data?: unknown; accessChanges: AccessChanges }>;
  /** After a change went through: reload what shows it. */
  done: () => void;
  danger?: boolean;
  disabled?: boolean;
}

type Preview = { state: 'asking' } | { state: 'answered'; changes: AccessChanges; refused: string } | { state: 'refused'; message: string };

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/** "2 gain, 1 lose access", and the role changes when there are any. */
const countsText = ({ gain, lose, role }: AccessChanges['counts']) => `${gain} gain, ${lose} lose access${role > 0 ? `, ${plural(role, 'changes role', 'change role')}` : ''}`;

function changeText(c: AccessChange): string {
  if (c.change === 'gain') return `gains ${c.after ?? 'access'}`;
  if (c.change === 'lose') return `loses ${c.before ?? 'access'}`;
  return `${c.before ?? ''} to ${c.after ?? ''}`;
}

/** What a dry run said the change would do: the counts, and the list one click away. */
function AccessPreview({ preview }: { preview: Preview }) {
  if (preview.state === 'asking') {
    return (
      <p class="muted" role="status" aria-busy="true">
        Asking the service who would gain or lose access (a dry run)…
      </p>
    );
  }
  if (preview.state === 'refused') {
    return (
      <p class="warning" role="status">
        The dry run was refused ({preview.message}); confirming sends the change all the same.
      </p>
    );
  }
  const { counts, changes, pageToken } = preview.changes;
  const total = counts.gain + counts.lose + counts.role;
  return (
    <div class="preview" role="status">
      <p>
        <strong class="impact">{countsText(counts)}</strong> (a dry run: nothing has changed yet).
      </p>
      {preview.refused ? <p class="warning">It would be refused: {preview.refused}</p> : null}
      {total > 0 ? (
        <details>
          <summary>{`List the ${plural(total, 'change', 'changes')}`}</summary>
          <ul class="changes">
            {changes.map((c) => (
              <li key={`${c.organizationId}/${c.resourceType}/${c.resourceId}/${c.userId}`}>
                {c.userId} → {c.resourceType} {c.resourceId} → {changeText(c)}
              </li>
            ))}
          </ul>
          {pageToken !== undefined ? <p class="muted">The first {changes.length} are listed.</p> : null}
        </details>
      ) : null}
    </div>
  );
}

/** A dry run's answer for a dialog: asked each time it opens, a stale answer dropped. */
function usePreview() {
  const [seen, setSeen] = useState<Preview | undefined>();
  const asked = useRef(0);
  const ask = (preview: ConfirmProps['preview']) => {
    const n = ++asked.current;
    if (!preview) return setSeen(undefined);
    setSeen({ state: 'asking' });
    preview().then(
      (r) => n === asked.current && setSeen({ state: 'answered', changes: r.accessChanges, refused: failedItems(r.data).join('; ') }),
      (err: unknown) => n === asked.current && setSeen({ state: 'refused', message: messageOf(err) }),
    );
  };
  return { seen, ask, waiting: seen?.state === 'asking' };
}

/** The modal dialog of a change: the question, the dry run's answer when there is one, Confirm and Cancel. */
function ConfirmDialog(props: { dialog: { current: HTMLDialogElement | null }; label: string; question: string; seen: Preview | undefined; danger?: boolean; disabled: boolean; confirm: () => void }) {
  const { dialog, label, question, seen, danger, disabled, confirm } = props;
  return (
    <dialog
      ref={(d) => {
        dialog.current = d;
      }}
      aria-label={label}
    >
      <p>{question}</p>
      {seen ? <AccessPreview preview={seen} /> : null}
      <div class="row">
        <button type="button" class={danger ? 'danger' : 'primary'} disabled={disabled} onClick={confirm}>
          Confirm
        </button>
        <button type="button" onClick={() => dialog.current?.close()}>
          Cancel
        </button>
      </div>
    </dialog>
  );
}

/**
 * A button that asks first (a modal `<dialog>`: focus moves into it, Escape cancels) and then
 * makes the change; a refusal shows the failure envelope's message next to the button. With
 * `preview`, the dialog first shows what a dry run of the change answers (who would gain or
 * lose access), and Confirm waits for it.
 */
export function Confirm({ label, name, question, run, preview, done, danger, disabled }: ConfirmProps) {
  const dialog = useRef<HTMLDialogElement | null>(null);
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
  const { seen, ask, waiting } = usePreview();
  const confirm = async () => {
    setBusy(true);
    setError(undefined);
    try {
      const refused = await run();
      dialog.current?.close();
      if (refused) setError(refused);
      else done();
    } catch (err) {
      dialog.current?.close();
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="confirm">
      <button type="button" class={danger ? 'danger' : undefined} aria-label={name} disabled={disabled} onClick={() => (dialog.current?.showModal(), ask(preview))}>
        {label}
      </button>
      <ConfirmDialog dialog={dialog} label={label} question={question} seen={seen} danger={danger} disabled={busy || waiting} confirm={() => void confirm()} />
      <Failure message={error} />
    </span>
  );
}

export const when = (ms: number | undefined) => (ms === undefined ? '' : new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC'));

export interface Field {
  name: string;
  label: string;
  required?: boolean;
  type?: 'text' | 'email';
  /** A select of these, the first chosen at first. */
  options?: { value: string; label: string }[];
}

/**
 * A form that adds something through one API call: labelled fields stacked, a submit button;
 * a refusal (the envelope's message, or a batch item's) shows under it, and a success says what
 * was added in a polite live region. The fields are emptied after a success.
 */
export function AddForm(props: {
  id: string;
  title: string;
  /** A sentence under the title: where the new thing goes, what it is for. */
  hint?: ComponentChildren;
  fields: Field[];
  submit: string;
  /** The call; throws when refused, or returns a refusal message. */
  run: (values: Record<string, string>) => Promise<string | void>;
  /**
   * For an addition that changes access (a user with a role, a group member): it asks first in
   * a dialog with `question`, showing what a dry run of the same call (`preview`) answers;
   * `check` refuses before asking (returns the refusal).
   */
  confirm?: {
    question: (values: Record<string, string>) => string;
    preview: (values: Record<string, string>) => Promise<{ data?: unknown; accessChanges: AccessChanges }>;
    check?: (values: Record<string, string>) => string | undefined;
  };
  /** After a success: what it says, and what to reload or where to go. */
  done: (values: Record<string, string>) => string;
}) {
  const { id, title, hint, fields, submit, run, confirm, done } = props;
  const initial = () => Object.fromEntries(fields.map((f) => [f.name, f.options?.[0]?.value ?? '']));
  const [values, setValues] = useState<Record<string, string>>(initial);
  const [error, setError] = useState<string | undefined>();
  const [ok, setOk] = useState('');
  const [busy, setBusy] = useState(false);
  const dialog = useRef<HTMLDialogElement | null>(null);
  const [asking, setAsking] = useState<Record<string, string>>({});
  const { seen, ask, waiting } = usePreview();
  const submitted = () => {
    const v = Object.fromEntries(Object.entries(values).map(([k, x]) => [k, x.trim()]));
    if (!confirm) return void send(v);
    setOk('');
    const refused = confirm.check?.(v);
    setError(refused);
    if (refused !== undefined) return;
    setAsking(v);
    dialog.current?.showModal();
    ask(() => confirm.preview(v));
  };
  const send = async (v: Record<string, string>) => {
    setBusy(true);
    setError(undefined);
    setOk('');
    try {
      const refused = await run(v);
      if (refused) setError(refused);
      else {
        setValues(initial());
        setOk(done(v));
      }
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="add" aria-labelledby={`${id}-title`} onSubmit={(e) => (e.preventDefault(), submitted())}>
      <h2 id={`${id}-title`}>{title}</h2>
      {hint ? <p class="muted">{hint}</p> : null}
      {fields.map((f) => {
        const fid = `${id}-${f.name}`;
        const set = (x: string) => setValues((s) => ({ ...s, [f.name]: x }));
        return (
          <div key={f.name} class="field">
            <label for={fid}>{f.label}</label>
            {f.options ? (
              <select id={fid} value={values[f.name]} onChange={(e) => set(e.currentTarget.value)}>
                {f.options.map((o) => (
                  <option key={o.value} value={o.value}>
                    {o.label}
                  </option>
                ))}
              </select>
            ) : (
              <input id={fid} type={f.type ?? 'text'} required={f.required} value={values[f.name]} onInput={(e) => set(e.currentTarget.value)} autoComplete="off" />
            )}
          </div>
        );
      })}
      <div class="row">
        <button type="submit" class="primary" disabled={busy}>
          {submit}
        </button>
      </div>
      {confirm ? (
        <ConfirmDialog
          dialog={dialog}
          label={submit}
          question={confirm.question(asking)}
          seen={seen}
          disabled={busy || waiting}
          confirm={() => void send(asking).then(() => dialog.current?.close())}
        />
      ) : null}
      <Failure message={error} />
      <p class="ok" aria-live="polite">
        {ok}
      </p>
    </form>
  );
}

/** A resource's name where it has one, else its id. */
export const named = (name: string | undefined, id: string) => (name !== undefined && name.trim() !== '' ? name : id);

export interface Crumb {
  to?: Route;
  /** The name shown; the id while it loads or when the resource has none. */
  label: string;
  loading?: boolean;
}

/** Organizations / the organization's name / ...trail; a crumb without `to` is where you are. */
export function Crumbs({ orgName, org, trail }: { orgName: Loaded<string>; org: string; trail: Crumb[] }) {
  const crumbs: Crumb[] = [{ to: { view: 'org', org }, label: named(orgName.data, org), loading: orgName.data === undefined && !orgName.error }, ...trail];
  return (
    <nav aria-label="Breadcrumb" class="crumbs">
      <Link to={{ view: 'orgs' }}>Organizations</Link>
      {crumbs.map((c, i) => (
        <span key={i} aria-busy={c.loading ? 'true' : undefined}>
          {' / '}
          {c.to ? <Link to={c.to}>{c.label}</Link> : c.label}
        </span>
      ))}
    </nav>
  );
}
