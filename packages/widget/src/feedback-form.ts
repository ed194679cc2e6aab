// The NPS feedback form: a 0–10 score as a radio group (arrow keys move within it), an optional comment, send
// and "not now"; and when the element offers it (FeedbackOffer): after the first reply, or at the end if put off.
import { h } from './view.ts';

export interface FeedbackChoice {
  score: number;
  comment: string | null;
}

export function feedbackForm(
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
    placeholder: 'Comment (optional)',
  });
  const send = h('button', { type: 'submit', class: 'primary', part: 'feedback-send' }, 'Send feedback');
  const form = h(
    'form',
    { class: 'feedback', part: 'feedback', 'aria-label': 'Feedback' },
    h(
      'fieldset',
      {},
      h('legend', {}, 'How likely are you to recommend us? (0 = not at all, 10 = very)'),
      scores,
    ),
    h('label', { class: 'sr-only' }, 'Comment'),
    comment,
    h('div', { class: 'row' }, send, h('button', { type: 'button', onclick: () => onDismiss() }, 'Not now')),
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
  /** Whether the conversation has ended. */
  ended(): boolean;
  /** "Not now" was chosen: the slot is empty again, focus goes back to the conversation. */
  dismissed(): void;
  fail(err: unknown): void;
}

/** When the form is offered: after the first reply; "not now" puts it off until the conversation ends. */
export class FeedbackOffer {
  readonly slot = h('div');
  readonly #hooks: FeedbackHooks;
  #state: 'unasked' | 'shown' | 'later' | 'done' = 'unasked';

  constructor(hooks: FeedbackHooks) {
    this.#hooks = hooks;
  }

  /** A conversation (re)started: nothing shown, nothing asked yet. */
  reset(): void {
    this.slot.replaceChildren();
    this.#state = 'unasked';
  }

  /** Shows the form unless it was shown already (or, `atEnd`, put off until then); `send` sends the choice. */
  offer(send: (choice: FeedbackChoice) => Promise<unknown>, atEnd = false): void {
    if (!(this.#state === 'unasked' || (atEnd && this.#state === 'later'))) return;
    this.#state = 'shown';
    const form = feedbackForm(
      async (choice: FeedbackChoice) => {
        try {
          await send(choice);
          this.#state = 'done';
          const thanks = h('div', { class: 'notice', part: 'feedback-thanks', tabindex: '-1' }, 'Thank you!');
          this.slot.replaceChildren(thanks);
          thanks.focus();
        } catch (err) {
          this.#hooks.fail(err);
        }
      },
      () => {
        // Not now: asked again when the conversation ends.
        this.#state = this.#hooks.ended() ? 'done' : 'later';
        this.slot.replaceChildren();
        this.#hooks.dismissed();
      },
    );
    this.slot.replaceChildren(form);
  }
}
