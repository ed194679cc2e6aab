// Tighter bounds for the conversations of one tenant on the public family: the demo page's, which anyone may
// open (docs/guides/embedding.md#the-demo-page). A send is refused before its turn starts when its text is
// too long (422), when the conversation holds its most messages (409), or when every client's sends together
// reach the hourly cap (429); uploads have a small quota of their own.
import type { FastifyInstance, FastifyRequest, preHandlerAsyncHookHandler } from 'fastify';
import type { ChatRequest, MessageRequest } from '#schemas';
import { AppError, ValidationError } from '../../errors.ts';
import type { FileQuota, Store } from '../../store/store.ts';
import type { HourlyCap } from '../server/hourly-cap.ts';
import { chatSend } from '../turns/chat-send.ts';

export interface TenantBounds {
  tenantId: string;
  /** Characters of text in one send. */
  maxMessageChars: number;
  /** Messages a conversation may hold; a send adds two (the message and the reply). */
  maxMessages: number;
  /** The sends of every client together, an hour. */
  sends: HourlyCap;
  /** The tenant's upload quota, in place of the configured one. */
  fileQuota: FileQuota;
}

/** The routes that start a turn: a send, a streamed send, an AI SDK chat request. */
const SEND = /\/(messages|messages\/stream|chat)$/;

/** The text a send carries, and where a 422 about its length points. */
function sentText(request: FastifyRequest): { chars: number; loc: (string | number)[] } {
  if (request.routeOptions.url?.endsWith('/chat')) {
    const messages = (request.body as ChatRequest).messages;
    const { content } = chatSend(messages);
    const index = messages.findLastIndex((m) => m.role === 'user');
    const chars = content.reduce((n, block) => n + (block.text?.length ?? 0), 0);
    return { chars, loc: ['body', 'messages', index] };
  }
  const { content } = request.body as MessageRequest;
  const chars =
    typeof content === 'string' ? content.length : content.reduce((n, b) => n + (b.text?.length ?? 0), 0);
  return { chars, loc: ['body', 'content'] };
}

/** Registers the bounds on the send routes of `scope` (the public family), for the tenant's conversations. */
export function registerTenantBounds(scope: FastifyInstance, bounds: TenantBounds, store: Store): void {
  const check: preHandlerAsyncHookHandler = async (request) => {
    const token = request.sessionToken;
    if (!token || token.tenantId !== bounds.tenantId) return;
    const { chars, loc } = sentText(request);
    if (chars > bounds.maxMessageChars) {
      throw ValidationError.at(
        loc,
        `A message in this conversation has at most ${bounds.maxMessageChars} characters of text`,
        'string_too_long',
      );
    }
    const session = await store.getSession(bounds.tenantId, token.conversationId);
    if (session && session.messages_count + 2 > bounds.maxMessages) {
      throw new AppError('session_message_limit_reached', undefined, {
        context: { limit: bounds.maxMessages, messages_count: session.messages_count },
      });
    }
    await bounds.sends.take();
  };
  scope.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (!methods.includes('POST') || !SEND.test(route.url)) return;
    const given = route.preHandler ?? [];
    route.preHandler = [...(Array.isArray(given) ? given : [given]), check];
  });
}
