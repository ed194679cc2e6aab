// The step loop of a turn (docs/internals/decisions.md#the-durable-step-loop): each step is one model call;
// when the model asks for tools, the calls are committed before any runs, run in parallel, and each result is
// committed as it arrives. A call whose tool needs a person's approval is committed waiting, never run before
// its decision: once the step's other calls have their results the turn pauses, and a decision later goes on
// from what is committed (docs/internals/decisions.md#approvals). A turn retried under its Idempotency-Key goes
// on the same way: a stored result is not asked for again, a call without one is made again under the same
// Idempotency-Key. After `max_steps` tool steps the model is called once more without tools. A cancelled turn
// ends with what the model wrote so far. What the model writes in every step is the reply's text.
import type { AgentConfig } from '../agents/catalogue.ts';
import { addUsage, callUsage, noUsage } from '../agents/pricing.ts';
import type { ModelMessage, ModelReply, ModelToolSpec } from '../agents/provider.ts';
import { AppError } from '../errors.ts';
import { mayCallTools, type TurnExtras } from '../machines/session.ts';
import type { MessageUsage, StopReason, ToolCallRecord, ToolCallSummary } from '../store/store.ts';
import type { AgentTools } from '../tools/agent-tools.ts';
import { turnAwaitingEvent } from '../webhooks/webhook-events.ts';
import { checkBudget } from './budgets.ts';
import type { OperationContext, OperationDeps } from './operation-context.ts';
import { turnAwaiting } from './session-events.ts';
import {
  type Approval,
  approvalOf,
  awaitingWhereNeeded,
  functionNames,
  hasResult,
  isWaiting,
  markFunctions,
  pausedTurnOf,
  runnable,
  systemDenials,
  wakeAt,
} from './step-approvals.ts';
import { newCalls, refusals, type StepCall, StepCalls } from './step-calls.ts';

/**
 * One model call of the turn: the turn's steps so far after its history, the agent's tools, and whether it
 * may call them (out of steps, they are only declared).
 */
export type StepModel = (
  steps: readonly ModelMessage[],
  tools: { specs: readonly ModelToolSpec[]; choice: 'auto' | 'none' },
  onDelta: (text: string) => void,
) => Promise<ModelReply>;

/** The turn's reply: the text of every step, and its tool calls. */
export interface StepsReply {
  text: string;
  stop_reason: StopReason;
  /** Summed over the turn's model calls, priced. */
  usage: MessageUsage;
  tool_calls: ToolCallSummary[];
}

/** How the steps ended: with the reply, or paused on step `step`, whose `approvals` wait. */
export type StepsOutcome = { reply: StepsReply } | { paused: { step: number; approvals: Approval[] } };

export interface StepsTurn {
  agent: AgentConfig;
  turnId: string;
  ask: StepModel;
  /** The calls earlier operations of the turn committed, with their results where they committed them. */
  resumed: readonly ToolCallRecord[];
  /**
   * What the machine keeps of the turn when a step pauses it: its reply's id, its send's key, and what the
   * request added to the turn (functions the client declared, instructions), which it goes on with.
   */
  pause: { replyId: string; key: string | null; extras?: TurnExtras | undefined };
  /**
   * Whether the committed steps are told again through the observer (a keyed retry to an observer that
   * cannot read the store); otherwise the observer has them from the store and only what is new is told.
   */
  retell: boolean;
}

/** Between the texts of two steps, as stored and as streamed. */
const STEP_SEPARATOR = '\n\n';
/**
 * Calls of one step that are kept and made; the model's further ones are dropped
 * (docs/internals/decisions.md#every-cost-bounded).
 */
export const MAX_CALLS_PER_STEP = 16;

/** What one model call asked for: tool calls to make, with the text it wrote before them, or the end. */
type ModelStep = { end: false; reply: ModelReply; said: string } | { end: true; stop_reason: StopReason };
type Paused = { step: number; approvals: Approval[] };

export async function runSteps(
  deps: OperationDeps,
  context: OperationContext,
  turn: StepsTurn,
): Promise<StepsOutcome> {
  const loop = new StepLoop(deps, context, turn);
  try {
    const paused = await loop.resume(turn.resumed);
    if (paused) return { paused };
    for (;;) {
      if (context.cancelled()) return { reply: loop.reply('cancelled') };
      const step = await loop.askModel();
      if (step.end) return { reply: loop.reply(step.stop_reason) };
      const calls = await loop.commitCalls(step.reply, step.said);
      const waits = await loop.act(calls, step.said, true);
      if (waits) return { paused: waits };
    }
  } catch (err) {
    // A cancelled model call fails as an aborted one: the turn ends with what it has. Not when the shard
    // moved or the process stops: the turn is then the next owner's.
    const moving =
      err instanceof AppError && (err.code === 'shard_moving' || err.code === 'service_unavailable');
    if (context.cancelled() && !moving) return { reply: loop.reply('cancelled') };
    throw err;
  }
}

/** One turn's steps: what they have gathered so far, and each thing a step does as a method of its own. */
class StepLoop {
  readonly #context: OperationContext;
  readonly #turn: StepsTurn;
  readonly #tools: AgentTools | undefined;
  readonly #deps: OperationDeps;
  /** The step's calls as they are made, and every call's result so far. */
  readonly #calls: StepCalls;
  /** The turn's steps after its history, as the model is shown them: each step's calls, then their results. */
  readonly #steps: ModelMessage[] = [];
  /** Summed over the turn's model calls. */
  readonly #usage: MessageUsage = noUsage();
  /** The reply's text so far: every step's, set apart by STEP_SEPARATOR. */
  #text = '';

  constructor(deps: OperationDeps, context: OperationContext, turn: StepsTurn) {
    this.#context = context;
    this.#turn = turn;
    this.#tools = deps.tools.get(turn.agent.id);
    this.#deps = deps;
    this.#calls = new StepCalls(deps, context, turn);
  }

  /**
   * Resumed: the committed steps again, as the model wrote them, and the calls that still lack a result; a
   * step whose calls still wait for decisions pauses the turn again.
   */
  async resume(resumed: readonly ToolCallRecord[]): Promise<Paused | null> {
    const byStep = new Map<number, ToolCallRecord[]>();
    for (const c of resumed) byStep.set(c.step, [...(byStep.get(c.step) ?? []), c]);
    if (byStep.size === 0) return null;
    const pending = [...byStep.values()].flatMap((calls) => runnable(calls)).filter((c) => c.status === null);
    this.#context.entry.actor.send({ type: 'STEPS_RESUMED', steps: byStep.size, pending: pending.length });
    const { retell } = this.#turn;
    for (const calls of byStep.values()) {
      const said = calls[0]?.step_text ?? '';
      this.#stepText(retell)(said);
      addUsage(this.#usage, calls[0]?.step_usage ?? null);
      const paused = await this.act(calls, said, retell);
      if (paused) return paused;
    }
    return null;
  }

  /** One model call, its text streamed as it comes: the calls it asks for, or the end of the turn. */
  async askModel(): Promise<ModelStep> {
    if (!(await this.#withinBudget())) return { end: true, stop_reason: 'budget' };
    // The client's functions are declared beside the agent's tools; a call to one waits for its output.
    const specs = [...(this.#tools?.specs() ?? []), ...(this.#turn.pause.extras?.functions ?? [])];
    const snapshot = this.#context.entry.actor.getSnapshot();
    const choice = mayCallTools(snapshot, this.#turn.agent.max_steps) ? 'auto' : 'none';
    const before = this.#text;
    const reply = await this.#turn.ask(this.#steps, { specs, choice }, this.#stepText(true));
    const usage = callUsage(this.#turn.agent, reply.usage);
    addUsage(this.#usage, usage);
    if (reply.tool_calls.length === 0 || choice === 'none' || specs.length === 0) {
      // Out of steps, the model had to answer in text: the turn says why it ended there.
      const outOfSteps = choice === 'none' && specs.length > 0;
      const stop_reason = outOfSteps && reply.stop_reason === 'end' ? 'max_steps' : reply.stop_reason;
      return { end: true, stop_reason };
    }
    const said = this.#text.slice(before === '' ? 0 : before.length + STEP_SEPARATOR.length);
    return { end: false, reply, said };
  }

  /**
   * Commits the step's calls before any runs (a crash from here on resumes these very calls, under the same
   * keys); a call whose input the model botched is answered at once, in the same write: it never runs. Calls
   * that must be approved are committed waiting, and the same write pauses the turn (with the webhook event
   * telling so): whatever happens next, they wait for their decisions.
   */
  async commitCalls(reply: ModelReply, said: string): Promise<StepCall[]> {
    const { turnId, agent, pause } = this.#turn;
    const step = this.#context.entry.actor.getSnapshot().context.steps + 1;
    const asked = reply.tool_calls.slice(0, MAX_CALLS_PER_STEP);
    const refused = refusals(asked, turnId);
    const at = new Date().toISOString();
    const answered = new Map(refused.map((r) => [r.id, r]));
    const calls = awaitingWhereNeeded(
      agent,
      newCalls(asked, { turnId, step, said, usage: callUsage(agent, reply.usage) }),
      new Set(answered.keys()),
      at,
      functionNames(pause.extras),
    );
    const approvals = calls.flatMap((c) => approvalOf(c, at) ?? []);
    const paused = approvals.length > 0 ? pausedTurnOf({ turnId, ...pause }, approvals) : undefined;
    await this.#context.commit({
      at,
      toolCalls: calls,
      ...(refused.length > 0 ? { toolResults: refused } : {}),
      ...(paused
        ? {
            patch: { wake_at: wakeAt(approvals) },
            webhookEvents: [turnAwaitingEvent(this.#context.entry.session, turnId, approvals, at)],
            events: [turnAwaiting(turnId, approvals)],
          }
        : {}),
      event: {
        type: 'TOOLS_CALLED',
        calls: calls.length - refused.length - approvals.length,
        ...(paused ? { paused } : {}),
      },
    });
    for (const c of asked) if (c.invalid !== undefined) this.#calls.refused(c);
    return calls.map((c) => {
      const result = answered.get(c.id);
      return result ? { ...c, ...result, created_at: at } : { ...c, created_at: at };
    });
  }

  /**
   * A committed step: its calls run where their results are missing, then their results; `tell` says whether
   * the step's calls are told as started (a new step, or told again). When some of its calls wait for
   * decisions, the others run and the turn pauses: the step's waiting calls, or null when it goes on.
   */
  async act(calls: readonly StepCall[], said: string, tell: boolean): Promise<Paused | null> {
    const waiting = calls.filter(isWaiting);
    const step = calls[0]?.step ?? 0;
    const asked = calls.map(({ id, name, input }) => ({ id, name, input }));
    this.#steps.push({
      role: 'assistant',
      content: said === '' ? [] : [{ type: 'text', text: said }],
      tool_calls: asked,
    });
    const observer = this.#context.observer;
    const approvals = markFunctions(
      waiting.flatMap((c) => approvalOf(c) ?? []),
      functionNames(this.#turn.pause.extras),
    );
    if (tell) {
      for (const c of calls) {
        const approval = approvals.find((a) => a.call_id === c.id);
        if (approval) observer?.approvalRequested?.(approval);
        else observer?.toolStarted?.({ call_id: c.id, name: c.name, input: c.input });
      }
    }
    const toRun = runnable(calls);
    const denials = () => systemDenials(this.#turn.turnId, approvals, 'cancelled');
    // Cancelled before they were sent: none of them will be (results stored already are kept).
    if (this.#context.cancelled()) {
      await this.#calls.settle(toRun.filter(hasResult), tell);
      await this.#calls.cancel(calls, toRun, denials(), tell);
      return null;
    }
    const results = await this.#calls.settle(toRun, tell);
    if (approvals.length > 0) {
      if (this.#context.cancelled()) {
        await this.#calls.cancel(calls, [], denials(), tell);
        return null;
      }
      if (tell) observer?.paused?.(step, approvals);
      return { step, approvals };
    }
    this.#steps.push({ role: 'tool', results });
    return null;
  }

  reply(stop_reason: StopReason): StepsReply {
    const tool_calls = inAskedOrder(this.#calls.summaries, this.#steps);
    return { text: this.#text, stop_reason, usage: this.#usage, tool_calls };
  }

  /**
   * Whether the session's budget allows another model call, counting what this turn has spent and not yet
   * committed. Spent before the turn's first step, the turn fails with budget_exceeded (its send answers
   * 429); spent after a step, the turn ends there with what it has (stop_reason `budget`).
   */
  async #withinBudget(): Promise<boolean> {
    try {
      await checkBudget(this.#deps, this.#context.entry.session, this.#turn.agent, this.#usage);
      return true;
    } catch (err) {
      if (err instanceof AppError && err.code === 'budget_exceeded' && this.#steps.length > 0) return false;
      throw err;
    }
  }

  /** Adds a step's text to the reply, set apart from an earlier step's; streamed when `tell`. */
  #stepText(tell: boolean): (piece: string) => void {
    const observer = tell ? this.#context.observer : undefined;
    let first = true;
    return (piece) => {
      if (piece === '') return;
      if (first && this.#text !== '') {
        this.#text += STEP_SEPARATOR;
        observer?.delta(STEP_SEPARATOR);
      }
      first = false;
      this.#text += piece;
      observer?.delta(piece);
    };
  }
}

/** The calls in the order the model asked for them (results arrive in any order). */
function inAskedOrder(summaries: ToolCallSummary[], steps: readonly ModelMessage[]): ToolCallSummary[] {
  const asked = steps.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : []));
  const byId = new Map(summaries.map((s) => [s.id, s]));
  return asked.flatMap((c) => byId.get(c.id) ?? []);
}
