# syntax=docker/dockerfile:1
# Multi-stage build of the supplyplan binary (deploy/README.md): a static binary (CGO off) on a
# small Alpine base (its busybox wget serves the compose healthchecks).
FROM golang:1.26-alpine AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/supplyplan ./cmd/supplyplan

FROM alpine:3.21
RUN adduser -D -H -u 10001 supplyplan && mkdir -p /data && chown supplyplan /data
COPY --from=build /out/supplyplan /usr/local/bin/supplyplan
USER 10001
ENV SUPPLYPLAN_DATA_DIR=/data
VOLUME ["/data"]
# REST API, console, tool service, MCP registry, loop catalog, loop runtime, operations.
EXPOSE 8080 3000 8081 3015 3011 3012 9090
ENTRYPOINT ["/usr/local/bin/supplyplan"]
CMD ["serve"]
