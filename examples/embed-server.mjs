// Serve an assistant directory from your own Node program: the chat core in this process plus
// the HTTP/SSE API and the dashboard around it (no IM channels, no scheduler: embed-gateway.mjs
// runs everything `service gateway` runs).
//
// The package is `agent-service`, not on the npm registry (`npm install service` would fetch an
// unrelated package). Install it from a tarball of the checkout, or by its path (a link):
//
//   (cd /path/to/service && npm pack)    # after its `npm install`: writes agent-service-0.1.0.tgz
//   npm install /path/to/service/agent-service-0.1.0.tgz      # or: npm install /path/to/service
//   npx agent-service init my-assistant --yes
//   node embed-server.mjs my-assistant       # SERVICE_PORT / SERVICE_TOKEN are honoured
//
// Stop it with Ctrl-C: running turns get 30 s to finish, then the assistant is closed.
import { createAssistant, startServer } from 'agent-service';

const dir = process.argv[2] ?? '.';
const bot = createAssistant({ dir });
// port: SERVICE_PORT, else 3000 (0 picks a free one); token: SERVICE_TOKEN, else the one kept in
// <dir>/.service/gateway-token (generated on first use); hostname: 127.0.0.1.
const server = await startServer(bot);
console.log(`serving ${dir} on ${server.url}`);
console.log(`token: ${server.token}`);
console.log(`dashboard: ${server.url}/#token=${server.token}`);

// The same assistant answers in-process too; HTTP clients and this code share its sessions.
const { name, engine } = bot.status();
console.log(`${name} runs on ${engine}; try:`);
console.log(`  curl -N ${server.url}/chat -H "Authorization: Bearer ${server.token}" -H 'Content-Type: application/json' -d '{"message": "hello"}'`);

let stopping = false;
const stop = async (signal) => {
  if (stopping) return;
  stopping = true;
  console.log(`${signal}: stopping`);
  await server.close(); // stop accepting, let running turns finish, close connections
  await bot.close(); // release the state database
  console.log('stopped');
};
process.once('SIGINT', () => void stop('SIGINT'));
process.once('SIGTERM', () => void stop('SIGTERM'));
