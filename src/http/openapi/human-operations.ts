// The OpenAPI descriptions of people in the conversation, in both families (docs/guides/humans.md): handing a
// session to people and back.
import { A, ending, type OperationDoc, P, session, token } from './operation-parts.ts';

export const humanOperationDocs: Record<string, OperationDoc> = {
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
  [`POST ${P}/handoff`]: {
    id: 'requestHuman',
    description:
      'The end user asks for a human, as `handOffSession` does (`by: "user"`), where the conversation\'s agent allows it (`handoff.user_can_request`; otherwise 403 `handoff_not_allowed` and nothing changes). Idempotent. Only the API key hands a conversation back.',
    ok: 'The conversation as it is now, handled by people',
    errors: [...token, ...ending, 'handoff_not_allowed'],
  },
};
