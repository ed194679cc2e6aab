// A turn as a stream of events (DESIGN.md §6): turn.started once the user's message is stored, message.delta
// as the model writes, message.completed once the reply is stored, then turn.completed; or turn.failed.
// Event ids are `<turn_id>:<seq>`, where a delta's seq is 1 + the length of the reply text up to its end
// plus the tool events before it; a tool event counts one. So a replay (the tool events, then one delta
// with the whole text) ends on the same ids; resuming a dropped stream can be built on that. Tool events
// (`tool.started`, `tool.completed`) are sent only where the caller sees tool calls.
import type { FastifyBaseLogger, FastifyReply } from 'fastify';
import type { TurnObserver } from '../actors/operation-context.ts';
import { type MessageView, publicMessage } from '../actors/public-message.ts';
import type { SendResult } from '../actors/session-service.ts';
import { AppError } from '../errors.ts';
import type { MessageRecord } from '../store/store.ts';
import { SSE_HEADERS, SseStream } from './sse.ts';

export interface TurnStreamOptions {
  sessionId: string;
  /** Runs the send with the observer this stream provides. */
  run(observer: TurnObserver): Promise<SendResult>;
  /** The first message of a stored turn, for replays. */
  turnStart(turnId: string): Promise<MessageRecord | null>;
  log: FastifyBaseLogger;
  pingMs?: number;
  /** How the family shows the turn's messages (the public family without their metadata). */
  view: MessageView;
  /** Whether tool events are sent (the API-key family; the public one where the agent exposes tools). */
  showTools: boolean;
}

/**
 * Starts the turn and answers once its first event exists. Errors before that reject (the route answers
 * them as JSON); errors after it end the stream with turn.failed. The turn does not depend on the
 * client: if it goes away, the reply is still completed and stored.
 */
export function streamTurn(reply: FastifyReply, options: TurnStreamOptions): Promise<FastifyReply> {
  const { sessionId } = options;
  const sse = new SseStream(options.pingMs);
  let turnId = '';
  let messageId: string | null = null;
  let offset = 0;
  /** Whether any reply text went out (a failure then leaves the client text to discard). */
  let textSent = false;
  let held = '';
  let started = false;

  return new Promise<FastifyReply>((resolve, reject) => {
    const begin = (replayed: boolean) => {
      started = true;
      reply.code(200).headers(SSE_HEADERS);
      if (replayed) reply.header('idempotent-replayed', 'true');
      resolve(reply.send(sse));
    };
    const sendDelta = (text: string) => {
      textSent = true;
      offset += text.length;
      sse.send('message.delta', `${turnId}:${offset + 1}`, {
        turn_id: turnId,
        message_id: messageId,
        index: 0,
        delta: { type: 'text', text },
      });
    };
    const sendTool = (name: 'tool.started' | 'tool.completed', data: object) => {
      if (!options.showTools) return;
      flushHeld();
      offset += 1;
      sse.send(name, `${turnId}:${offset + 1}`, { turn_id: turnId, ...data });
    };
    const flushHeld = () => {
      if (held === '') return;
      const text = held;
      held = '';
      sendDelta(text);
    };
    // A slow reader gets the text merged into fewer, larger deltas: memory stays within the reply's size.
    sse.onDemand = flushHeld;

    const announce = (id: string, message: MessageRecord | null, replyId: string | null) => {
      turnId = id;
      messageId = replyId;
      sse.send('turn.started', `${turnId}:0`, {
        turn_id: turnId,
        session_id: sessionId,
        user_message: message ? options.view(publicMessage(message)) : null,
      });
    };

    const observer: TurnObserver = {
      started: (id, message, replyId) => {
        announce(id, message, replyId);
        begin(false);
      },
      delta: (text) => {
        if (text === '') return;
        if (sse.backedUp) held += text;
        else sendDelta(text);
      },
      toolStarted: (call) => sendTool('tool.started', call),
      toolCompleted: (call) => sendTool('tool.completed', call),
    };

    options.run(observer).then(
      async (result) => {
        if (!started) {
          // Nothing ran now (a replay, or a join of the same request still running): tell the whole turn.
          let message: MessageRecord | null;
          try {
            message = await options.turnStart(result.turn_id);
          } catch (err) {
            return reject(err);
          }
          announce(result.turn_id, message, result.agent_message.id);
          for (const { id, name, input, status, output } of result.agent_message.tool_calls ?? []) {
            sendTool('tool.started', { call_id: id, name, input });
            sendTool('tool.completed', { call_id: id, name, status, output });
          }
          if (message?.id !== result.agent_message.id) observer.delta(textOf(result.agent_message.content));
          begin(result.replayed);
        }
        flushHeld();
        sse.send('message.completed', `${turnId}:${offset + 2}`, {
          turn_id: turnId,
          message: options.view(result.agent_message),
        });
        sse.send('turn.completed', `${turnId}:${offset + 3}`, {
          turn_id: turnId,
          session_id: sessionId,
          conversation_status: result.session_status,
          usage: result.usage,
        });
        sse.close();
      },
      (err: unknown) => {
        if (!started) return reject(err);
        const error =
          err instanceof AppError ? err : new AppError('internal_error', undefined, { cause: err });
        // Logged like a plain send's failure: with the upstream status and message a provider error carries.
        if (error.statusCode >= 500) options.log.error({ err: error }, 'streamed turn failed');
        // Deltas were sent: the client holds text that will not be stored, and must discard it.
        const partial = textSent || held !== '';
        flushHeld();
        sse.send('turn.failed', `${turnId}:${offset + 2}`, {
          turn_id: turnId,
          error: streamedError(error),
          partial,
        });
        sse.close();
      },
    );
  });
}

/** A turn's failure as a stream tells it: what a plain send's envelope carries, so a client can act alike. */
export const streamedError = (error: AppError) => ({
  code: error.code,
  name: error.errorName,
  message: error.message,
  ...(error.context ? { context: error.context } : {}),
  ...(error.headers?.['retry-after'] ? { retry_after_seconds: Number(error.headers['retry-after']) } : {}),
});

const textOf = (content: { type: string; text?: string }[]) =>
  content.map((block) => (block.type === 'text' ? (block.text ?? '') : '')).join('');
