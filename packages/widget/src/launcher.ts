// The launcher of <parley-chat launcher>: a floating round button in the page's corner that opens and closes
// the chat panel above it. It says whether the panel is open (aria-expanded); Escape in the panel closes it and
// gives the focus back to the button; opened, the panel's message box takes the focus. A message that arrives
// while it is closed (an operator's reply) marks the button until it is opened. The `open` attribute is the
// panel's state, so a page may open it too (or style it).
import type { Strings } from './strings.ts';
import { h } from './view.ts';

const BUBBLE =
  '<svg aria-hidden="true" width="26" height="26" viewBox="0 0 24 24" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round"><path d="M21 15a2 2 0 0 1-2 2H7l-4 4V5a2 2 0 0 1 2-2h14a2 2 0 0 1 2 2z"/></svg>';

export class Launcher {
  readonly button = h('button', {
    type: 'button',
    class: 'launcher',
    part: 'launcher',
    'aria-expanded': 'false',
    'aria-controls': 'parley-panel',
  });
  readonly #host: HTMLElement;
  readonly #strings: Strings;
  #unread = false;

  /** `panel` is the chat; `focus` is where the focus goes when it opens. */
  constructor(host: HTMLElement, panel: HTMLElement, strings: Strings, focus: () => HTMLElement) {
    this.#host = host;
    this.#strings = strings;
    // A constant of ours: Feather's message-square (MIT), drawn in the button's text colour.
    this.button.innerHTML = BUBBLE;
    panel.id = 'parley-panel';
    this.button.addEventListener('click', () => {
      this.toggle(!this.open);
      if (this.open) focus().focus();
    });
    panel.addEventListener('keydown', (e) => {
      if (e.key !== 'Escape' || !this.#host.hasAttribute('launcher') || !this.open) return;
      // Escape in the end confirmation cancels it first (end-controls.ts); here only when nothing else took it.
      if (e.defaultPrevented) return;
      this.toggle(false);
      this.button.focus();
    });
  }

  get open(): boolean {
    return this.#host.hasAttribute('open');
  }

  toggle(on: boolean): void {
    this.#host.toggleAttribute('open', on);
    this.update();
  }

  /** A message arrived: marked on the button while the panel is closed. */
  arrived(): void {
    if (!this.#host.hasAttribute('launcher') || this.open) return;
    this.#unread = true;
    this.update();
  }

  /** The button's state and name, as the `open` attribute and the strings say. */
  update(): void {
    if (this.open) this.#unread = false;
    this.button.toggleAttribute('data-unread', this.#unread);
    this.button.setAttribute('aria-expanded', String(this.open));
    const name = this.open ? 'closeChat' : this.#unread ? 'openChatUnread' : 'openChat';
    this.button.setAttribute('aria-label', this.#strings.t(name));
  }
}
