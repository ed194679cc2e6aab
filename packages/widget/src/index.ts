// The widget's entry (what GET /widget.js serves, bundled): defines <parley-chat> once, so that a page may load
// the module twice without an error.
import { ParleyChat } from './parley-chat.ts';

if (!customElements.get('parley-chat')) customElements.define('parley-chat', ParleyChat);

export { ParleyChat };

declare global {
  interface HTMLElementTagNameMap {
    'parley-chat': ParleyChat;
  }
}
