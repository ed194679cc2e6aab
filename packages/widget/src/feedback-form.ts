// The NPS feedback form: a 0–10 score as a radio group (arrow keys move within it), an optional comment, send
// and "not now". The element decides when to show it; this only builds it and reports what was chosen.
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
