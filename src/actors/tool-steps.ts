// The step loop of a turn (docs/internals/decisions.md#the-durable-step-loop): each step is one model call;
// when the model asks for tools, the calls are committed before any runs, run in parallel, and each result is
// committed as it arrives. A turn retried under its Idempotency-Key goes on from what is committed: a stored
// result is not asked for again, a call without one is made again under the same Idempotency-Key. After
// `max_steps` tool steps the model is called once more without tools. What the model writes in every step is
// the reply's text.
import type { AgentConfig } from '../agents/catalogue.ts';
import type { ModelMessage, ModelReply, ModelToolCall, ModelToolSpec, Usage } from '../agents/provider.ts';
import { mayCallTools } from '../machines/session.ts';
import type { NewToolCall, StopReason, ToolCallRecord, ToolCallSummary } from '../store/store.ts';
import type { AgentTools } from '../tools/agent-tools.ts';
import type { OperationContext, OperationDeps } from './operation-context.ts';
import { type StepCall, StepCalls } from './step-calls.ts';

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
  /** Summed over the turn's model calls. */
  usage: Usage;
  tool_calls: ToolCallSummary[];
}

export interface StepsTurn {
  agent: AgentConfig;
  turnId: string;
  ask: StepModel;
  /** The calls an earlier attempt of the turn committed, with their results where it committed them. */
  resumed: readonly ToolCallRecord[];
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

export async function runSteps(
  deps: OperationDeps,
  context: OperationContext,
  turn: StepsTurn,
): Promise<StepsReply> {
  const loop = new StepLoop(deps, context, turn);
  await loop.resume(turn.resumed);
  for (;;) {
    const step = await loop.askModel();
    if (step.end) return loop.reply(step.stop_reason);
    const calls = await loop.commitCalls(step.reply, step.said);
    await loop.act(calls, step.said);
  }
}

/** One turn's steps: what they have gathered so far, and each thing a step does as a method of its own. */
class StepLoop {
  readonly #context: OperationContext;
  readonly #turn: StepsTurn;
  readonly #tools: AgentTools | undefined;
  /** The step's calls as they are made, and every call's result so far. */
  readonly #calls: StepCalls;
  /** The turn's steps after its history, as the model is shown them: each step's calls, then their results. */
  readonly #steps: ModelMessage[] = [];
  /** Summed over the turn's model calls. */
  readonly #usage: Usage = { input_tokens: 0, output_tokens: 0 };
  /** The reply's text so far: every step's, set apart by STEP_SEPARATOR. */
  #text = '';

  constructor(deps: OperationDeps, context: OperationContext, turn: StepsTurn) {
    this.#context = context;
    this.#turn = turn;
    this.#tools = deps.tools.get(turn.agent.id);
    this.#calls = new StepCalls(deps, context, turn);
  }

  /** Resumed: the committed steps again, as the model wrote them, and the calls that still lack a result. */
  async resume(resumed: readonly ToolCallRecord[]): Promise<void> {
    const byStep = new Map<number, ToolCallRecord[]>();
    for (const c of resumed) byStep.set(c.step, [...(byStep.get(c.step) ?? []), c]);
    if (byStep.size === 0) return;
    const pending = resumed.filter((c) => c.status === null).length;
    this.#context.entry.actor.send({ type: 'STEPS_RESUMED', steps: byStep.size, pending });
    for (const calls of byStep.values()) {
      const said = calls[0]?.step_text ?? '';
      this.#stepText()(said);
      this.#addUsage(calls[0]?.step_usage ?? null);
      await this.act(calls, said);
    }
  }

  /** One model call, its text streamed as it comes: the calls it asks for, or the end of the turn. */
  async askModel(): Promise<ModelStep> {
    const specs = this.#tools?.specs() ?? [];
    const snapshot = this.#context.entry.actor.getSnapshot();
    const choice = mayCallTools(snapshot, this.#turn.agent.max_steps) ? 'auto' : 'none';
    const before = this.#text;
    const reply = await this.#turn.ask(this.#steps, { specs, choice }, this.#stepText());
    this.#addUsage(reply.usage);
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
   * keys); a call whose input the model botched is answered at once, in the same write: it never runs.
   */
  async commitCalls(reply: ModelReply, said: string): Promise<StepCall[]> {
    const { turnId } = this.#turn;
    const step = this.#context.entry.actor.getSnapshot().context.steps + 1;
    const asked = reply.tool_calls.slice(0, MAX_CALLS_PER_STEP);
    const calls = newCalls(asked, { turnId, step, said, usage: reply.usage });
    const refused = refusals(asked, turnId);
    await this.#context.commit({
      toolCalls: calls,
      ...(refused.length > 0 ? { toolResults: refused } : {}),
      event: { type: 'TOOLS_CALLED', calls: calls.length - refused.length },
    });
    for (const c of asked) if (c.invalid !== undefined) this.#calls.refused(c);
    const answered = new Map(refused.map((r) => [r.id, r]));
    return calls.map((c) => {
      const result = answered.get(c.id);
      return result ? { ...c, ...result, created_at: '' } : c;
    });
  }

  /** A committed step: its calls, run where their results are missing, and then their results. */
  async act(calls: readonly StepCall[], said: string): Promise<void> {
    const asked = calls.map(({ id, name, input }) => ({ id, name, input }));
    this.#steps.push({
      role: 'assistant',
      content: said === '' ? [] : [{ type: 'text', text: said }],
      tool_calls: asked,
    });
    const observer = this.#context.observer;
    for (const c of asked) observer?.toolStarted?.({ call_id: c.id, name: c.name, input: c.input });
    const results = await this.#calls.settle(calls);
    this.#steps.push({ role: 'tool', results });
  }

  reply(stop_reason: StopReason): StepsReply {
    const tool_calls = inAskedOrder(this.#calls.summaries, this.#steps);
    return { text: this.#text, stop_reason, usage: this.#usage, tool_calls };
  }

  /** Streams a step's text, set apart from an earlier step's. */
  #stepText(): (piece: string) => void {
    const observer = this.#context.observer;
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

  #addUsage(more: Usage | null): void {
    this.#usage.input_tokens += more?.input_tokens ?? 0;
    this.#usage.output_tokens += more?.output_tokens ?? 0;
  }
}

/** A step's calls as they are committed; the first also keeps the step's text and usage, for a resumed turn. */
function newCalls(
  asked: readonly ModelToolCall[],
  step: { turnId: string; step: number; said: string; usage: Usage | null },
): NewToolCall[] {
  return asked.map((c, position) => ({
    id: c.id,
    turn_id: step.turnId,
    step: step.step,
    position,
    name: c.name,
    input: c.input,
    step_text: position === 0 && step.said !== '' ? step.said : null,
    step_usage: position === 0 ? step.usage : null,
  }));
}

/** The error results of the calls whose input the model botched. */
function refusals(asked: readonly ModelToolCall[], turnId: string) {
  return asked.flatMap((c) =>
    c.invalid === undefined
      ? []
      : [
          {
            id: c.id,
            turn_id: turnId,
            status: 'error' as const,
            output: invalidInput(c.invalid),
            duration_ms: 0,
          },
        ],
  );
}

/** The error result of a call whose input was not JSON, or not what the tool's schema asks. */
const invalidInput = (why: string) => ({
  error: 'invalid_input',
  message: `The input of this call was not usable: ${why.slice(0, 500)}`,
});

/** The calls in the order the model asked for them (results arrive in any order). */
function inAskedOrder(summaries: ToolCallSummary[], steps: readonly ModelMessage[]): ToolCallSummary[] {
  const asked = steps.flatMap((m) => (m.role === 'assistant' ? (m.tool_calls ?? []) : []));
  const byId = new Map(summaries.map((s) => [s.id, s]));
  return asked.flatMap((c) => byId.get(c.id) ?? []);
}
