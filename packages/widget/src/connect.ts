// Which conversation the attributes of <parley-chat> name, and the client for it (@parley/client), whose
// session token is refreshed through the page's `refreshToken` callback when it expires.
import { ParleyConversation, ParleyError } from '@parley/client';

/** Where the API is: `base-url`, else the origin this module was served from (Parley serves /widget.js). */
export const baseUrlOf = (el: Element): string =>
  el.getAttribute('base-url') || new URL(import.meta.url).origin;

/** Which conversation the attributes name: a restart on the same one may resume its reply. */
export const conversationKey = (el: Element): string =>
  `${baseUrlOf(el)} ${el.getAttribute('conversation-id') ?? ''}`;

/**
 * The client of the conversation the attributes name. `refresh` asks the page for a fresh token when one has
 * expired; null when the page gives no refreshToken callback.
 */
export function connect(el: Element, refresh: () => Promise<string> | null): ParleyConversation {
  return new ParleyConversation({
    baseUrl: baseUrlOf(el),
    conversationId: el.getAttribute('conversation-id') ?? '',
    token: el.getAttribute('token') ?? '',
    refreshToken: () =>
      refresh() ??
      Promise.reject(
        new ParleyError({
          status: 401,
          code: 'session_token_expired',
          errorName: 'SessionTokenExpiredError',
          message: 'The session token has expired, and this page gives no refreshToken callback.',
        }),
      ),
  });
}
