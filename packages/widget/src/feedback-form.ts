// The NPS feedback form: a 0–10 score as a radio group (arrow keys move within it), an optional comment, send
// and "not now"; and when the element offers it (FeedbackOffer), as its `feedback` attribute says: at the end of
// the conversation (`end`, the default), also when the "Rate this conversation" button is used (`button`), or
// never (`off`). It is never offered mid-conversation on its own, where it would push the newest reply away.
import type { Strings } from './strings.ts';
import { h } from './view.ts';

export interface FeedbackChoice {
  score: number;
  comment: string | null;
}

export function feedbackForm(
  t: Strings,
  onSend: (choice: FeedbackChoice) => Promise<void>,
  onDismiss: () => void,
): HTMLFormElement {
  const scores = h('div', { class: 'scores' });
  for (let score = 0; score <= 10; score++) {
    scores.append(
      h(
        'label',
        {},
        h('input', { type: 'radio', name: 'score', value: String(score), 'aria-label': String(score) }),
        h('span', { 'aria-hidden': 'true' }, String(score)),
      ),
    );
  }
  const comment = h('textarea', {
    name: 'comment',
    rows: '2',
    maxlength: '2000',
    placeholder: t.t('commentPlaceholder'),
  });
  const send = h('button', { type: 'submit', class: 'primary', part: 'feedback-send' }, t.t('sendFeedback'));
  const form = h(
    'form',
    { class: 'feedback', part: 'feedback', 'aria-label': t.t('feedback') },
    h('fieldset', {}, h('legend', {}, t.t('feedbackQuestion')), scores),
    h('label', { class: 'sr-only' }, t.t('comment')),
    comment,
    h(
      'div',
      { class: 'row' },
      send,
      h('button', { type: 'button', onclick: () => onDismiss() }, t.t('notNow')),
    ),
  );
  // The label names the comment box for screen readers.
  const commentLabel = form.querySelector('label.sr-only');
  comment.id = 'parley-feedback-comment';
  commentLabel?.setAttribute('for', comment.id);
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const picked = form.querySelector<HTMLInputElement>('input[name="score"]:checked');
    if (!picked) {
      form.querySelector<HTMLInputElement>('input[name="score"]')?.focus();
      return;
    }
    send.disabled = true;
    const text = comment.value.trim();
    void onSend({ score: Number(picked.value), comment: text === '' ? null : text }).finally(() => {
      send.disabled = false;
    });
  });
  return form;
}

/** Where the form is shown, and who hears what became of it. */
export interface FeedbackHooks {
  strings: Strings;
  /** The `feedback` attribute. */
  mode(): string | null;
  /** The form is shown: the log keeps its newest message in sight above it. */
  shown(): void;
  /** "Not now" was chosen: the slot is empty again, focus goes back to the conversation. */
  dismissed(): void;
  fail(err: unknown): void;
}

/** When the form is offered: at the end, or when asked for with the rate button; once answered, never again. */
export class FeedbackOffer {
  readonly slot = h('div');
  readonly rate: HTMLButtonElement;
  readonly #hooks: FeedbackHooks;
  #state: 'unasked' | 'shown' | 'done' = 'unasked';
  #send: ((choice: FeedbackChoice) => Promise<unknown>) | null = null;

  constructor(hooks: FeedbackHooks) {
    this.#hooks = hooks;
    this.rate = hooks.strings.bind(
      h('button', { type: 'button', part: 'rate-button', hidden: true, onclick: () => this.#show() }),
      'rate',
    );
  }

  /** A conversation (re)started: nothing shown, nothing asked yet; `send` sends a choice (null: none yet). */
  reset(send: ((choice: FeedbackChoice) => Promise<unknown>) | null): void {
    this.slot.replaceChildren();
    this.#state = 'unasked';
    this.#send = send;
    this.update();
  }

  /** Shows or hides the rate button as the `feedback` attribute and the state say. */
  update(): void {
    this.rate.hidden = this.#hooks.mode() !== 'button' || this.#state !== 'unasked' || !this.#send;
  }

  /** The conversation ended: the form is offered unless it was answered or feedback is off. */
  atEnd(): void {
    if (this.#hooks.mode() !== 'off' && this.#state === 'unasked') this.#show();
  }

  #show(): void {
    const send = this.#send;
    if (!send || this.#state !== 'unasked') return;
    this.#state = 'shown';
    this.update();
    const t = this.#hooks.strings;
    const form = feedbackForm(
      t,
      async (choice: FeedbackChoice) => {
        try {
          await send(choice);
          this.#state = 'done';
          const thanks = h(
            'div',
            { class: 'notice', part: 'feedback-thanks', tabindex: '-1' },
            t.t('thanks'),
          );
          this.slot.replaceChildren(thanks);
          thanks.focus();
        } catch (err) {
          this.#hooks.fail(err);
        }
      },
      () => {
        // Not now: asked for again only with the button (or at the end, if it comes).
        this.#state = 'unasked';
        this.slot.replaceChildren();
        this.update();
        this.#hooks.dismissed();
      },
    );
    this.slot.replaceChildren(form);
    this.#hooks.shown();
  }
}
