/**
 * Pieces every view uses: loading a call's answer, showing a refusal, confirming a change.
 * Everything a tenant chose (names, ids) is passed to JSX as text: Preact sets it as a text
 * node, never as HTML. Nothing in the console sets innerHTML.
 */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { messageOf } from './api.js';
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
  /** After a change went through: reload what shows it. */
  done: () => void;
  danger?: boolean;
  disabled?: boolean;
}

/**
 * A button that asks first (a modal `<dialog>`: focus moves into it, Escape cancels) and then
 * makes the change; a refusal shows the failure envelope's message next to the button.
 */
export function Confirm({ label, name, question, run, done, danger, disabled }: ConfirmProps) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [error, setError] = useState<string | undefined>();
  const [busy, setBusy] = useState(false);
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
      <button type="button" class={danger ? 'danger' : undefined} aria-label={name} disabled={disabled} onClick={() => dialog.current?.showModal()}>
        {label}
      </button>
      <dialog ref={dialog} aria-label={label}>
        <p>{question}</p>
        <div class="row">
          <button type="button" class={danger ? 'danger' : 'primary'} disabled={busy} onClick={() => void confirm()}>
            Confirm
          </button>
          <button type="button" onClick={() => dialog.current?.close()}>
            Cancel
          </button>
        </div>
      </dialog>
      <Failure message={error} />
    </span>
  );
}

export const when = (ms: number | undefined) => (ms === undefined ? '' : new Date(ms).toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC'));
