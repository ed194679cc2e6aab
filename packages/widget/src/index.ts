// The widget's entry (what GET /widget.js serves, bundled): defines <parley-chat> once, so that a page may load
// the module twice without an error, and exports the client beside it, so that a page that embeds the chat
// also talks to its conversation with the same copy of the client (one ParleyError, one bundle to load).
import { ParleyChat } from './parley-chat.ts';

if (!customElements.get('parley-chat')) customElements.define('parley-chat', ParleyChat);

// Every runtime export of @parley/client but ParleyClient: an API key must never reach a browser.
export {
  ConversationEvents,
  newIdempotencyKey,
  ParleyConversation,
  ParleyError,
  TurnStream,
} from '@parley/client';
export { ParleyChat };

declare global {
  interface HTMLElementTagNameMap {
    'parley-chat': ParleyChat;
  }
}
