# syntax=docker/dockerfile:1
# The gateway as a container image (docs/operations.md): the assistant directory is the volume
# /assistant, the container runs as the unprivileged `node` user, and engine CLIs are added at
# build time:
#   docker build -t agent-service --build-arg ENGINES="@anthropic-ai/claude-code" .
#   docker run -d -p 127.0.0.1:3000:3000 -v assistant:/assistant -e SERVICE_TOKEN=... -e ANTHROPIC_API_KEY=... agent-service
# compose.yaml runs it with PostgreSQL as the store.

# The current Node LTS on Debian 12, slim: the same base for every stage, so the native addon
# (better-sqlite3) built in one runs in the last.
ARG NODE_IMAGE=node:26-bookworm-slim

# 1. Build: compile and bundle the CLI, pack it as npm would publish it.
FROM ${NODE_IMAGE} AS build
WORKDIR /build
COPY package.json package-lock.json ./
# No install scripts: only the compiler and the bundler are needed here (the engine CLIs among
# the devDependencies are for tests).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts ./scripts
COPY bin ./bin
COPY src ./src
COPY templates ./templates
RUN npm run build && npm pack --ignore-scripts --pack-destination /tmp && mv /tmp/agent-service-*.tgz /tmp/agent-service.tgz

# 2. Install: the packed package with its production dependencies, and the engines asked for,
# globally; a compiler is at hand for native addons without a prebuilt binary.
FROM ${NODE_IMAGE} AS install
RUN apt-get update && apt-get install -y --no-install-recommends python3 make g++ && rm -rf /var/lib/apt/lists/*
# Engine CLIs to install with it, as npm package specs separated by spaces, e.g.
# "@anthropic-ai/claude-code opencode-ai @openai/codex @google/gemini-cli @qwen-code/qwen-code".
ARG ENGINES=""
COPY --from=build /tmp/agent-service.tgz /tmp/
RUN npm install --global --no-audit --no-fund /tmp/agent-service.tgz ${ENGINES} && npm cache clean --force

# 3. Run: node, the installed packages, tini as PID 1 (it reaps the processes engines leave), git
# (coding agents use it); no compiler.
FROM ${NODE_IMAGE}
RUN apt-get update && apt-get install -y --no-install-recommends tini git ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=install /usr/local/lib/node_modules /usr/local/lib/node_modules
COPY --from=install /usr/local/bin /usr/local/bin
COPY docker/entrypoint.sh /usr/local/bin/service-entrypoint
COPY docker/healthcheck.mjs /usr/local/lib/service-healthcheck.mjs
ENV SERVICE_DIR=/assistant \
    SERVICE_PORT=3000 \
    NODE_ENV=production
RUN mkdir -p /assistant && chown node:node /assistant && chmod 0755 /usr/local/bin/service-entrypoint
USER node
WORKDIR /assistant
VOLUME ["/assistant"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 CMD ["node", "/usr/local/lib/service-healthcheck.mjs"]
ENTRYPOINT ["tini", "--", "service-entrypoint"]
CMD ["gateway"]
