// The Conversations API shape (docs/guides/openai-sdks.md): a conversation is a session of the agent named in
// `metadata.agent`, its items the session's messages. Updating one replaces its metadata; adding items stores
// user messages without a turn, as OpenAI's Conversations API adds items without a response. Deleting one
// closes the session (its messages stay stored, as a terminated session's do); it then takes no more
// responses.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  conversationItemsCreate,
  conversationItemsQuery,
  conversationParams,
  itemList,
  itemListQuery,
  openAiErrors,
  openConversation,
  openConversationCreate,
  openConversationDeleted,
  openConversationUpdate,
  type ResponseInputMessage,
} from '#schemas';
import type { SessionService } from '../../actors/session-service.ts';
import { AppError, ValidationError } from '../../errors.ts';
import type { MessageRecord, SessionRecord, Store } from '../../store/store.ts';
import { assertAgentAllowed, tenantOf } from '../auth/api-key.ts';
import { keyAuthorize, keySession } from '../auth/session-target.ts';
import { createsSession, onConversation } from '../server/route-config.ts';
import { itemOf, itemPage } from './items.ts';
import { userContent } from './mapping.ts';
import { stringMetadata } from './stored.ts';

interface Options {
  store: Store;
  sessions: SessionService;
}

/** Messages read per page while listing a conversation's items (a session holds a bounded number). */
const PAGE = 100;

const conversationOf = (session: SessionRecord) => ({
  id: session.id,
  object: 'conversation' as const,
  created_at: Math.floor(Date.parse(session.created_at) / 1000),
  metadata: { ...stringMetadata(session.metadata), agent: session.agent_id },
});

/** User message items as the contents to store, each with where the body names its files. */
const contentsOf = (items: readonly ResponseInputMessage[], field: string) =>
  items.map((item, i) => ({
    content: userContent(item.content),
    fileAt: (j: number) => ['body', field, i, 'content', j, 'file_id'],
  }));

export const conversationRoutes: FastifyPluginAsyncZod<Options> = async (app, { store, sessions }) => {
  app.post(
    '/v1/conversations',
    {
      config: createsSession,
      schema: {
        tags: ['responses'],
        summary: 'Create a conversation: a session of the agent named in metadata.agent',
        body: openConversationCreate,
        response: { 200: openConversation, ...openAiErrors },
      },
    },
    async (request) => {
      const { agent = '', ...metadata } = request.body.metadata;
      assertAgentAllowed(request, agent);
      const tenantId = tenantOf(request);
      const items = request.body.items ?? [];
      const authorize = keyAuthorize(request);
      // The items' files are looked up first: a refused one leaves no session behind.
      const blocks = await sessions.messageBlocks(tenantId, contentsOf(items, 'items'), authorize);
      const session = await sessions.createSession(tenantId, agent, { metadata });
      if (blocks.length > 0) await sessions.addMessages(tenantId, session.id, blocks, authorize);
      return conversationOf(session);
    },
  );

  app.get(
    '/v1/conversations/:conversation_id',
    {
      config: onConversation,
      schema: {
        tags: ['responses'],
        summary: 'Read a conversation',
        params: conversationParams,
        response: { 200: openConversation, ...openAiErrors },
      },
    },
    async (request) => {
      const { tenantId, sessionId, authorize } = keySession(request, request.params.conversation_id);
      return conversationOf(await sessions.getSession(tenantId, sessionId, authorize));
    },
  );

  app.post(
    '/v1/conversations/:conversation_id',
    {
      config: onConversation,
      schema: {
        tags: ['responses'],
        summary: "Update a conversation: replace its metadata (its agent stays the conversation's)",
        params: conversationParams,
        body: openConversationUpdate,
        response: { 200: openConversation, ...openAiErrors },
      },
    },
    async (request) => {
      const { tenantId, sessionId, authorize } = keySession(request, request.params.conversation_id);
      const { agent, ...metadata } = request.body.metadata;
      const session = await sessions.getSession(tenantId, sessionId, authorize);
      if (agent !== undefined && agent !== session.agent_id) {
        throw ValidationError.at(
          ['body', 'metadata', 'agent'],
          `The conversation is with agent ${session.agent_id}; its agent cannot change`,
          'value_error',
        );
      }
      return conversationOf(await sessions.updateMetadata(tenantId, sessionId, metadata, authorize));
    },
  );

  app.post(
    '/v1/conversations/:conversation_id/items',
    {
      config: onConversation,
      schema: {
        tags: ['responses'],
        summary:
          'Add user messages to a conversation, stored in order without a turn (no model answers them)',
        params: conversationParams,
        querystring: conversationItemsQuery,
        body: conversationItemsCreate,
        response: { 200: itemList, ...openAiErrors },
      },
    },
    async (request) => {
      const { tenantId, sessionId, authorize } = keySession(request, request.params.conversation_id);
      const blocks = await sessions.messageBlocks(
        tenantId,
        contentsOf(request.body.items, 'items'),
        authorize,
      );
      const added = await sessions.addMessages(tenantId, sessionId, blocks, authorize);
      return itemPage(added.map(itemOf), { limit: added.length, order: 'asc' });
    },
  );

  app.delete(
    '/v1/conversations/:conversation_id',
    {
      config: onConversation,
      schema: {
        tags: ['responses'],
        summary: 'Close a conversation (its session is terminated; its messages stay stored)',
        params: conversationParams,
        response: { 200: openConversationDeleted, ...openAiErrors },
      },
    },
    async (request) => {
      const { tenantId, sessionId, authorize } = keySession(request, request.params.conversation_id);
      await sessions.terminate(tenantId, sessionId, 'conversation deleted', authorize);
      return { id: sessionId, object: 'conversation.deleted' as const, deleted: true as const };
    },
  );

  app.get(
    '/v1/conversations/:conversation_id/items',
    {
      config: onConversation,
      schema: {
        tags: ['responses'],
        summary: "List a conversation's items: its messages (newest first unless order=asc)",
        params: conversationParams,
        querystring: itemListQuery,
        response: { 200: itemList, ...openAiErrors },
      },
    },
    async (request) => {
      const { tenantId, sessionId, authorize } = keySession(request, request.params.conversation_id);
      await sessions.getSession(tenantId, sessionId, authorize);
      const messages: MessageRecord[] = [];
      for (let offset: number | null = 0; offset !== null; ) {
        const page = await store.listMessages(tenantId, sessionId, { limit: PAGE, offset });
        if (!page) throw new AppError('session_not_found', undefined, { context: { session_id: sessionId } });
        messages.push(...page.items);
        offset = page.next_offset;
      }
      return itemPage(messages.map(itemOf), request.query);
    },
  );
};
