// Handing a session to people and back (docs/guides/humans.md): the handoff operation commits who handles the
// session (the row's handled_by and handoff, the machine's context) with its webhook event, so that it survives
// restarts and ownership moves like everything the machine holds. Asking for what is already so changes
// nothing and answers as a change would (a repeated handoff keeps the first one's time and reason).
import type { Handoff } from '../machines/session.ts';
import type { OperationContext, OperationOf } from './operation-context.ts';
import { handoffChange } from './session-changes.ts';

/** The handoff to make, or null to hand the session back to the agent. */
export interface HandoffPayload {
  handoff: Handoff | null;
}

/** Whether this operation changed who handles the session. */
export interface HandoffResult {
  changed: boolean;
}

export async function runHandoff(
  context: OperationContext,
  op: OperationOf<HandoffPayload>,
): Promise<HandoffResult> {
  const current = context.entry.actor.getSnapshot().context.handoff;
  const wanted = op.payload.handoff;
  if (wanted ? current !== undefined : current === undefined) return { changed: false };
  await context.commit({ at: wanted?.requested_at ?? new Date().toISOString(), ...handoffChange(wanted) });
  return { changed: true };
}
