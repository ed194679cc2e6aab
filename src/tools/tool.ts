// What a tool is to the step loop: a spec the model is shown and one call. HTTP tools (http-tool.ts) and the
// tools of MCP servers (mcp-tools.ts) both are Tools; an agent's are gathered in agent-tools.ts.
import type { ModelToolSpec } from '../agents/provider.ts';

/** Tool results are bounded: a larger one is given to the model as an error (docs/guides/tools.md#limits). */
export const MAX_TOOL_RESULT_BYTES = 64 * 1024;

export interface ToolCallRequest {
  /** Parley's id of the call (`call_…`); with the turn id, the call's Idempotency-Key. */
  callId: string;
  turnId: string;
  sessionId: string;
  agentId: string;
  /** The session's end-user, or null. */
  user: { id: string; reference: string | null } | null;
  input: unknown;
  /** Aborted on the call's turn giving up (shutdown, lost ownership); the tool's own timeout is the tool's. */
  signal: AbortSignal;
}

/** What a call gave: `ok` with the tool's JSON result, or `error` with what went wrong, for the model to read. */
export interface ToolOutcome {
  status: 'ok' | 'error';
  output: unknown;
}

export interface Tool {
  readonly spec: ModelToolSpec;
  /**
   * Calls the tool. A failing tool (refused, timed out, an error status, a result too large or not JSON)
   * resolves with an `error` outcome: it is the model's to handle, not the turn's. Rejects only when
   * `request.signal` aborted.
   */
  call(request: ToolCallRequest): Promise<ToolOutcome>;
}

/**
 * The Idempotency-Key a tool sees for a call: the same on every attempt of the call
 * (docs/guides/tools.md#exactly-once).
 */
export const idempotencyKeyOf = (request: Pick<ToolCallRequest, 'turnId' | 'callId'>) =>
  `${request.turnId}:${request.callId}`;
