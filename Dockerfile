# The service image: Node 20, dependencies installed (better-sqlite3 builds from source when
# no prebuilt binary can be fetched), run through tsx like `npm start`.
#   docker run collab-backend                          embedded store in /data
#   docker run -e EVENTSTORE_URL=... -e MONGODB_URL=... collab-backend serve --role api
FROM node:20-bookworm
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY . .
ENV NODE_ENV=production PORT=8080 HOST=0.0.0.0 DATA_DIR=/data
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --retries=5 CMD node -e "fetch('http://127.0.0.1:8080/healthz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
ENTRYPOINT ["node_modules/.bin/tsx", "src/cli.ts"]
CMD ["serve"]
