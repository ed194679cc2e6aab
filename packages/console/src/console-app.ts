// The console once signed in: a bar (who signs replies, sign out), the session list, and the open session,
// which the URL's hash names (#/sessions/<id>), so that the browser's back button and a reload keep it. At
// 390 px the list and the session take the width in turn; wider, they stand side by side.
import { type ParleyClient, ParleyError } from '@parley/client';
import { errorText, h } from './dom.ts';
import { SessionList } from './session-list.ts';
import { SessionView } from './session-view.ts';

/** What the parts of the console share: the client, and where a failed request is told. */
export interface ConsoleContext {
  client: ParleyClient;
  /** Shows a failed request; a refused key signs out. */
  fail(err: unknown): void;
}

export function mountConsole(root: HTMLElement, client: ParleyClient, signOut: (why: string) => void): void {
  const errors = h('p', { role: 'alert', class: 'error' });
  let stopped = false;
  const stop = (why: string) => {
    if (stopped) return;
    stopped = true;
    window.removeEventListener('hashchange', route);
    list.stop();
    view?.close();
    if (location.hash) history.replaceState(null, '', location.pathname);
    signOut(why);
  };
  const ctx: ConsoleContext = {
    client,
    fail(err) {
      if (err instanceof ParleyError && err.status === 401) stop('The API key was refused: sign in again.');
      else if (!(err instanceof DOMException && err.name === 'AbortError'))
        errors.textContent = errorText(err);
    },
  };

  const bar = h(
    'header',
    { class: 'bar' },
    h('h1', {}, 'Parley console'),
    h('button', { type: 'button', class: 'quiet', onclick: () => stop('You signed out.') }, 'Sign out'),
  );
  const listPane = h('section', { class: 'list-pane', 'aria-labelledby': 'sessions-title' });
  const viewPane = h('section', { class: 'view-pane', 'aria-labelledby': 'session-title' });
  const main = h('main', { class: 'console' }, errors, listPane, viewPane);
  root.replaceChildren(bar, main);

  const list = new SessionList(listPane, ctx, (id) => {
    location.hash = `#/sessions/${encodeURIComponent(id)}`;
  });
  let view: SessionView | undefined;

  function route(): void {
    const match = /^#\/sessions\/([^/]+)$/.exec(location.hash);
    const id = match?.[1] ? decoded(match[1]) : null;
    if (view && view.id === id) return;
    view?.close();
    view = undefined;
    errors.textContent = '';
    list.select(id);
    main.classList.toggle('has-session', id !== null);
    if (id === null) {
      viewPane.replaceChildren(
        h('h2', { id: 'session-title', class: 'sr-only' }, 'No session open'),
        h('p', { class: 'empty' }, 'Choose a session in the list to see its conversation.'),
      );
      list.focusSelected();
      return;
    }
    view = new SessionView(viewPane, ctx, id, () => {
      location.hash = '';
    });
  }
  window.addEventListener('hashchange', route);
  route();
}

/** A percent-encoded part of the address, or null when it is not one (a hand-edited hash). */
function decoded(part: string): string | null {
  try {
    return decodeURIComponent(part);
  } catch {
    return null;
  }
}
