// Where the session machine (session.ts) puts what it is asked: the order operations wait in (an expiry, the
// resume of a paused turn and a cancel go ahead of the others) and the Idempotency-Keys they carry. Pure.
import { resumeOpId } from './paused-turn.ts';
import type { OperationRef, SessionContext, SessionEvent } from './session-types.ts';

type Guard = (args: { context: SessionContext; event: SessionEvent }) => boolean;

/** The keys in flight once `op` waits: its key, with the fingerprint of its request. */
export function track(context: SessionContext, op: OperationRef): SessionContext['inflight'] {
  if (op.key === undefined || op.fingerprint === undefined) return context.inflight;
  return { ...context.inflight, [op.key]: { opId: op.id, fingerprint: op.fingerprint } };
}

/** The queue with one expire operation first (unless one is running or waiting already) and `op` last. */
export function queueWithExpiry(context: SessionContext, op: OperationRef): OperationRef[] {
  const expireId = `expire_${context.sessionId}`;
  const pending = context.current?.id === expireId || context.queue.some((o) => o.id === expireId);
  const expire: OperationRef[] = pending ? [] : [{ id: expireId, kind: 'expire' }];
  return [...expire, ...context.queue, op];
}

/** The queue with the resume operation first and `op` last (unless `op` is that resume). */
export function queueWithResume(context: SessionContext, op: OperationRef): OperationRef[] {
  const resume: OperationRef = { id: resumeOpId(context.sessionId), kind: 'resume' };
  return [resume, ...context.queue, ...(op.id === resume.id ? [] : [op])];
}

/** A cancel goes ahead of everything waiting (and the host aborts the turn it names if that one runs). */
export const isCancel: Guard = ({ event }) => event.type === 'SUBMIT' && event.op.kind === 'cancel';
