// The sign-in: an API key, checked by listing the agents it may use before it is kept (in this tab's
// sessionStorage only). A key that is refused is said so, in an alert the screen reader reads.
import { ParleyError } from '@parley/client';
import { errorText, field, h } from './dom.ts';
import { clientFor } from './storage.ts';

export function showSignIn(
  root: HTMLElement,
  message: string | undefined,
  done: (key: string) => void,
): void {
  const input = h('input', {
    type: 'password',
    name: 'api-key',
    autocomplete: 'off',
    spellcheck: 'false',
    required: true,
  });
  const status = h('p', { role: 'alert', class: 'error' }, message ?? '');
  const button = h('button', { type: 'submit' }, 'Sign in');
  const form = h(
    'form',
    { class: 'sign-in', 'aria-labelledby': 'sign-in-title' },
    h('h1', { id: 'sign-in-title' }, 'Parley operator console'),
    h(
      'p',
      {},
      'Sign in with an API key. It is kept in this tab only, and forgotten when the tab closes or you sign out.',
    ),
    field('API key', input),
    button,
    status,
  );
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    button.disabled = true;
    status.textContent = '';
    try {
      await clientFor(key).agents();
      done(key);
    } catch (err) {
      status.textContent =
        err instanceof ParleyError && err.status === 401
          ? 'This API key is unknown or revoked.'
          : `Could not sign in: ${errorText(err)}`;
      button.disabled = false;
      input.focus();
    }
  });
  root.replaceChildren(h('main', { class: 'signed-out' }, form));
  input.focus();
}
