// The rows records are written as, for both stores: each table's columns, named once, with the values a
// new record (or a user's update) stores in them. Objects are kept as JSON text in both schemas.
import { json, type SqlValue } from './rows.ts';
import {
  type BudgetFields,
  type Feedback,
  fullUsage,
  type MessageRecord,
  type NewApiKey,
  type NewFile,
  type NewSession,
  type NewToolCall,
  type SessionWrite,
  type StoredFile,
  type UserFields,
} from './store.ts';

export const apiKeyRow = (key: NewApiKey, at: string) => ({
  id: key.id,
  tenant_id: key.tenant_id,
  hash: key.hash,
  prefix: key.prefix,
  agents: JSON.stringify(key.agents),
  created_at: at,
});

export const userRow = (tenantId: string, id: string, fields: UserFields, at: string) => ({
  id,
  tenant_id: tenantId,
  reference: fields.reference ?? null,
  name: fields.name ?? null,
  email: fields.email ?? null,
  phone: fields.phone ?? null,
  metadata: json(fields.metadata),
  info: json(fields.info),
  created_at: at,
  updated_at: at,
});

/** The columns a user update sets: only the fields given, objects as JSON text. */
export function userChanges(fields: UserFields): [column: string, value: SqlValue][] {
  const changes: [string, SqlValue][] = [];
  for (const column of ['reference', 'name', 'email', 'phone'] as const) {
    const value = fields[column];
    if (value !== undefined) changes.push([column, value]);
  }
  for (const column of ['metadata', 'info'] as const) {
    if (fields[column] !== undefined) changes.push([column, json(fields[column])]);
  }
  return changes;
}

export const storedFile = (file: NewFile, size: number, at: string): StoredFile => ({
  id: file.id,
  name: file.name,
  size,
  mime_type: file.mime_type,
  created_at: at,
  metadata: file.metadata,
  session_id: file.session_id,
});

export const fileRow = (tenantId: string, file: StoredFile) => ({
  id: file.id,
  tenant_id: tenantId,
  session_id: file.session_id,
  name: file.name,
  // Folded here, by the same toLowerCase as the name filter's prefix: both sides fold alike.
  name_lower: file.name.toLowerCase(),
  size: file.size,
  mime_type: file.mime_type,
  metadata: json(file.metadata),
  created_at: file.created_at,
});

export const sessionRow = (tenantId: string, session: NewSession, at: string) => ({
  id: session.id,
  tenant_id: tenantId,
  agent_id: session.agent_id,
  user_id: session.user_id,
  shard: session.shard,
  status: 'active',
  context: json(session.context),
  metadata: json(session.metadata),
  expires_at: new Date(session.expires_at).toISOString(),
  snapshot: session.snapshot,
  created_at: at,
  updated_at: at,
});

/**
 * The rows of the messages a write appends, numbered on from `lastSeq`, and the records they read back as.
 * Each row keeps the fencing epoch it was written under.
 */
export function appendedMessages(write: SessionWrite, lastSeq: number, at: string) {
  return (write.messages ?? []).map((m, i) => {
    // Only the usage's fields are kept, so that the record is what a read gives back.
    const usage = m.usage ? fullUsage(m.usage) : null;
    const stop_reason = m.stop_reason ?? null;
    const tool_calls = m.tool_calls ?? null;
    const author = m.author ?? null;
    return {
      row: {
        id: m.id,
        session_id: write.session_id,
        seq: lastSeq + i + 1,
        role: m.role,
        content: JSON.stringify(m.content),
        metadata: m.metadata === null ? null : JSON.stringify(m.metadata),
        turn_id: m.turn_id,
        created_at: at,
        epoch: write.fence.epoch,
        stop_reason,
        usage: usage === null ? null : JSON.stringify(usage),
        tool_calls: tool_calls === null ? null : JSON.stringify(tool_calls),
        author: author === null ? null : JSON.stringify(author),
      },
      record: {
        ...m,
        session_id: write.session_id,
        created_at: at,
        stop_reason,
        usage,
        tool_calls,
        author,
      } satisfies MessageRecord,
    };
  });
}

export const idempotencyRow = (
  sessionId: string,
  k: NonNullable<SessionWrite['idempotency']>,
  at: string,
) => ({
  session_id: sessionId,
  key: k.key,
  fingerprint: k.fingerprint,
  turn_id: k.turn_id,
  user_message_id: k.user_message_id,
  created_at: at,
  expires_at: k.expires_at,
});

export const feedbackRow = (
  sessionId: string,
  feedback: Omit<Feedback, 'session_id' | 'submitted_at'>,
  at: string,
) => ({
  id: feedback.id,
  session_id: sessionId,
  score: feedback.score,
  comment: feedback.comment ?? null,
  metadata: json(feedback.metadata),
  submitted_at: at,
});

/** The row of a tool call a step commits before running it. */
export const toolCallRow = (sessionId: string, call: NewToolCall, epoch: number, at: string) => ({
  session_id: sessionId,
  turn_id: call.turn_id,
  id: call.id,
  step: call.step,
  position: call.position,
  name: call.name,
  input: JSON.stringify(call.input ?? null),
  step_text: call.step_text,
  step_usage: call.step_usage === null ? null : JSON.stringify(fullUsage(call.step_usage)),
  created_at: at,
  epoch,
  // A call that must be approved waits, and is never run before its decision.
  status: call.approval ? 'awaiting_approval' : null,
  approver: call.approval?.approver ?? null,
  expires_at: call.approval ? new Date(call.approval.expires_at).toISOString() : null,
});

/** A budget's row; `userId` '' is the tenant's default. */
export const budgetRow = (tenantId: string, userId: string, fields: BudgetFields, at: string) => ({
  tenant_id: tenantId,
  user_id: userId,
  period: fields.period,
  max_cost_micro_usd: fields.max_cost_micro_usd,
  max_tokens: fields.max_tokens,
  created_at: at,
  updated_at: at,
});
