// The operator's reply box: the name replies are signed with is asked once and kept in this tab's
// sessionStorage; a reply is an assistant message with its author, which the end user sees as the
// operator's. Replies are offered only while people handle the session (after "Take over").
import type { ConsoleContext } from './console-app.ts';
import { announce, field, h } from './dom.ts';
import { operatorId, storedName, storeName } from './storage.ts';

export class Composer {
  readonly element = h('div', { class: 'composer' });
  readonly #ctx: ConsoleContext;
  readonly #sessionId: string;
  #enabled = false;

  constructor(ctx: ConsoleContext, sessionId: string) {
    this.#ctx = ctx;
    this.#sessionId = sessionId;
    this.#render();
  }

  /** Whether the operator may reply now: the session is active and people handle it. */
  enable(enabled: boolean): void {
    if (enabled === this.#enabled) return;
    this.#enabled = enabled;
    this.#render();
  }

  #render(): void {
    if (!this.#enabled) {
      this.element.replaceChildren(
        h('p', { class: 'note' }, 'Take the conversation over to reply as an operator.'),
      );
      return;
    }
    const name = storedName();
    this.element.replaceChildren(name ? this.#replyForm(name) : this.#nameForm());
  }

  #nameForm(): HTMLFormElement {
    const input = h('input', {
      type: 'text',
      name: 'operator',
      autocomplete: 'name',
      required: true,
      maxlength: '200',
    });
    const form = h(
      'form',
      { class: 'name-form', 'aria-label': 'Your name' },
      field('Your name, shown to the user with your replies', input),
      h('button', { type: 'submit' }, 'Save name'),
    );
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const name = input.value.trim();
      if (!name) return;
      storeName(name);
      this.#render();
      this.element.querySelector('textarea')?.focus();
    });
    return form;
  }

  #replyForm(name: string): HTMLFormElement {
    const text = h('textarea', { name: 'reply', rows: '3', required: true });
    const send = h('button', { type: 'submit' }, 'Send reply');
    const form = h(
      'form',
      { class: 'reply-form', 'aria-label': 'Reply' },
      field(`Reply as ${name}`, text),
      h(
        'div',
        { class: 'row' },
        send,
        h(
          'button',
          {
            type: 'button',
            class: 'quiet',
            onclick: () => {
              storeName(null);
              this.#render();
            },
          },
          'Change name',
        ),
      ),
    );
    const submit = async () => {
      const content = text.value.trim();
      if (!content) return;
      send.disabled = true;
      try {
        await this.#ctx.client.sendMessage(this.#sessionId, {
          role: 'assistant',
          content,
          author: { id: operatorId(name), name },
        });
        text.value = '';
        announce('Reply sent.');
      } catch (err) {
        this.#ctx.fail(err);
      } finally {
        send.disabled = false;
        text.focus();
      }
    };
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      void submit();
    });
    // Ctrl+Enter (or ⌘+Enter) sends; Enter alone is a new line.
    text.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        void submit();
      }
    });
    return form;
  }
}
