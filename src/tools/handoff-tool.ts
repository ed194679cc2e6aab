// The built-in tool of an agent with `handoff.enabled` (docs/guides/humans.md): its model calls it to hand the
// conversation to people. The call itself only answers; the turn's reply, committed once the model has said
// its last words, hands the session off in the same write (turn-end.ts), so that the reply and the handoff
// are stored together or not at all.
import { HANDOFF_TOOL } from '../agents/catalogue.ts';
import type { ToolCallSummary } from '../store/store.ts';
import type { Tool } from './tool.ts';

/** The most characters of the model's reason kept with the handoff. */
const MAX_REASON = 500;

export const handoffTool: Tool = {
  spec: {
    name: HANDOFF_TOOL,
    description:
      'Hand the conversation to a human colleague, when the user asks for one or you cannot help further. ' +
      'Tell the user in your reply that a person will take over.',
    input_schema: {
      type: 'object',
      properties: { reason: { type: 'string', description: 'Why a person should take over, in a sentence' } },
    },
  },
  async call({ input }) {
    return { status: 'ok', output: { handed_off: true, reason: reasonOf(input) } };
  },
};

function reasonOf(input: unknown): string | null {
  const reason = input && typeof input === 'object' && 'reason' in input ? input.reason : null;
  return typeof reason === 'string' && reason !== '' ? reason.slice(0, MAX_REASON) : null;
}

/** The reason of the turn's successful handoff_to_human call, if it made one (undefined when none). */
export function handoffAsked(
  calls: readonly ToolCallSummary[] | null,
): { reason: string | null } | undefined {
  const call = calls?.find((c) => c.name === HANDOFF_TOOL && c.status === 'ok');
  return call ? { reason: reasonOf(call.input) } : undefined;
}
