// The header's "End chat" button of <parley-chat> and the confirmation it opens (End, Cancel, Escape). The
// element terminates the conversation when confirmed; this only shows and hides the two.
import type { Strings } from './strings.ts';
import { h } from './view.ts';

export class EndControls {
  readonly terminate = h('button', { type: 'button', part: 'terminate-button' });
  readonly confirm = h('div', { class: 'row', role: 'group', hidden: true });

  /** `ended` tells whether the conversation has ended, when the button would come back. */
  constructor(onConfirm: () => void, ended: () => boolean, strings: Strings) {
    strings.bind(this.terminate, 'endChat');
    strings.bind(this.confirm, 'endQuestion', 'aria-label');
    const confirmEnd = strings.bind(
      h('button', { type: 'button', class: 'primary', part: 'confirm-button' }),
      'end',
    );
    const cancelEnd = strings.bind(h('button', { type: 'button' }), 'cancel');
    this.confirm.append(strings.bind(h('span'), 'endQuestion'), confirmEnd, cancelEnd);
    this.terminate.addEventListener('click', () => {
      this.terminate.hidden = true;
      this.confirm.hidden = false;
      confirmEnd.focus();
    });
    const cancel = () => {
      this.confirm.hidden = true;
      this.terminate.hidden = ended();
      this.terminate.focus();
    };
    cancelEnd.addEventListener('click', cancel);
    this.confirm.addEventListener('keydown', (e) => {
      if (e.key !== 'Escape') return;
      // Taken here: a launcher's panel stays open.
      e.preventDefault();
      cancel();
    });
    confirmEnd.addEventListener('click', onConfirm);
  }

  setEnabled(on: boolean, ended: boolean): void {
    this.terminate.hidden = !on && ended;
    this.terminate.disabled = !on;
  }

  /** Ending failed: the button is back, focused. */
  restore(): void {
    this.confirm.hidden = true;
    this.terminate.hidden = false;
    this.terminate.focus();
  }
}
