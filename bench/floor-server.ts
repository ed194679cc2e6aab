// The floor: a bare Fastify 5 server that stores a turn (user + assistant message) with better-sqlite3 in one
// transaction per request (WAL, synchronous=FULL like Parley) and answers like Parley, plain or as SSE.
// Run as its own process: `node bench/floor-server.ts <data dir> [full|normal]`; prints {"port":N}
// once listening. `normal` (better-sqlite3's WAL default: no fsync per commit) is for comparison only.
import { join } from 'node:path';
import Database from 'better-sqlite3';
import Fastify from 'fastify';
import { nanoid } from 'nanoid';

const [dataDir, synchronous = 'full'] = process.argv.slice(2);
if (!dataDir || !['full', 'normal'].includes(synchronous)) {
  throw new Error('usage: floor-server.ts <data dir> [full|normal]');
}

const db = new Database(join(dataDir, 'floor.db'));
db.pragma('journal_mode = WAL');
db.pragma(`synchronous = ${synchronous.toUpperCase()}`);
db.exec(`CREATE TABLE IF NOT EXISTS messages (
  id TEXT PRIMARY KEY,
  session_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  role TEXT NOT NULL,
  content TEXT NOT NULL,
  metadata TEXT,
  created_at TEXT NOT NULL,
  UNIQUE (session_id, seq)
)`);
const insert = db.prepare(
  'INSERT INTO messages (id, session_id, seq, role, content, metadata, created_at) VALUES (?, ?, ?, ?, ?, NULL, ?)',
);
const seqs = new Map<string, number>();

interface Message {
  id: string;
  role: 'user' | 'assistant';
  content: Array<{ type: 'text'; text: string }>;
  created_at: string;
  metadata: null;
}

const storeTurn = db.transaction((sessionId: string, user: Message, reply: Message) => {
  const seq = seqs.get(sessionId) ?? 0;
  insert.run(user.id, sessionId, seq + 1, 'user', JSON.stringify(user.content), user.created_at);
  insert.run(reply.id, sessionId, seq + 2, 'assistant', JSON.stringify(reply.content), reply.created_at);
  seqs.set(sessionId, seq + 2);
});

/** Stores the user's message and the scripted-style reply; returns both. */
function turn(sessionId: string, body: unknown): { user: Message; reply: Message } {
  const content = (body as { content?: unknown } | null)?.content;
  const text = typeof content === 'string' ? content : JSON.stringify(content ?? '');
  const now = new Date().toISOString();
  const user: Message = {
    id: `msg_${nanoid()}`,
    role: 'user',
    content: [{ type: 'text', text }],
    created_at: now,
    metadata: null,
  };
  const reply: Message = {
    id: `msg_${nanoid()}`,
    role: 'assistant',
    content: [{ type: 'text', text: `Hello! You said: ${JSON.stringify(text)}.` }],
    created_at: now,
    metadata: null,
  };
  storeTurn(sessionId, user, reply);
  return { user, reply };
}

const app = Fastify({ logger: false });
type Params = { Params: { session_id: string } };

app.post<Params>('/v1/agents/sessions/:session_id/messages', async (request, reply) => {
  const { reply: message } = turn(request.params.session_id, request.body);
  return reply.code(201).send({ agent_message: message });
});

app.post<Params>('/v1/agents/sessions/:session_id/messages/stream', async (request, reply) => {
  const sessionId = request.params.session_id;
  const { user, reply: message } = turn(sessionId, request.body);
  const turnId = `turn_${nanoid()}`;
  const text = message.content[0]?.text ?? '';
  const events: Array<[string, number, unknown]> = [
    ['turn.started', 0, { turn_id: turnId, session_id: sessionId, user_message: user }],
    [
      'message.delta',
      text.length + 1,
      { turn_id: turnId, message_id: message.id, index: 0, delta: { type: 'text', text } },
    ],
    ['message.completed', text.length + 2, { turn_id: turnId, message }],
    [
      'turn.completed',
      text.length + 3,
      { turn_id: turnId, session_id: sessionId, conversation_status: 'active', usage: null },
    ],
  ];
  reply.hijack();
  reply.raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
  });
  for (const [event, seq, data] of events) {
    reply.raw.write(`event: ${event}\nid: ${turnId}:${seq}\ndata: ${JSON.stringify(data)}\n\n`);
  }
  reply.raw.end();
});

const close = async () => {
  await app.close();
  db.close();
  process.exit(0);
};
process.once('SIGTERM', close);
process.once('SIGINT', close);

await app.listen({ port: 0, host: '127.0.0.1' });
const address = app.server.address();
process.stdout.write(
  `${JSON.stringify({ port: typeof address === 'object' && address ? address.port : 0 })}\n`,
);
