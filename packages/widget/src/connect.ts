// Which conversation the attributes of <parley-chat> name, the client for it (@parley/client), whose session
// token is refreshed through the page's `refreshToken` callback when it expires, and the turn of it under way,
// remembered for the tab (sessionStorage) so that a reload finds a turn waiting for decisions again.
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

/** The turn whose reply is arriving (or that waits for decisions): what a restart needs to follow it again. */
export interface LiveTurn {
  conversation: string;
  turnId: string;
  userMessageId: string | undefined;
}

const storageKey = (el: Element) => `parley-chat:turn ${conversationKey(el)}`;

/** Remembers (or forgets, with null) the conversation's turn under way; a page without storage remembers nothing. */
export function rememberTurn(el: Element, turn: LiveTurn | null): void {
  try {
    if (turn) sessionStorage.setItem(storageKey(el), JSON.stringify(turn));
    else sessionStorage.removeItem(storageKey(el));
  } catch {
    // Storage refused (a sandboxed frame, a full quota): a reload then only shows the stored messages.
  }
}

/** The turn under way that this tab remembered for the conversation the attributes name. */
export function rememberedTurn(el: Element): LiveTurn | null {
  try {
    const turn = JSON.parse(sessionStorage.getItem(storageKey(el)) ?? 'null') as LiveTurn | null;
    return turn && typeof turn.turnId === 'string' ? turn : null;
  } catch {
    return null;
  }
}
