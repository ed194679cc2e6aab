// Prompt assembly: the agent's instructions, then the session's context and the user's details in
// tagged blocks. Every value is escaped so that nothing a user or integrator sends can close a block.
import type { JsonObject, User } from '../store/store.ts';

const entities: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;' };

/** Makes text safe inside a tagged block: no `<` or `>` survives, so no tag can be opened or closed. */
export function escapeBlock(text: string): string {
  return text.replace(/[&<>]/g, (c) => entities[c] ?? c);
}

/** One `key: value` line; JSON keeps newlines in values (and odd keys) from forging lines of their own. */
const line = (key: string, value: unknown) =>
  `${/^[\w.-]+$/.test(key) ? key : JSON.stringify(key)}: ${JSON.stringify(value)}`;

/**
 * A text file inlined for the model: its name (quotes too, so it stays one attribute) and its content are
 * escaped like a block's values, so neither can close the `<file>` wrapper or forge another one.
 */
export function fileBlock(name: string, content: string): string {
  return `<file name="${escapeBlock(name).replaceAll('"', '&quot;')}">\n${escapeBlock(content)}\n</file>`;
}

function block(tag: string, lines: string[]): string {
  return `<${tag}>\n${lines.map(escapeBlock).join('\n')}\n</${tag}>`;
}

/** The system prompt for one turn; metadata never reaches it. */
export function systemPrompt(instructions: string, context: JsonObject, user: User | null): string {
  const parts: string[] = [];
  if (instructions) parts.push(instructions);
  if (Object.keys(context).length > 0) {
    parts.push(
      block(
        'session_context',
        Object.entries(context).map(([k, v]) => line(k, v)),
      ),
    );
  }
  if (user) {
    const lines: string[] = [];
    if (user.name) lines.push(line('name', user.name));
    if (user.email) lines.push(line('email', user.email));
    if (user.phone) lines.push(line('phone', user.phone));
    for (const [k, v] of Object.entries(user.info)) lines.push(line(k, v));
    if (lines.length > 0) parts.push(block('user_info', lines));
  }
  return parts.join('\n\n');
}

/**
 * The prompt with the instructions a request added for its turn, after everything else and in a block of
 * their own, so that the model (and anyone reading a trace) tells them from the agent's.
 */
export function withRequestInstructions(prompt: string, instructions: string): string {
  const added = block('request_instructions', instructions.split('\n'));
  return prompt === '' ? added : `${prompt}\n\n${added}`;
}
