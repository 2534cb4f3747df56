// Every setting of service.yaml, grouped as the configuration reference groups them. Structured
// settings (channels, tasks, MCP servers, model maps) are edited as JSON; the rest get a field
// of their own. `restart` marks what the server reports as needing a gateway restart.
const f = (path, type, extra = {}) => ({ path: path.split('.'), type, ...extra });

// The engine choices come from the server (GET /api/engines): its registry, installed ones marked.
const engineField = f('engine', 'enum', { options: [], labels: {}, required: true, restart: true });

/** Fill the engine choices from GET /api/engines. */
export function setEngineChoices(engines) {
  engineField.options = engines.map((e) => e.id);
  engineField.labels = Object.fromEntries(engines.map((e) => [e.id, `${e.id} (${e.title})${e.installed ? ', installed' : ''}`]));
}

export const CONFIG_GROUPS = [
  {
    title: 'Assistant and engine',
    fields: [
      f('name', 'string', { required: true, help: 'assistant name' }),
      engineField,
      f('model', 'string', { restart: true, help: 'engine_c uses provider/model' }),
      f('skipPermissions', 'bool', { help: 'bypass agent permission prompts' }),
      f('oauthToken', 'secret', { help: 'subscription token, engine_b only' }),
    ],
  },
  {
    title: 'Limits',
    fields: [
      f('timeout', 'number', { help: 'seconds per engine invocation' }),
      f('maxConcurrent', 'int', { help: 'turns running or waiting, across sessions' }),
      f('maxQueuePerSession', 'int', { help: 'queued requests per session key' }),
      f('maxTurnsPerPerson', 'int', { help: 'turns one chat member (not an admin) may have at once' }),
      f('sessionTtlDays', 'number', { help: 'idle sessions pruned at startup' }),
    ],
  },
  {
    title: 'Warm engines',
    fields: [
      f('warm.enabled', 'bool', { help: 'keep one engine process per active conversation (default on)' }),
      f('warm.maxProcesses', 'int', { help: 'engine processes kept at once; the least recently used goes first (default 4)' }),
      f('warm.idleSeconds', 'number', { help: 'a warm process with no turn for this long is ended (default 600)' }),
    ],
  },
  {
    title: 'Persona and instructions',
    fields: [
      f('systemPrompt', 'text', { help: 'rendered once into the assistant context' }),
      f('persona.role', 'string', { help: 'also published to the fleet' }),
      f('persona.displayName', 'string'),
      f('persona.tone', 'string'),
      f('persona.boundaries', 'list', { help: 'one per line' }),
    ],
  },
  {
    title: 'IM delivery and group chats',
    fields: [
      f('streaming.mode', 'enum', { options: ['buffered', 'streaming'] }),
      f('streaming.showToolCalls', 'bool'),
      f('groupChat.groupPolicy', 'enum', { options: ['mention-only', 'smart', 'always'] }),
      f('groupChat.historyLimit', 'int'),
      f('groupChat.maxTurns', 'int'),
    ],
  },
  {
    title: 'Channels and scheduled tasks',
    fields: [
      f('channels', 'json', { restart: true, help: 'channel key → settings; secrets stay masked unless you replace them' }),
      f('tasks', 'json', { help: 'array of {id, name, schedule or at, prompt, enabled, target}' }),
      f('maxTasksPerChat', 'int', { help: 'tasks a chat member (not an admin) may keep for their chat (/remind, /task add)' }),
      f('replyRetryHours', 'number', { help: 'how long a reply a platform refused is retried' }),
      f('inbox.enabled', 'bool', { restart: true }),
      f('inbox.retentionDays', 'number', { restart: true }),
      f('historyFetch.enabled', 'bool', { restart: true }),
      f('historyFetch.pollIntervalMinutes', 'number', { restart: true }),
      f('historyFetch.initialLookbackMinutes', 'number', { restart: true }),
    ],
  },
  {
    title: 'State store',
    fields: [
      f('store.url', 'secret', { restart: true, help: 'postgres://… for a PostgreSQL store; empty: the embedded SQLite file in .service/' }),
      f('store.schema', 'string', { restart: true, help: 'the PostgreSQL schema of this assistant; default assistant_<name>' }),
      f('store.failoverSeconds', 'number', { restart: true, help: 'two hosts, one assistant: how soon the follower takes over (default 15)' }),
    ],
  },
  {
    title: 'Access from the channels',
    fields: [
      f('access.dm', 'enum', { options: ['pairing', 'allowlist', 'open'], help: 'direct messages from people not allowed yet' }),
      f('access.groups', 'enum', { options: ['pairing', 'allowlist', 'open'], help: 'group chats not allowed yet (paired as a whole)' }),
      f('access.allow', 'list', { help: '<channel>:<userId> or <channel>:*, one per line' }),
      f('access.chats', 'list', { help: '<channel>:<chatId>, one per line' }),
      f('access.admins', 'list', { help: 'may change the configuration and /approve from a chat' }),
      f('access.rateLimit.messages', 'int', { help: 'per sender; 0 = no limit' }),
      f('access.rateLimit.perSeconds', 'number'),
      f('access.dailyBudgetUsd', 'number', { help: '0 = no cap' }),
      f('access.reservePerTurnUsd', 'number', { help: 'what a running turn holds of the daily budget; 0 = the most a recent turn cost' }),
    ],
  },
  {
    title: 'Permissions (engine_a)',
    fields: [
      f('permissions.allowedPaths', 'list'),
      f('permissions.deniedPaths', 'list'),
      f('permissions.allowedCommands', 'list'),
      f('permissions.deniedCommands', 'list'),
    ],
  },
  {
    title: 'Codex (engine_d)',
    fields: [
      f('codex.mode', 'enum', { options: ['unrestricted', 'safe'], restart: true }),
      f('codex.sandbox', 'enum', { options: ['read-only', 'workspace-write', 'danger-full-access'], restart: true }),
      f('codex.approval', 'enum', { options: ['untrusted', 'on-request', 'never'], restart: true }),
      f('codex.search', 'bool', { restart: true }),
      f('codex.addDirs', 'list', { restart: true }),
    ],
  },
  {
    title: 'ACP agent (acp)',
    fields: [
      f('acp.command', 'string', { restart: true, help: 'program that speaks ACP on stdio, e.g. gemini' }),
      f('acp.args', 'list', { restart: true, help: 'one per line, e.g. --acp' }),
      f('acp.env', 'json', { restart: true, help: 'extra environment: name → value' }),
      f('acp.contextFile', 'string', { restart: true, help: 'the context file the agent reads' }),
      f('acp.authMethod', 'string', { restart: true, help: 'ACP authenticate method id, if the agent needs one' }),
    ],
  },
  {
    title: 'Model provider',
    fields: [
      f('provider.baseUrl', 'string', { restart: true }),
      f('provider.apiKey', 'secret', { restart: true }),
      f('provider.model', 'string'),
      f('provider.models', 'json', { help: 'engine → model' }),
      f('provider.fallback', 'json', { restart: true, help: '{baseUrl, apiKey, model}' }),
      f('provider.failoverThreshold', 'int'),
    ],
  },
  {
    title: 'Gateway and MCP',
    fields: [
      f('gateway.host', 'string', { restart: true }),
      f('gateway.port', 'int', { restart: true }),
      f('gateway.token', 'secret', { restart: true }),
      f('gateway.logFormat', 'enum', { options: ['text', 'json'], restart: true, help: 'json: one JSON object per log line' }),
      f('metrics.public', 'bool', { restart: true, help: 'GET /metrics without the token (a scraper on a private network)' }),
      f('mcp', 'json', { restart: true, help: 'server name → {command, args, env} or {url, type, headers}' }),
    ],
  },
];

export const KNOWN_TOP_LEVEL = new Set(CONFIG_GROUPS.flatMap((g) => g.fields.map((field) => field.path[0])));
