// The header's "End chat" button of <parley-chat> and the confirmation it opens (End, Cancel, Escape). The
// element terminates the conversation when confirmed; this only shows and hides the two.
import { h } from './view.ts';

export class EndControls {
  readonly terminate = h('button', { type: 'button', part: 'terminate-button' }, 'End chat');
  readonly confirm = h('div', {
    class: 'row',
    role: 'group',
    'aria-label': 'End the conversation?',
    hidden: true,
  });

  /** `ended` tells whether the conversation has ended, when the button would come back. */
  constructor(onConfirm: () => void, ended: () => boolean) {
    const confirmEnd = h('button', { type: 'button', class: 'primary', part: 'confirm-button' }, 'End');
    const cancelEnd = h('button', { type: 'button' }, 'Cancel');
    this.confirm.append(h('span', {}, 'End the conversation?'), confirmEnd, cancelEnd);
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
    this.confirm.addEventListener('keydown', (e) => e.key === 'Escape' && cancel());
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
