// The shadow DOM of <parley-chat>: the header with the end controls, the log, the status and error lines, the
// feedback slot and the composer, each with the part a page styles it by; and how they look as the conversation
// starts, takes messages, scrolls and ends. The element decides what happens; this only shows it.
import type { Composer } from './composer.ts';
import type { EndControls } from './end-controls.ts';
import styles from './styles.css';
import { h } from './view.ts';

/** The parts with a life of their own, made by the element. */
export interface ChatParts {
  composer: Composer;
  endControls: EndControls;
  /** Where the feedback form is shown. */
  feedback: HTMLElement;
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
  readonly log = h('div', {
    class: 'log',
    part: 'log',
    role: 'log',
    'aria-live': 'polite',
    'aria-label': 'Conversation',
    tabindex: '0',
  });
  readonly error = h('div', { class: 'error', part: 'error', role: 'alert' });
  readonly notice = h('div', { class: 'notice', part: 'status', role: 'status' });
  readonly #parts: ChatParts;

  /** `active` hears any activity in the widget (a key, a pointer). */
  constructor(root: ShadowRoot, parts: ChatParts, active: () => void) {
    this.#parts = parts;
    for (const type of ['keydown', 'pointerdown']) root.addEventListener(type, active);
    const style = adoptStyles(root);
    if (style) root.append(style);
    root.append(
      h(
        'div',
        { class: 'chat', part: 'container' },
        h(
          'header',
          { part: 'header' },
          h('h2', { part: 'title' }, h('slot', { name: 'title' }, 'Chat')),
          parts.endControls.terminate,
          parts.endControls.confirm,
        ),
        this.log,
        this.notice,
        this.error,
        parts.feedback,
        parts.composer.list,
        parts.composer.form,
        h('span', { id: 'parley-hint', class: 'sr-only' }, 'Enter sends, Shift+Enter starts a new line.'),
      ),
    );
  }

  /** A conversation (re)starting: no messages, no notice, no error. */
  clear(): void {
    this.log.replaceChildren();
    this.log.removeAttribute('aria-busy');
    this.error.textContent = '';
    this.notice.textContent = '';
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

  /** The conversation takes no more messages, and says why. */
  showEnded(ended: 'closed' | 'expired', busy: boolean): void {
    // Nothing arrives any more: the log is read as it is.
    this.log.removeAttribute('aria-busy');
    this.#parts.endControls.confirm.hidden = true;
    this.setEnabled(false, busy, true);
    this.notice.textContent =
      ended === 'expired' ? 'This conversation has expired.' : 'This conversation has ended.';
  }
}
