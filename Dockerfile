# The service image. Two stages: `build` installs every dependency and compiles TypeScript to
# dist/ (npm run build); the runtime stage holds only the production dependencies, dist/,
# package.json (which says the JavaScript is ES modules), the console's built assets
# (console/dist/, committed) and the health check, owned by root and read-only to the `node`
# user that runs it. No tsx, TypeScript, source or test in it.
#   docker build -t collab-backend .
#   docker run -v collab-data:/data collab-backend                 embedded store in /data
#   docker run -e EVENTSTORE_URL=... -e MONGODB_URL=... collab-backend serve --role api
#   docker run --rm -v collab-data:/data collab-backend projections status
# Node 24 is the current LTS; better-sqlite3 13 ships a prebuilt Node-API binary for it
# (linux-x64 and linux-arm64, glibc), so nothing is compiled and no toolchain is needed.
# README, Node versions, says why not Node 20 and not better-sqlite3 12.
# `npm run test:production` rebuilds this runtime stage's file set from the COPY --from=build
# lines below and runs its ENTRYPOINT, CMD and HEALTHCHECK as an unprivileged user.
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
COPY commands ./commands
COPY queries ./queries
COPY projections ./projections
# The console's committed build (docs/console.md), served as it is at /console.
COPY console/dist ./console/dist
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM ${NODE_IMAGE}
ENV NODE_ENV=production PORT=8080 HOST=0.0.0.0 DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY --from=build /app/console/dist ./console/dist
COPY --from=build /app/scripts/healthcheck.mjs ./scripts/healthcheck.mjs
RUN mkdir -p /data && chown node:node /data
VOLUME /data
USER node
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=5 CMD ["node", "scripts/healthcheck.mjs"]
ENTRYPOINT ["node", "dist/src/cli.js"]
CMD ["serve"]
