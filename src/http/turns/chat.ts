// The AI SDK's chat protocol on both families (docs/guides/ai-sdk.md): `POST <path>` takes the body `useChat`
// sends through DefaultChatTransport, sends its newest user message with the send routes' turn (sessions.send
// with an observer: same semantics, same errors, JSON before the stream starts), and answers with the UI
// message stream, framed by the SDK's own helpers. The Idempotency-Key is the header, else the user message's
// id, so that the SDK's retries replay the stored reply instead of running a second turn. A turn that waits for
// decisions speaks the SDK's approval protocol, and a request answering it is a decision (chat-approvals.ts).
import type { FinishReason } from 'ai';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authErrors, chatRequest, idempotencyHeaders, turnErrors, uiMessageStreamResponse } from '#schemas';
import type { TurnObserver } from '../../actors/operation-context.ts';
import type { SendResult } from '../../actors/session-service.ts';
import type { StopReason } from '../../store/store.ts';
import { countOpenStream } from '../server/metrics.ts';
import { chatDecisions, textAfterPause } from './chat-approvals.ts';
import { TurnChunks } from './chat-chunks.ts';
import { chatSend } from './chat-send.ts';
import { asAppError } from './events.ts';
import type { LiveTurns, TurnLog } from './log.ts';
import { storedTurn } from './replay.ts';
import type { SendFamily, SendOptions } from './send.ts';

type RouteScope = Parameters<FastifyPluginAsyncZod>[0];

/** The AI SDK, loaded on the first chat request: a process that serves none does not carry it (~28 MB). */
let sdk: Promise<typeof import('ai')> | undefined;
const loadSdk = () => {
  sdk ??= import('ai');
  return sdk;
};

/** Registers `POST <path>`, the chat route of `family`. */
export function registerChatRoute(
  app: RouteScope,
  path: string,
  family: SendFamily,
  { store, sessions, pingMs, turns }: SendOptions,
): void {
  app.post(
    path,
    {
      config: { session: family.param },
      schema: {
        tags: family.tags,
        summary:
          "Send the newest user message of an AI SDK chat (or its approval answers) and stream the agent's reply (useChat)",
        params: z.object({ [family.param]: z.string() }),
        headers: idempotencyHeaders,
        body: chatRequest,
        response: { 200: uiMessageStreamResponse, ...turnErrors, ...authErrors },
      },
    },
    async (request, reply) => {
      const target = family.target(request, request.params[family.param]);
      const answered = chatDecisions(request.body.messages);
      const { createUIMessageStreamResponse } = await loadSdk();
      const common = {
        respond: createUIMessageStreamResponse,
        sessionId: target.sessionId,
        showTools: family.view(request).tools,
        allApprovals: family.by === 'operator',
        load: (turnId: string) =>
          storedTurn(store, { sessionId: target.sessionId, turnId, sessionStatus: 'active', open: true }),
        log: request.log,
        pingMs,
        turns,
      };
      if (answered) {
        return streamChat(reply, {
          ...common,
          decided: answered.decisions,
          run: (observer) =>
            sessions.decide(target.tenantId, target.sessionId, answered.turnId, answered.decisions, {
              authorize: target.authorize,
              by: family.by,
              observer,
            }),
        });
      }
      const { id, content, fileAt } = chatSend(request.body.messages);
      return streamChat(reply, {
        ...common,
        run: (observer) =>
          sessions.send(
            target.tenantId,
            target.sessionId,
            { content, role: 'user' },
            {
              authorize: target.authorize,
              key: request.headers['idempotency-key'] ?? id,
              operation: 'stream',
              ownFilesOnly: family.endUser,
              observer,
              fileAt,
            },
          ),
      });
    },
  );
}

interface ChatStreamOptions {
  /** The SDK's framing of a chunk stream as its SSE response. */
  respond: typeof import('ai')['createUIMessageStreamResponse'];
  run(observer: TurnObserver): Promise<SendResult>;
  sessionId: string;
  /** Whether tool calls are shown (the API-key family; the public one where the agent exposes tools). */
  showTools: boolean;
  /** Whether every waiting call is shown (the API-key family) or only those the end user may decide. */
  allApprovals: boolean;
  /** The decisions this request takes, when it answers approvals: the stream is the turn going on. */
  decided?: readonly { call_id: string; approved: boolean }[];
  /** Reads a stored turn of the session, for a turn that goes on (its log then follows it). */
  load(turnId: string): Promise<TurnLog | null>;
  log: FastifyBaseLogger;
  pingMs: number;
  /** Where the running turn is listed, so that its events can be resumed (resume.ts) as SSE. */
  turns: LiveTurns;
}

/**
 * Starts the turn and answers once it has started (or, replayed, ended). Errors before that reject (the route
 * answers them as JSON); errors after it end the stream with an `error` chunk. The turn does not depend on
 * the client: if it goes away, the reply is still completed and stored.
 */
function streamChat(reply: FastifyReply, options: ChatStreamOptions): Promise<FastifyReply> {
  const chunks = new TurnChunks(options.showTools);
  const live = options.turns.open(options.sessionId, options.load);
  const { decided } = options;
  const metadata = (turnId: string) => ({ turn_id: turnId, session_id: options.sessionId });
  let started = false;

  return new Promise<FastifyReply>((resolve, reject) => {
    const begin = (replayed: boolean) => {
      started = true;
      const response = options.respond({
        stream: chunks.stream,
        keepAliveMs: options.pingMs,
        ...(replayed ? { headers: { 'idempotent-replayed': 'true' } } : {}),
      });
      // Hop-by-hop, and the server's to say: while draining it answers `connection: close` (server/connection-drain.ts).
      response.headers.delete('connection');
      countOpenStream(reply, 'chat');
      resolve(reply.send(response));
    };
    const observer: TurnObserver = {
      started: (turnId, message, replyId) => {
        live.started(turnId, message, replyId);
        chunks.start(replyId, metadata(turnId));
        begin(false);
      },
      delta: (text) => {
        live.delta(text);
        chunks.text(text);
      },
      toolStarted: (call) => {
        live.toolStarted(call);
        chunks.toolStarted(call);
      },
      toolCompleted: (call) => {
        live.toolCompleted(call);
        chunks.toolCompleted(call);
      },
      approvalRequested: (approval) => {
        live.approvalRequested(approval);
        if (options.allApprovals || approval.approver === 'user') chunks.approvalRequested(approval);
      },
      paused: (step, approvals) => live.paused(step, approvals),
      // A decision's turn goes on: the client holds what came before, in the message it answered.
      ...(decided && {
        continued: async (turnId: string, replyId: string) => {
          await live.continued(turnId, replyId);
          chunks.start(replyId, metadata(turnId), false);
          chunks.decided(decided);
          begin(false);
        },
      }),
    };

    options.run(observer).then(
      async (result) => {
        const message = result.agent_message;
        if (!started) {
          // A decision answered again: the client holds the turn up to its last pause, the rest is new to it.
          let after: string | null = null;
          if (decided && message) {
            try {
              after = textAfterPause(await options.load(result.turn_id));
            } catch (err) {
              return reject(err);
            }
          }
          tellStored(chunks, result, options, after);
          begin(result.replayed);
        } else options.turns.finish(live, message ? { ok: result } : { paused: true });
        // A turn that waits for decisions ends this stream without a reply, its calls told as approval requests;
        // so does a send while people handle the session (stored, no model answers).
        chunks.finish(finishReasons[message?.stop_reason ?? 'none'], {
          stop_reason: message?.stop_reason ?? null,
          conversation_status: result.session_status,
          usage: result.usage,
          // Said every time: metadata merges, so a message that went on after a pause must not keep saying so.
          turn_status:
            result.handled_by === 'humans'
              ? 'handled_by_humans'
              : message
                ? message.stop_reason === 'cancelled'
                  ? 'cancelled'
                  : 'completed'
                : 'awaiting_approval',
        });
      },
      (err: unknown) => {
        if (!started) return reject(err);
        const error = asAppError(err);
        if (error.statusCode >= 500) options.log.error({ err: error }, 'chat turn failed');
        options.turns.finish(live, { error });
        chunks.fail(error);
      },
    );
  });
}

/**
 * Tells a turn of which nothing ran now (a replay, a join of the same request still running, a turn still
 * waiting): the whole reply, or for a decision what it decided and the reply `after` the pause the client holds.
 */
function tellStored(
  chunks: TurnChunks,
  result: SendResult,
  { decided, allApprovals, sessionId }: Pick<ChatStreamOptions, 'decided' | 'allApprovals' | 'sessionId'>,
  after: string | null,
): void {
  const message = result.agent_message;
  chunks.start(message?.id ?? null, { turn_id: result.turn_id, session_id: sessionId }, !decided);
  if (decided) chunks.decided(decided);
  for (const { id, name, input, status, output } of message?.tool_calls ?? []) {
    if (!decided) chunks.toolStarted({ call_id: id, name, input });
    if (!decided || decided.some((d) => d.call_id === id && d.approved))
      chunks.toolCompleted({ call_id: id, name, status, output });
  }
  // Still waiting: the answered calls are left in a step of their own, so that the SDK does not send the same
  // answers again at once (sendAutomaticallyWhen reads the last step).
  if (decided && !message) chunks.nextStep();
  // A send answered again while its turn waits: the calls to decide, as its first answer told them.
  if (!decided) {
    for (const approval of result.approvals ?? [])
      if (allApprovals || approval.approver === 'user') chunks.approvalRequested(approval);
  }
  chunks.text(after ?? message?.content.map((b) => (b.type === 'text' ? b.text : '')).join('') ?? '');
}

/** The AI SDK's finish reason for a reply's stop_reason. */
const finishReasons: Record<StopReason | 'none', FinishReason> = {
  end: 'stop',
  max_tokens: 'length',
  content_filter: 'content-filter',
  max_steps: 'other',
  error: 'error',
  cancelled: 'other',
  budget: 'other',
  none: 'other',
};
