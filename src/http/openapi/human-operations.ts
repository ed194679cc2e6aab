// The OpenAPI descriptions of people in the conversation, in both families (docs/guides/humans.md): the agents
// an operator may supervise, handing a session to people and back, and following everything that happens in it.
import { A, apiKey, ending, type OperationDoc, P, session, token } from './operation-parts.ts';

export const humanOperationDocs: Record<string, OperationDoc> = {
  [`GET ${A}`]: {
    id: 'listAgents',
    description:
      'The agents of the catalogue this key may use (a key scoped to some agents sees only those), in catalogue order: `name`, `description`, `provider` and `model`, the HTTP tools with who approves their calls (`none`, `user`, `operator`; with `handoff_to_human` where `handoff.enabled`), the MCP servers as the catalogue configures them (no connection is made: `all_tools` says the server offers every tool it lists, and `tools` names those the catalogue names), `expose_tools` and `handoff`. No secret is shown: no keys, base URLs, headers, commands or environment.',
    ok: 'The agents',
    errors: apiKey,
  },
  [`POST ${A}/sessions/{session_id}/handoff`]: {
    id: 'handOffSession',
    description:
      'Hands the session to people, with an optional `reason` (at most 500 characters): from then on a user\'s send is stored and no model answers it (201 `{ agent_message: null, handled_by: "humans" }`), and operators answer with `sendMessage`, `role: "assistant"` and an optional `author`. The session shows `handled_by: "humans"` and the `handoff` (`requested_at`, `reason`, `by`). Idempotent: a session people handle already keeps its first handoff. A `session.handoff_requested` webhook event is queued with it; a closed or expired session is 409.',
    ok: 'The session as it is now, handled by people',
    errors: [...session, ...ending],
  },
  [`POST ${A}/sessions/{session_id}/handback`]: {
    id: 'handBackSession',
    description:
      "Hands the session back to the agent: the next send is answered by its model, which sees the operators' messages as the assistant's. Idempotent; a `session.handed_back` webhook event is queued with it; a closed or expired session is 409.",
    ok: 'The session as it is now, handled by the agent',
    errors: [...session, ...ending],
  },
  [`GET ${A}/sessions/{session_id}/events`]: {
    id: 'followSession',
    description:
      "Every event of the session as it is committed, whoever caused it, as Server-Sent Events: `message.created` (user, agent, operator and inactivity messages), the turn events of a streamed send (`turn.started`, `tool.started`, `tool.completed`, `tool.approval_requested`, `turn.awaiting_approval`, `message.completed`, `turn.completed`, `turn.cancelled`, `turn.failed`; no `message.delta`), `session.handoff_requested`, `session.handed_back`, and `session.closed` or `session.expired`, after which the stream ends. Each event's id is its place in the session (1, 2, …); `Last-Event-ID` (or `?after=`) resumes after it, on any process, with nothing lost or repeated. At most `PARLEY_EVENT_STREAMS_PER_CONVERSATION` streams per session (429 `event_stream_limit`) and `PARLEY_MAX_EVENT_STREAMS` per process (503 `server_busy`); a reader that falls 10 s behind is disconnected and resumes from its last id.",
    ok: "The session's events",
    errors: [...session, 'event_stream_limit', 'server_busy'],
  },
  [`GET ${P}/events`]: {
    id: 'followConversation',
    description:
      "The events of `followSession`, for the conversation's front-end: messages without their metadata, tool events only where the agent exposes its tools, approvals only those the end user may decide. Another conversation's stream is not found.",
    ok: "The conversation's events",
    errors: [...token, 'event_stream_limit', 'server_busy'],
  },
  [`POST ${P}/handoff`]: {
    id: 'requestHuman',
    description:
      'The end user asks for a human, as `handOffSession` does (`by: "user"`), where the conversation\'s agent allows it (`handoff.user_can_request`; otherwise 403 `handoff_not_allowed` and nothing changes). Idempotent. Only the API key hands a conversation back.',
    ok: 'The conversation as it is now, handled by people',
    errors: [...token, ...ending, 'handoff_not_allowed'],
  },
};
