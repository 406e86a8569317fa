# syntax=docker/dockerfile:1
# Sightline: the server (`serve`, the default) or a worker (`worker`) from one image. See docs/containers.md.

# --- build: dependencies, the dashboard and the native probe engine --------------------------------------
FROM node:24-slim AS build
WORKDIR /app
# A C compiler for the port scan's native probe engine (one C file; without it scans use the JS engine).
RUN apt-get update \
 && apt-get install -y --no-install-recommends gcc libc6-dev \
 && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
# `prepare` builds the dashboard (src/web/dist) and the native engine; then only runtime dependencies stay.
# The image's Node 24 runs everything: the Node build npm pins for bare machines is not needed here.
RUN npm ci --no-audit --no-fund \
 && npm prune --omit=dev --no-audit --no-fund \
 && rm -rf node_modules/node-linux-* node_modules/.bin/node \
 && rm -rf src/web/app src/discovery/net/native/*.c

# --- runtime --------------------------------------------------------------------------------------------
FROM node:24-slim
# The release and commit (`docker build --build-arg VERSION=$(node -p 'require("./package.json").version')
# --build-arg COMMIT=$(git rev-parse HEAD) .`): the image has no .git, so `sightline --version`, /healthz
# and /metrics read the commit from SIGHTLINE_BUILD_COMMIT.
ARG VERSION=unknown
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="Sightline" \
      org.opencontainers.image.description="Self-hosted attack-surface management" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.licenses="MIT"
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=8080 \
    SIGHTLINE_DATA_DIR=/data \
    SIGHTLINE_BUILD_COMMIT=${COMMIT}
WORKDIR /app
COPY --from=build /app/package.json ./
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/bin ./bin
COPY --from=build /app/src ./src
COPY vulndb ./vulndb
COPY templates ./templates
COPY LICENSE ./
# Runs as the image's unprivileged `node` user (uid 1000); the data directory is its own.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8080)+'/healthz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
ENTRYPOINT ["node", "--max-semi-space-size=4", "bin/sightline.js"]
CMD ["serve"]
