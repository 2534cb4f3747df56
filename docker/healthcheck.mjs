// The image's HEALTHCHECK: GET /health of the gateway in this container (no token needed). Exit 0
// when it answers 200 with `"status": "ok"`, else 1 with the reason on stderr.
const port = process.env.SERVICE_PORT || '3000';
try {
  const res = await fetch(`http://127.0.0.1:${port}/health`, { signal: AbortSignal.timeout(4_000) });
  const body = await res.json();
  if (res.status !== 200 || body.status !== 'ok') throw new Error(`GET /health answered ${res.status} ${JSON.stringify(body)}`);
  process.exit(0);
} catch (err) {
  process.stderr.write(`health check failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
