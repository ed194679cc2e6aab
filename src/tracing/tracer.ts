// Parley's own spans as the rest of the code asks for them (docs/reference/traces.md): a turn, a model call, a
// tool call, a webhook attempt, an approval waited on. With tracing off (no endpoint) each helper is one
// null check and the work itself: nothing of OpenTelemetry is loaded. With it on, tracing/sdk.ts installs
// the implementation (tracing/spans.ts). The shapes below are what the spans read, structurally, so that
// this file imports nothing of the layers that call it.

/** The session a turn runs in. */
export interface TracedSession {
  id: string;
  tenant_id: string;
  agent_id: string;
  user: { reference: string | null } | null;
}

/** An operation handed to a session's actor; only sends are turns. */
export interface TracedOperation {
  id: string;
  kind: string;
}

/** A part of a model message; the bytes a file or image may carry are never read. */
export type TracedPart =
  | { type: 'text'; text: string }
  | { type: 'image'; mime_type: string }
  | { type: 'file'; mime_type: string };

export interface TracedToolCall {
  id: string;
  name: string;
  input: unknown;
}

export type TracedModelMessage =
  | { role: 'user' | 'assistant'; content: readonly TracedPart[]; tool_calls?: readonly TracedToolCall[] }
  | {
      role: 'tool';
      results: readonly { call_id: string; name: string; status: 'ok' | 'error'; output: unknown }[];
    };

export interface TracedModelReply {
  text: string;
  stop_reason: string;
  usage: { input_tokens: number; output_tokens: number };
  tool_calls: readonly TracedToolCall[];
}

/** One model call: the agent's request settings, the conversation, and the prompt (read only when captured). */
export interface ModelCallTrace {
  provider: string;
  conversationId: string;
  agent: {
    model: string;
    max_tokens: number;
    temperature?: number | undefined;
    top_p?: number | undefined;
    seed?: number | undefined;
    stop?: readonly string[] | undefined;
    base_url?: string | undefined;
  };
  system: string;
  messages: () => readonly TracedModelMessage[];
}

export interface TracedToolOutcome {
  status: 'ok' | 'error';
  output: unknown;
}

export interface TracedWebhookDelivery {
  id: string;
  webhook_id: string;
  event_id: string;
  type: string;
  /** Attempts made before this one. */
  attempts: number;
}

export type TracedAttemptResult = { status_code: number } | { status_code: null; error: string };

/**
 * An approval a turn waited on, recorded once decided: a span from the request to the decision, in the trace
 * of whatever decided it (the deciding request, the sweep that expired it). The wait itself holds no span
 * open: a paused turn holds nothing while it waits, and may be decided on another process days later.
 */
export interface ApprovalWait {
  sessionId: string;
  turnId: string;
  callId: string;
  tool: string;
  approver: 'user' | 'operator';
  requestedAt: Date | string | number;
  decidedAt: Date | string | number;
  decision: 'approved' | 'denied' | 'expired' | 'cancelled';
}

export interface TraceStats {
  /** Spans sent to the collector. */
  exported: number;
  /** Spans lost: the queue was full, or the collector did not take them. */
  dropped: { queue_full: number; export_failed: number };
  /** Spans waiting in the queue now. */
  queued: number;
}

/** What tracing/spans.ts implements. */
export interface Tracing {
  turn<R>(session: TracedSession, op: TracedOperation, run: () => Promise<R>): Promise<R>;
  replay(session: TracedSession, turnId: string): void;
  modelCall<R extends TracedModelReply>(call: ModelCallTrace, run: () => Promise<R>): Promise<R>;
  toolCall<R extends TracedToolOutcome>(
    tool: { name: string; description: string },
    call: TracedToolCall,
    run: () => Promise<R>,
  ): Promise<R>;
  webhookAttempt<R extends TracedAttemptResult>(
    delivery: TracedWebhookDelivery,
    run: () => Promise<R>,
  ): Promise<R>;
  approval(wait: ApprovalWait): void;
  capture(): unknown;
  within<R>(captured: unknown, run: () => R): R;
  /** The headers the propagator writes (traceparent, tracestate, baggage). */
  readonly propagatedHeaders: readonly string[];
  stats(): TraceStats;
}

let active: Tracing | null = null;

/** Set by tracing/sdk.ts once the SDK runs (null again once it is shut down). */
export function installTracing(tracing: Tracing | null): void {
  active = tracing;
}

export const tracingActive = (): boolean => active !== null;

/**
 * A send handed to its session's actor, traced as `parley.turn` until its caller is answered (queue wait
 * included); other operations run as they are. Everything the operation does runs in the span's context
 * (captureTraceContext, inTraceContext), however long it waited in the queue.
 */
export function traceOperation<R>(session: TracedSession, op: TracedOperation, run: () => Promise<R>) {
  return active === null || op.kind !== 'send' ? run() : active.turn(session, op, run);
}

/** A send answered from its Idempotency-Key's stored answer: a `parley.turn` span marked as a replay. */
export function traceReplay(session: TracedSession, turnId: string): void {
  active?.replay(session, turnId);
}

/** One model call as a GenAI `chat` span. */
export function traceModelCall<R extends TracedModelReply>(call: ModelCallTrace, run: () => Promise<R>) {
  return active === null ? run() : active.modelCall(call, run);
}

/** One tool call as a GenAI `execute_tool` span. */
export function traceToolCall<R extends TracedToolOutcome>(
  tool: { name: string; description: string },
  call: TracedToolCall,
  run: () => Promise<R>,
) {
  return active === null ? run() : active.toolCall(tool, call, run);
}

/** One webhook delivery attempt as a `parley.webhook.delivery` span (its URL is not recorded). */
export function traceWebhookAttempt<R extends TracedAttemptResult>(
  delivery: TracedWebhookDelivery,
  run: () => Promise<R>,
) {
  return active === null ? run() : active.webhookAttempt(delivery, run);
}

/** An approval waited on, once decided: a `parley.approval` span (see ApprovalWait). */
export function recordApprovalWait(wait: ApprovalWait): void {
  active?.approval(wait);
}

/** The current trace context, to go on with later from elsewhere (an operation queued on an actor). */
export function captureTraceContext(): unknown {
  return active?.capture();
}

/** Runs `run` in a context captureTraceContext gave (as it is, when there was none). */
export function inTraceContext<R>(captured: unknown, run: () => R): R {
  return captured === undefined || active === null ? run() : active.within(captured, run);
}

/** Headers a relay must not copy: the tracing writes its own (empty with tracing off). */
export function propagatedHeaders(): readonly string[] {
  return active?.propagatedHeaders ?? [];
}

/** The export's counts, null with tracing off. */
export function traceStats(): TraceStats | null {
  return active?.stats() ?? null;
}
