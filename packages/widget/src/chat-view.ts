// The shadow DOM of <parley-chat>: the header with the rate and end controls, the log, the typing indicator,
// the status and error lines, the "new conversation" button, the feedback slot and the composer, each with the
// part a page styles it by, and the launcher button; and how they look as the conversation starts, takes
// messages, scrolls and ends. The element decides what happens; this only shows it.
import type { Composer } from './composer.ts';
import type { EndControls } from './end-controls.ts';
import type { FeedbackOffer } from './feedback-form.ts';
import { Launcher } from './launcher.ts';
import type { StringKey, Strings } from './strings.ts';
import styles from './styles.css';
import { h, messageNode } from './view.ts';

/** The parts with a life of their own, made by the element. */
export interface ChatParts {
  composer: Composer;
  endControls: EndControls;
  feedback: FeedbackOffer;
  strings: Strings;
  /** The "new conversation" button was used. */
  startOver(): void;
}

/** The stylesheet, made once and adopted by every element's shadow root. */
let sheet: CSSStyleSheet | undefined;

/**
 * The widget's styles for `root`: an adopted stylesheet, which a page's Content-Security-Policy does not
 * govern (a `<style>` element would need `style-src 'unsafe-inline'` there), else a `<style>` element.
 */
function adoptStyles(root: ShadowRoot): HTMLStyleElement | null {
  if (!('adoptedStyleSheets' in root) || typeof CSSStyleSheet.prototype.replaceSync !== 'function') {
    return h('style', {}, styles);
  }
  if (!sheet) {
    sheet = new CSSStyleSheet();
    sheet.replaceSync(styles);
  }
  root.adoptedStyleSheets = [...root.adoptedStyleSheets, sheet];
  return null;
}

export class ChatView {
  readonly log = h('div', { class: 'log', part: 'log', role: 'log', 'aria-live': 'polite', tabindex: '0' });
  readonly error = h('div', { class: 'error', part: 'error', role: 'alert' });
  readonly notice = h('div', { class: 'notice', part: 'status', role: 'status' });
  /** The typing indicator: a polite live region, empty unless a reply is awaited. */
  readonly #typing = h('div', { class: 'typing', part: 'typing', 'aria-live': 'polite' });
  readonly #again = h('button', { type: 'button', part: 'new-conversation-button', hidden: true });
  readonly panel: HTMLElement;
  readonly launcher: Launcher;
  readonly #parts: ChatParts;

  /** `active` hears any activity in the widget (a key, a pointer). */
  constructor(root: ShadowRoot, parts: ChatParts, active: () => void) {
    this.#parts = parts;
    const t = parts.strings;
    t.bind(this.log, 'conversation', 'aria-label');
    t.bind(this.#again, 'newConversation');
    this.#again.addEventListener('click', () => parts.startOver());
    for (const type of ['keydown', 'pointerdown']) root.addEventListener(type, active);
    const style = adoptStyles(root);
    if (style) root.append(style);
    this.panel = h(
      'div',
      { class: 'chat', part: 'container' },
      h(
        'header',
        { part: 'header' },
        h('h2', { part: 'title' }, t.bind(h('slot', { name: 'title' }), 'title')),
        parts.feedback.rate,
        parts.endControls.terminate,
        parts.endControls.confirm,
      ),
      this.log,
      this.#typing,
      this.notice,
      this.error,
      h('div', { class: 'again' }, this.#again),
      parts.feedback.slot,
      parts.composer.list,
      parts.composer.form,
      t.bind(h('span', { id: 'parley-hint', class: 'sr-only' }), 'hint'),
    );
    this.launcher = new Launcher(root.host as HTMLElement, this.panel, t, () => parts.composer.input);
    root.append(this.launcher.button, this.panel);
  }

  /** A conversation (re)starting: no messages, no notice, no error; the greeting, if the page gives one. */
  clear(greeting: string | null): void {
    this.log.replaceChildren();
    this.log.removeAttribute('aria-busy');
    this.error.textContent = '';
    this.notice.textContent = '';
    this.typing(false);
    this.#again.hidden = true;
    if (greeting) {
      const shown = { files: new Map(), strings: this.#parts.strings };
      const bubble = messageNode({ role: 'assistant', content: [{ type: 'text', text: greeting }] }, shown);
      // Not a stored message of the agent's: the page's words, shown like one.
      bubble.className = 'msg greeting';
      bubble.setAttribute('part', 'message message-greeting');
      this.log.append(bubble);
    }
  }

  typing(on: boolean): void {
    if (!on) this.#typing.replaceChildren();
    else if (!this.#typing.hasChildNodes()) {
      this.#typing.append(
        h('span', { class: 'dots', 'aria-hidden': 'true' }, h('span'), h('span'), h('span')),
        h('span', { class: 'sr-only' }, this.#parts.strings.t('typing')),
      );
      this.scroll();
    }
  }

  /** A line in the log about the conversation (the handoff and back), not a message. */
  event(key: StringKey): void {
    this.typing(false);
    this.launcher.arrived();
    this.log.append(h('p', { class: 'event', part: 'event' }, this.#parts.strings.t(key)));
    this.scroll();
  }

  setEnabled(on: boolean, busy: boolean, ended: boolean): void {
    this.#parts.composer.setEnabled(on, busy);
    this.#parts.endControls.setEnabled(on, ended);
  }

  scroll(force = false): void {
    const log = this.log;
    // Follow the reply only when the reader is already at the bottom; never pull them away from history.
    if (force || log.scrollHeight - log.scrollTop - log.clientHeight < 80) log.scrollTop = log.scrollHeight;
  }

  /** The conversation takes no more messages, and says why; `again`: the page can start a new one. */
  showEnded(ended: 'closed' | 'expired', busy: boolean, again: boolean): void {
    // Nothing arrives any more: the log is read as it is.
    this.log.removeAttribute('aria-busy');
    this.typing(false);
    this.#parts.endControls.confirm.hidden = true;
    this.setEnabled(false, busy, true);
    this.notice.textContent = this.#parts.strings.t(ended === 'expired' ? 'expired' : 'ended');
    this.#again.hidden = !again;
  }
}
