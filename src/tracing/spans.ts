// The spans of tracer.ts made with the OpenTelemetry API; loaded only with tracing on (by tracing/sdk.ts).
// Attribute names and values are listed in docs/reference/traces.md. Errors are recorded by their code,
// never their message; contents only when capture is on, files never.
import {
  type Attributes,
  type Context,
  context,
  createContextKey,
  propagation,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import {
  capturedJson,
  errorType,
  finishReason,
  inputMessages,
  outputMessages,
  systemInstructions,
  toolErrorType,
} from './genai.ts';
import type { TracedSession, TraceStats, Tracing } from './tracer.ts';

/** Set in the context of a webhook attempt: the HTTP client span below it records no path (tracing/sdk.ts). */
export const WITHOUT_URL_PATH = createContextKey('parley.without_url_path');

/** Ends `span` once `work` settles: `ok` adds what the result says, a failure is recorded by its type. */
function settle<R>(span: Span, work: Promise<R>, ok?: (result: R) => void): Promise<R> {
  return work.then(
    (result) => {
      ok?.(result);
      span.end();
      return result;
    },
    (err: unknown) => {
      failed(span, errorType(err));
      span.end();
      throw err;
    },
  );
}

function failed(span: Span, type: string): void {
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

function turnAttributes(session: TracedSession, turnId: string): Attributes {
  return {
    'parley.tenant': session.tenant_id,
    'parley.agent': session.agent_id,
    'parley.session': session.id,
    'parley.turn': turnId,
    ...(session.user?.reference ? { 'parley.user.reference': session.user.reference } : {}),
  };
}

const toTime = (at: Date | string | number) => (at instanceof Date ? at : new Date(at));

/** A hostname and port from a base URL, for `server.address`; nothing when it is not one. */
function server(baseUrl: string | undefined): Attributes {
  if (baseUrl === undefined) return {};
  try {
    const url = new URL(baseUrl);
    const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
    return { 'server.address': url.hostname, 'server.port': port };
  } catch {
    return {};
  }
}

export function otelTracing(
  tracer: Tracer,
  options: { captureContent: boolean; stats: () => TraceStats },
): Tracing {
  const { captureContent } = options;
  /** Runs `run` with `span` current, and ends the span when it settles. */
  const within = <R>(span: Span, run: () => Promise<R>, ok?: (result: R) => void) =>
    settle(span, context.with(trace.setSpan(context.active(), span), run), ok);

  return {
    turn(session, op, run) {
      const span = tracer.startSpan('parley.turn', {
        kind: SpanKind.INTERNAL,
        attributes: { ...turnAttributes(session, op.id), 'parley.idempotent_replay': false },
      });
      return within(span, run, (result) => {
        const { turn_id, replayed } = (result ?? {}) as { turn_id?: unknown; replayed?: unknown };
        // A retry under an Idempotency-Key goes on with the turn its first attempt started.
        if (typeof turn_id === 'string') span.setAttribute('parley.turn', turn_id);
        if (replayed === true) span.setAttribute('parley.idempotent_replay', true);
      });
    },

    replay(session, turnId) {
      tracer
        .startSpan('parley.turn', {
          kind: SpanKind.INTERNAL,
          attributes: { ...turnAttributes(session, turnId), 'parley.idempotent_replay': true },
        })
        .end();
    },

    modelCall(call, run) {
      const { agent } = call;
      const span = tracer.startSpan(`chat ${agent.model}`, {
        kind: SpanKind.CLIENT,
        attributes: {
          'gen_ai.operation.name': 'chat',
          'gen_ai.provider.name': call.provider,
          'gen_ai.request.model': agent.model,
          'gen_ai.conversation.id': call.conversationId,
          'gen_ai.request.stream': true,
          'gen_ai.request.max_tokens': agent.max_tokens,
          ...(agent.temperature !== undefined ? { 'gen_ai.request.temperature': agent.temperature } : {}),
          ...(agent.top_p !== undefined ? { 'gen_ai.request.top_p': agent.top_p } : {}),
          ...(agent.seed !== undefined ? { 'gen_ai.request.seed': agent.seed } : {}),
          ...(agent.stop !== undefined ? { 'gen_ai.request.stop_sequences': [...agent.stop] } : {}),
          ...server(agent.base_url),
        },
      });
      if (captureContent) {
        span.setAttribute('gen_ai.system_instructions', systemInstructions(call.system));
        span.setAttribute('gen_ai.input.messages', inputMessages(call.messages()));
      }
      return within(span, run, (reply) => {
        span.setAttributes({
          'gen_ai.usage.input_tokens': reply.usage.input_tokens,
          'gen_ai.usage.output_tokens': reply.usage.output_tokens,
          'gen_ai.response.finish_reasons': [finishReason(reply)],
        });
        if (captureContent) span.setAttribute('gen_ai.output.messages', outputMessages(reply));
      });
    },

    toolCall(tool, call, run) {
      const span = tracer.startSpan(`execute_tool ${tool.name}`, {
        kind: SpanKind.INTERNAL,
        attributes: {
          'gen_ai.operation.name': 'execute_tool',
          'gen_ai.tool.name': tool.name,
          'gen_ai.tool.call.id': call.id,
          // Run by Parley itself, on the agent's side, calling out to an HTTP or MCP server.
          'gen_ai.tool.type': 'extension',
          'gen_ai.tool.description': tool.description,
          ...(captureContent ? { 'gen_ai.tool.call.arguments': capturedJson(call.input) } : {}),
        },
      });
      return within(span, run, (outcome) => {
        if (outcome.status === 'error') failed(span, toolErrorType(outcome));
        else if (captureContent) span.setAttribute('gen_ai.tool.call.result', capturedJson(outcome.output));
      });
    },

    webhookAttempt(delivery, run) {
      const span = tracer.startSpan('parley.webhook.delivery', {
        kind: SpanKind.INTERNAL,
        attributes: {
          'parley.webhook': delivery.webhook_id,
          'parley.webhook.delivery': delivery.id,
          'parley.webhook.event': delivery.event_id,
          'parley.webhook.event_type': delivery.type,
          'parley.webhook.attempt': delivery.attempts + 1,
        },
      });
      const ctx = trace.setSpan(context.active(), span).setValue(WITHOUT_URL_PATH, true);
      return settle(span, context.with(ctx, run), (result) => {
        if (result.status_code === null) failed(span, result.error);
        else {
          span.setAttribute('http.response.status_code', result.status_code);
          if (result.status_code >= 300) failed(span, String(result.status_code));
        }
      });
    },

    approval(wait) {
      const span = tracer.startSpan('parley.approval', {
        kind: SpanKind.INTERNAL,
        startTime: toTime(wait.requestedAt),
        attributes: {
          'parley.session': wait.sessionId,
          'parley.turn': wait.turnId,
          'gen_ai.tool.name': wait.tool,
          'gen_ai.tool.call.id': wait.callId,
          'parley.approval.approver': wait.approver,
          'parley.approval.decision': wait.decision,
        },
      });
      span.end(toTime(wait.decidedAt));
    },

    capture: () => context.active(),
    within: (captured, run) => context.with(captured as Context, run),
    propagatedHeaders: propagation.fields(),
    stats: options.stats,
  };
}
