// Everything `service gateway` runs, started from your own Node program: the HTTP/SSE API and
// dashboard, the IM channels of service.yaml, the scheduled tasks and the fleet entry.
//
//   (cd /path/to/service && npm pack)    # after its `npm install`: writes agent-service-0.1.0.tgz
//   npm install /path/to/service/agent-service-0.1.0.tgz      # or: npm install /path/to/service
//   node embed-gateway.mjs my-assistant
//
// Defaults as for `service gateway`: port from SERVICE_PORT, else gateway.port, else 3000; token
// from SERVICE_TOKEN, else gateway.token, else .service/gateway-token. Logs go to stderr.
import { startGateway } from 'agent-service';

const gateway = await startGateway({ dir: process.argv[2] ?? '.' });
console.log(`gateway on ${gateway.url} (dashboard: ${gateway.url}/#token=${gateway.token})`);

const stop = () => void gateway.close().then(() => console.log('stopped'));
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
