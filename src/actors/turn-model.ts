// What each step of a turn calls (turn.ts runs the turn, tool-steps.ts its steps): the model on the session's
// recent history cut to the agent's context window, with the turn's steps so far; a prompt the provider still
// finds too long sent again with less history, one refused for its files sent without them; the agent's token
// estimate corrected by what the provider counted; the turn's memory reservation fitted to what it holds; and
// the time to the turn's first text observed.
import { callModel } from '../agents/call-model.ts';
import type { AgentConfig } from '../agents/catalogue.ts';
import {
  estimateCorrection,
  halveHistory,
  isContextOverflow,
  planWindow,
  promptTokens,
} from '../agents/context-window.ts';
import { toModelMessages } from '../agents/model-messages.ts';
import type { ModelReply, Provider } from '../agents/provider.ts';
import { AppError } from '../errors.ts';
import type { MessageRecord } from '../store/store.ts';
import { traceModelCall } from '../tracing/tracer.ts';
import type { OperationContext, OperationDeps } from './operation-context.ts';
import type { StepModel } from './tool-steps.ts';
import { fileBytesOf, turnBytes } from './turn-estimate.ts';

/** `ask`, observing the time from the turn's start to its first text, whichever step writes it. */
export function firstTokenTimed(
  deps: OperationDeps,
  agent: AgentConfig,
  started: number,
  ask: StepModel,
): StepModel {
  let seen = false;
  return (steps, tools, onDelta) =>
    ask(steps, tools, (text) => {
      if (!seen && text !== '') {
        seen = true;
        deps.metrics.timeToFirstToken.observe({ agent: agent.id }, (performance.now() - started) / 1000);
      }
      onDelta(text);
    });
}

/**
 * What each step of the turn calls: the model on the session's recent history (this turn's messages are
 * stored by now), cut to the agent's context window, then the turn's steps so far. A prompt the provider
 * still finds too long is sent again once with the newer half of that history, and that half is what later
 * steps send too; likewise a prompt refused for its files goes on without them.
 */
export async function modelCaller(
  deps: OperationDeps,
  context: OperationContext,
  agent: AgentConfig,
  provider: Provider,
  system: string,
): Promise<StepModel> {
  const { store, metrics } = deps;
  const { session } = context.entry;
  const limit = agent.history_limit;
  const maxChars = deps.maxHistoryChars;
  const history = await context.entry.history.recent(limit, maxChars, () =>
    store.recentMessages(session.id, limit, maxChars),
  );
  const plan = await planWindow(system, history, agent, estimateCorrection.ratio(agent));
  // Only what is kept is turned into model messages: the files of dropped messages are never read.
  let sent = plan.messages;
  let files = deps.files;
  let base = await toModelMessages(store, session.tenant_id, sent, files);
  let learnt = false;
  // What the turn holds, now that it is read: its reservation shrinks to it, and grows with its steps.
  const historyChars = context.entry.history.answeredChars;
  const reserve = (stepsChars: number) =>
    context.reservation?.resize(turnBytes(historyChars, fileBytesOf(base), stepsChars));
  reserve(0);

  return async (steps, tools, onDelta) => {
    if (steps.length > 0 && Number.isFinite(agent.context_window)) {
      // The turn's own steps (its tool calls and results) are sent whole: older history makes room for them,
      // as if the reply's reserve had grown by their size (bytes: a token is at least one).
      const reserve = Buffer.byteLength(JSON.stringify(steps));
      const room = { ...agent, max_tokens: agent.max_tokens + reserve };
      const replanned = await planWindow(system, history, room, estimateCorrection.ratio(agent));
      if (replanned.messages.length < sent.length) {
        sent = sent.slice(sent.length - Math.max(1, replanned.messages.length));
        base = await toModelMessages(store, session.tenant_id, sent, files);
      }
    }
    if (steps.length > 0) reserve(JSON.stringify(steps).length);
    const modelStarted = performance.now();
    // One total time for the step's calls: a second call (below) gets what the first left.
    const deadline = Date.now() + agent.timeouts.total_ms;
    let streamed = false;
    const untraced = () =>
      callModel(
        provider,
        {
          model: agent.model,
          system,
          messages: [...base, ...steps],
          ...(tools.specs.length > 0 ? { tools: tools.specs, toolChoice: tools.choice } : {}),
          onDelta: (text) => {
            streamed ||= text !== '';
            onDelta(text);
          },
        },
        {
          totalMs: Math.max(1, deadline - Date.now()),
          totalLimitMs: agent.timeouts.total_ms,
          stallMs: agent.timeouts.stall_ms,
          signal: context.turnSignal,
        },
      );
    // Each call is a span of its own (tracing/), its prompt read only when content is captured.
    const call = () =>
      traceModelCall(
        {
          provider: provider.name,
          conversationId: session.id,
          agent,
          system,
          messages: () => [...base, ...steps],
        },
        untraced,
      );
    const observe = (outcome: string) =>
      metrics.providerDuration.observe(
        { provider: provider.name, outcome },
        (performance.now() - modelStarted) / 1000,
      );
    try {
      let reply: ModelReply;
      try {
        reply = await call();
      } catch (err) {
        // Only when nothing was streamed (the provider refused the prompt) may a second call start a clean reply.
        if (streamed) throw err;
        if (isContextOverflow(err) && sent.length >= 2) {
          // Files are counted by a fixed guess: an overflow they caused says nothing of how text is counted.
          // Nor does one that later steps' tool results caused.
          if (!hasFiles(sent) && steps.length === 0) estimateCorrection.overflowed(agent);
          sent = halveHistory(sent);
        } else if (refusedWithFiles(err, sent)) {
          // A model that takes no images (or no such file) would refuse every later turn of the session too,
          // since the file stays in its history: the files go as placeholder lines instead.
          files = { ...deps.files, withheld: 'is not sent: this model refused it' };
        } else {
          throw err;
        }
        base = await toModelMessages(store, session.tenant_id, sent, files);
        reply = await call();
      }
      // The estimate is corrected by the first call only: later steps add tool results it did not count.
      if (!learnt && steps.length === 0) learn(agent, plan, sent, reply);
      learnt = true;
      observe('ok');
      return reply;
    } catch (err) {
      observe(err instanceof AppError ? err.code : 'error');
      throw err;
    }
  };
}

/** The provider refused a prompt that carries files (not for its length): they may be what it cannot take. */
function refusedWithFiles(err: unknown, sent: readonly MessageRecord[]): boolean {
  return err instanceof AppError && err.code === 'agent_rejected' && hasFiles(sent);
}

const hasFiles = (messages: readonly MessageRecord[]) =>
  messages.some((m) => m.content.some((block) => block.type !== 'text'));

/** Corrects the agent's estimate by the input tokens the provider reported for what was sent. */
function learn(
  agent: AgentConfig,
  plan: Awaited<ReturnType<typeof planWindow>>,
  sent: readonly MessageRecord[],
  reply: ModelReply,
): void {
  if (plan.systemTokens === null || plan.tokens === null) return;
  // Files are counted by a fixed guess: a prompt with files says little about how text is counted.
  if (hasFiles(sent)) return;
  const estimate = promptTokens(plan.systemTokens, plan.tokens.slice(-sent.length));
  // Over the budget, a count stopped early: a lower bound, which would overstate the ratio.
  if (estimate > plan.budget) return;
  estimateCorrection.observe(agent, estimate, reply.usage.input_tokens);
}
