// Shortcuts for the conversation family: start a conversation with the API key, then call the public
// routes with its session token, as a front-end would.
import assert from 'node:assert/strict';
import type { LightMyRequestResponse } from 'fastify';
import type { TestApp } from './app.ts';
import { encodeForm, fileForm } from './multipart.ts';
import { client, type Message } from './sessions.ts';

export interface Conversation {
  id: string;
  agent_id: string;
  status: 'active' | 'closed' | 'expired';
  created_at: string;
  updated_at: string;
  closed_at: string | null;
  close_reason: string | null;
  messages_count: number;
  last_message_at: string | null;
}

export interface StartedConversation {
  conversation: Conversation;
  session_token: string;
  expires_at: string;
}

/** The fields of the Conversation record, sorted: exactly these, never metadata, context or user. */
export const recordKeys = [
  'agent_id',
  'close_reason',
  'closed_at',
  'created_at',
  'handled_by',
  'handoff',
  'id',
  'last_message_at',
  'messages_count',
  'pending_approvals',
  'status',
  'updated_at',
];

/** A message as the public family shows it: without its metadata, which is the integrator's. */
/** A message as the end user sees it: no metadata, and no tool calls (the agents these tests use do not expose them). */
export const seenByEndUser = ({ metadata: _metadata, tool_calls: _tools, ...message }: Message) => message;

export const publicPath = (conversationId: string, rest = '') =>
  `/v1/public/agents/conversations/${conversationId}${rest}`;

/** Starts a conversation with `agentId` through the API key; asserts the 201. */
export async function startConversation(
  t: TestApp,
  agentId = 'demo',
  body: Record<string, unknown> = {},
  key: string = t.apiKey,
): Promise<StartedConversation> {
  const res = await client(t, key).post(`/v1/agents/${agentId}/conversations`, body);
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

/** Requests to one conversation's public routes, authenticated with `token`. */
export function publicClient(t: TestApp, conversationId: string, token: string) {
  const auth = (headers: Record<string, string> = {}) => ({ authorization: `Bearer ${token}`, ...headers });
  return {
    get: (rest = '', headers?: Record<string, string>): Promise<LightMyRequestResponse> =>
      t.app.inject({ method: 'GET', url: publicPath(conversationId, rest), headers: auth(headers) }),
    post: (
      rest: string,
      payload?: unknown,
      headers?: Record<string, string>,
    ): Promise<LightMyRequestResponse> =>
      t.app.inject({
        method: 'POST',
        url: publicPath(conversationId, rest),
        headers: auth(headers),
        ...(payload === undefined ? {} : { payload: payload as object }),
      }),
    /** Uploads one file as multipart `file`. */
    upload: async (content: Buffer | string, name: string, type: string): Promise<LightMyRequestResponse> => {
      const form = await encodeForm(fileForm(content, name, type));
      return t.app.inject({
        method: 'POST',
        url: publicPath(conversationId, '/files'),
        headers: auth({ 'content-type': form.contentType }),
        payload: form.payload,
      });
    },
  };
}

/** Starts a conversation and returns its public client along with what the start answered. */
export async function openConversation(t: TestApp, agentId = 'demo', body: Record<string, unknown> = {}) {
  const started = await startConversation(t, agentId, body);
  return {
    ...started,
    id: started.conversation.id,
    pub: publicClient(t, started.conversation.id, started.session_token),
  };
}
