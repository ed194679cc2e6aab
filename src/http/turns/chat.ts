// The AI SDK's chat protocol on both families (docs/guides/ai-sdk.md): `POST <path>` takes the body `useChat`
// sends through DefaultChatTransport, sends its newest user message with the send routes' turn (sessions.send
// with an observer: same semantics, same errors, JSON before the stream starts), and answers with the UI
// message stream, framed by the SDK's own helpers. The Idempotency-Key is the header, else the user message's
// id, so that the SDK's retries replay the stored reply instead of running a second turn.
import type { FinishReason, UIMessageChunk } from 'ai';
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { authErrors, chatRequest, idempotencyHeaders, turnErrors, uiMessageStreamResponse } from '#schemas';
import type { TurnObserver } from '../../actors/operation-context.ts';
import type { SendResult } from '../../actors/session-service.ts';
import type { AppError } from '../../errors.ts';
import type { StopReason } from '../../store/store.ts';
import { countOpenStream } from '../server/metrics.ts';
import { chatSend } from './chat-send.ts';
import { asAppError, streamedError } from './events.ts';
import type { LiveTurns } from './log.ts';
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
  { sessions, pingMs, turns }: SendOptions,
): void {
  app.post(
    path,
    {
      config: { session: family.param },
      schema: {
        tags: family.tags,
        summary: "Send the newest user message of an AI SDK chat and stream the agent's reply (useChat)",
        params: z.object({ [family.param]: z.string() }),
        headers: idempotencyHeaders,
        body: chatRequest,
        response: { 200: uiMessageStreamResponse, ...turnErrors, ...authErrors },
      },
    },
    async (request, reply) => {
      const target = family.target(request, request.params[family.param]);
      const { id, content, fileAt } = chatSend(request.body.messages);
      const { createUIMessageStreamResponse } = await loadSdk();
      return streamChat(reply, {
        respond: createUIMessageStreamResponse,
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
        sessionId: target.sessionId,
        showTools: family.view(request).tools,
        log: request.log,
        pingMs,
        turns,
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
  const live = options.turns.open(options.sessionId);
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
        chunks.start(replyId, { turn_id: turnId, session_id: options.sessionId });
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
    };

    options.run(observer).then(
      (result) => {
        const message = result.agent_message;
        if (!started) {
          // Nothing ran now (a replay, or a join of the same request still running): tell the whole reply.
          chunks.start(message?.id ?? null, { turn_id: result.turn_id, session_id: options.sessionId });
          for (const { id, name, input, status, output } of message?.tool_calls ?? []) {
            chunks.toolStarted({ call_id: id, name, input });
            chunks.toolCompleted({ call_id: id, name, status, output });
          }
          chunks.text(message?.content.map((b) => (b.type === 'text' ? b.text : '')).join('') ?? '');
          begin(result.replayed);
        } else options.turns.finish(live, message ? { ok: result } : { paused: true });
        // A turn that waits for decisions ends this stream without a reply; its state says so (the AI SDK's
        // own approval parts are not spoken here yet).
        chunks.finish(finishReasons[message?.stop_reason ?? 'none'], {
          stop_reason: message?.stop_reason ?? null,
          conversation_status: result.session_status,
          usage: result.usage,
          ...(message ? {} : { turn_status: 'awaiting_approval' }),
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

/** Chunks queued before the reader must take some; beyond, text is held and merged (as SseStream does). */
const HIGH_WATER_CHUNKS = 64;

/**
 * One turn as UI message chunks, a ReadableStream the SDK's helpers frame as SSE. A slow reader gets the text
 * merged into fewer, larger deltas: memory stays within the reply's size. Steps follow Parley's step loop as
 * far as the observer shows it: text after a step's tool results opens the next step, in a new text part.
 */
export class TurnChunks {
  readonly stream: ReadableStream<UIMessageChunk>;
  readonly #showTools: boolean;
  #controller: ReadableStreamDefaultController<UIMessageChunk> | undefined;
  #closed = false;
  /** The open text part, if any, and how many were opened. */
  #textId: string | null = null;
  #texts = 0;
  /** Whether tool results were told in this step: what comes next belongs to the next one. */
  #stepDone = false;
  /** Text held back while the reader is behind. */
  #held = '';
  /** Whether any text went out (a failure then leaves the client text that was not stored). */
  #textSent = false;

  constructor(showTools: boolean) {
    this.#showTools = showTools;
    this.stream = new ReadableStream<UIMessageChunk>(
      {
        start: (controller) => {
          this.#controller = controller;
        },
        pull: () => this.#flush(),
        cancel: () => {
          this.#closed = true;
        },
      },
      new CountQueuingStrategy({ highWaterMark: HIGH_WATER_CHUNKS }),
    );
  }

  start(messageId: string | null, metadata: Record<string, unknown>): void {
    this.#push({ type: 'start', ...(messageId ? { messageId } : {}), messageMetadata: metadata });
    this.#push({ type: 'start-step' });
  }

  text(text: string): void {
    if (text === '') return;
    this.#nextStepIfDone();
    if (this.#textId === null) {
      this.#texts += 1;
      this.#textId = `text-${this.#texts}`;
      this.#push({ type: 'text-start', id: this.#textId });
    }
    this.#textSent = true;
    this.#held += text;
    if ((this.#controller?.desiredSize ?? 0) > 0) this.#flush();
  }

  toolStarted(call: Parameters<NonNullable<TurnObserver['toolStarted']>>[0]): void {
    if (!this.#showTools) return;
    this.#nextStepIfDone();
    this.#endText();
    this.#push({
      type: 'tool-input-available',
      toolCallId: call.call_id,
      toolName: call.name,
      input: call.input,
      // The client knows none of Parley's tools: they are the SDK's dynamic tools (MCP's are too).
      dynamic: true,
    });
  }

  toolCompleted(call: Parameters<NonNullable<TurnObserver['toolCompleted']>>[0]): void {
    if (!this.#showTools) return;
    this.#stepDone = true;
    this.#push(
      call.status === 'ok'
        ? { type: 'tool-output-available', toolCallId: call.call_id, output: call.output, dynamic: true }
        : {
            type: 'tool-output-error',
            toolCallId: call.call_id,
            errorText: typeof call.output === 'string' ? call.output : JSON.stringify(call.output),
            dynamic: true,
          },
    );
  }

  finish(finishReason: FinishReason, metadata: Record<string, unknown>): void {
    this.#endText();
    this.#push({ type: 'finish-step' });
    this.#push({ type: 'finish', finishReason, messageMetadata: metadata });
    this.#close();
  }

  /** Ends the stream with `error`: its details as the message's metadata, then the error chunk. */
  fail(error: AppError): void {
    this.#flush();
    this.#push({
      type: 'message-metadata',
      messageMetadata: {
        error: streamedError(error),
        // Text was sent that is not stored: the client must discard it.
        partial: this.#textSent,
      },
    });
    this.#push({ type: 'error', errorText: error.message });
    this.#close();
  }

  #nextStepIfDone(): void {
    if (!this.#stepDone) return;
    this.#stepDone = false;
    this.#endText();
    this.#push({ type: 'finish-step' });
    this.#push({ type: 'start-step' });
  }

  #endText(): void {
    this.#flush();
    if (this.#textId === null) return;
    this.#push({ type: 'text-end', id: this.#textId });
    this.#textId = null;
  }

  #flush(): void {
    if (this.#held === '' || this.#textId === null) return;
    const delta = this.#held;
    this.#held = '';
    this.#push({ type: 'text-delta', id: this.#textId, delta });
  }

  #push(chunk: UIMessageChunk): void {
    if (this.#closed) return;
    this.#controller?.enqueue(chunk);
  }

  #close(): void {
    this.#flush();
    if (this.#closed) return;
    this.#closed = true;
    this.#controller?.close();
  }
}
